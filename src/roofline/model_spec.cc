#include "roofline/model_spec.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>

#include "core/strings.h"
#include "model/gguf.h"
#include "roofline/hardware.h"
#include "spec/yaml.h"

namespace hone::roofline {

std::string_view AttentionKindName(AttentionKind k) {
  switch (k) {
    case AttentionKind::kMha: return "mha";
    case AttentionKind::kGqa: return "gqa";
    case AttentionKind::kMla: return "mla";
  }
  return "?";
}

std::optional<double> DtypeBytes(std::string_view dtype) {
  // ggml block types: bytes per block / elements per block.
  static const std::map<std::string, double> kBytes = {
      {"fp32", 4},          {"tf32", 4},           {"bf16", 2},           {"fp16", 2},
      {"fp8", 1},           {"int8", 1},           {"fp6", 0.75},         {"fp4", 0.5},
      {"int4", 0.5},        {"q8_0", 34.0 / 32},   {"q4_0", 18.0 / 32},   {"q4_1", 20.0 / 32},
      {"q5_0", 22.0 / 32},  {"q5_1", 24.0 / 32},   {"q2_k", 84.0 / 256},  {"q3_k", 110.0 / 256},
      {"q4_k", 144.0 / 256}, {"q5_k", 176.0 / 256}, {"q6_k", 210.0 / 256}, {"q8_k", 292.0 / 256},
      {"q4_k_m", 144.0 / 256}, {"q5_k_m", 176.0 / 256}, {"iq4_nl", 18.0 / 32},
  };
  auto it = kBytes.find(NormalizeDtype(dtype));
  if (it == kBytes.end()) return std::nullopt;
  return it->second;
}

int64_t ModelSpec::NumMoeLayers() const {
  if (!is_moe()) return 0;
  int64_t step = std::max<int64_t>(1, moe_layer_step);
  int64_t n = 0;
  for (int64_t layer = first_dense_layers; layer < num_layers; ++layer) {
    if ((layer + 1) % step == 0) ++n;
  }
  return n;
}

double ModelSpec::EmbeddingParams() const { return static_cast<double>(vocab_size) * static_cast<double>(hidden_size); }
double ModelSpec::LmHeadParams() const { return tied_embeddings ? 0 : EmbeddingParams(); }

double ModelSpec::AttentionParamsPerLayer() const {
  double h = static_cast<double>(hidden_size);
  double heads = static_cast<double>(num_heads);
  if (attention == AttentionKind::kMla) {
    double qk = static_cast<double>(qk_nope_head_dim + qk_rope_head_dim);
    double q = q_lora_rank > 0 ? h * static_cast<double>(q_lora_rank) + static_cast<double>(q_lora_rank) * heads * qk
                               : h * heads * qk;
    double kv_a = h * static_cast<double>(kv_lora_rank + qk_rope_head_dim);
    double kv_b = static_cast<double>(kv_lora_rank) * heads * static_cast<double>(qk_nope_head_dim + v_head_dim);
    double o = heads * static_cast<double>(v_head_dim) * h;
    return q + kv_a + kv_b + o;
  }
  double hd = static_cast<double>(head_dim);
  return h * heads * hd + 2 * h * static_cast<double>(num_kv_heads) * hd + heads * hd * h;
}

double ModelSpec::DenseMlpParamsPerLayer() const {
  return (gated_mlp ? 3.0 : 2.0) * static_cast<double>(hidden_size) * static_cast<double>(intermediate_size);
}

double ModelSpec::MoeParamsPerLayer(bool active_only) const {
  double h = static_cast<double>(hidden_size);
  double mats = gated_mlp ? 3.0 : 2.0;
  double expert = mats * h * static_cast<double>(moe_intermediate_size);
  double routed = static_cast<double>(active_only ? experts_per_token : num_experts) * expert;
  double shared = mats * h * static_cast<double>(shared_intermediate_size);
  double router = h * static_cast<double>(num_experts);
  return routed + shared + router;
}

double ModelSpec::ParamCount() const {
  double layers = static_cast<double>(num_layers);
  double moe_layers = static_cast<double>(NumMoeLayers());
  double body = layers * AttentionParamsPerLayer() + (layers - moe_layers) * DenseMlpParamsPerLayer() +
                moe_layers * MoeParamsPerLayer(false);
  return body + EmbeddingParams() + LmHeadParams();
}

double ModelSpec::ActiveParamCount() const {
  double layers = static_cast<double>(num_layers);
  double moe_layers = static_cast<double>(NumMoeLayers());
  double body = layers * AttentionParamsPerLayer() + (layers - moe_layers) * DenseMlpParamsPerLayer() +
                moe_layers * MoeParamsPerLayer(true);
  return body + EmbeddingParams() + LmHeadParams();
}

double ModelSpec::WeightBytes() const {
  double embed = EmbeddingParams() + LmHeadParams();
  return (ParamCount() - embed) * weight_bytes_per_param + embed * embedding_bytes_per_param;
}

double ModelSpec::WeightBytesPerStep(double batch) const {
  double layers = static_cast<double>(num_layers);
  double moe_layers = static_cast<double>(NumMoeLayers());
  double params = layers * AttentionParamsPerLayer() + (layers - moe_layers) * DenseMlpParamsPerLayer();
  if (is_moe()) {
    // Expected distinct experts hit by `batch` tokens routing to k of E uniformly.
    double e = static_cast<double>(num_experts);
    double k = static_cast<double>(experts_per_token);
    double touched = e * (1.0 - std::pow(1.0 - k / e, std::max(1.0, batch)));
    double mats = gated_mlp ? 3.0 : 2.0;
    double expert = mats * static_cast<double>(hidden_size) * static_cast<double>(moe_intermediate_size);
    double shared = mats * static_cast<double>(hidden_size) * static_cast<double>(shared_intermediate_size);
    double router = static_cast<double>(hidden_size) * e;
    params += moe_layers * (touched * expert + shared + router);
  }
  // The embedding table is gathered (batch rows), the LM head is read whole.
  return params * weight_bytes_per_param + LmHeadParams() * embedding_bytes_per_param +
         (tied_embeddings ? EmbeddingParams() * embedding_bytes_per_param : 0);
}

double ModelSpec::KvBytesPerToken() const {
  double per_layer = attention == AttentionKind::kMla
                         ? static_cast<double>(kv_lora_rank + qk_rope_head_dim)
                         : 2.0 * static_cast<double>(num_kv_heads) * static_cast<double>(head_dim);
  return per_layer * kv_bytes_per_element * static_cast<double>(num_layers);
}

double ModelSpec::LinearFlopsPerToken() const {
  // Tied models multiply by the embedding table as their LM head.
  double head = tied_embeddings ? EmbeddingParams() : 0;
  return 2.0 * (ActiveParamCount() - EmbeddingParams() + head);
}

double ModelSpec::AttentionFlopsPerContextToken() const {
  // QK^T and PV: 2 FLOPs per multiply-add, per head. MLA counted un-absorbed (the
  // cheaper form in FLOPs).
  double qk = attention == AttentionKind::kMla ? static_cast<double>(qk_nope_head_dim + qk_rope_head_dim)
                                               : static_cast<double>(head_dim);
  double v = attention == AttentionKind::kMla ? static_cast<double>(v_head_dim) : static_cast<double>(head_dim);
  return 2.0 * static_cast<double>(num_heads) * (qk + v) * static_cast<double>(num_layers);
}

double ModelSpec::FlopsPerToken(double context) const {
  return LinearFlopsPerToken() + AttentionFlopsPerContextToken() * context;
}

namespace {

// The first key present among `keys`, as an integer (nullopt when none is).
Result<std::optional<int64_t>> FirstInt(const spec::Field& f, std::initializer_list<const char*> keys) {
  for (const char* k : keys) {
    spec::Field v = f[k];
    if (v.defined()) {
      HONE_ASSIGN_OR_RETURN(int64_t x, v.Int(0, int64_t{1} << 40));
      return std::optional<int64_t>(x);
    }
  }
  return std::optional<int64_t>();
}

Status SetWeightPrecision(const spec::Field& root, ModelSpec& m) {
  std::string torch_dtype;
  for (const char* k : {"torch_dtype", "dtype"}) {
    if (root[k].defined() && root[k].is_scalar()) {
      HONE_ASSIGN_OR_RETURN(torch_dtype, root[k].Str());
      break;
    }
  }
  std::string base = NormalizeDtype(torch_dtype.empty() ? "bf16" : torch_dtype);
  if (base == "fp32") base = "bf16";  // fp32 checkpoints are served in 16 bits by default
  m.weight_dtype = base;
  m.weight_bytes_per_param = DtypeBytes(base).value_or(2);
  m.embedding_bytes_per_param = m.weight_bytes_per_param;
  m.kv_dtype = base;
  m.kv_bytes_per_element = m.weight_bytes_per_param;

  spec::Field q = root["quantization_config"];
  if (!q.defined()) return Ok();
  HONE_ASSIGN_OR_RETURN(std::string method, q["quant_method"].StrOr(""));
  method = ToLower(method);
  HONE_ASSIGN_OR_RETURN(int64_t bits, q["bits"].IntOr(0, 0, 64));
  HONE_ASSIGN_OR_RETURN(int64_t group, q["group_size"].IntOr(128, -1, 1 << 20));
  double group_overhead = group > 0 ? 4.0 / static_cast<double>(group) : 0;  // fp16 scale + zero per group
  if (method == "fp8" || method == "fbgemm_fp8" || method == "modelopt" || method == "ptpc_fp8") {
    m.weight_dtype = "fp8";
    m.weight_bytes_per_param = 1;
  } else if (method == "mxfp4" || method == "nvfp4" || method == "modelopt_fp4") {
    m.weight_dtype = "fp4";
    m.weight_bytes_per_param = 0.5 + 1.0 / 32;  // e8m0 scale per 32 (nvfp4: e4m3 per 16 ~ the same)
  } else if (method == "awq" || method == "gptq" || method == "awq_marlin" || method == "gptq_marlin") {
    // Weight-only: the matmuls run at the activation dtype.
    double b = bits > 0 ? static_cast<double>(bits) : 4;
    m.weight_bytes_per_param = b / 8 + group_overhead;
  } else if (method == "compressed-tensors") {
    HONE_ASSIGN_OR_RETURN(std::string format, q["format"].StrOr(""));
    if (Contains(format, "float-quantized")) {
      m.weight_dtype = "fp8";
      m.weight_bytes_per_param = 1;
    } else if (Contains(format, "int-quantized")) {
      m.weight_dtype = "int8";
      m.weight_bytes_per_param = 1;
    } else if (Contains(format, "nvfp4")) {
      m.weight_dtype = "fp4";
      m.weight_bytes_per_param = 0.5 + 1.0 / 16;
    } else if (Contains(format, "pack-quantized")) {
      m.weight_bytes_per_param = 0.5 + group_overhead;
    }
  } else if (method == "bitsandbytes") {
    m.weight_bytes_per_param = bits == 8 ? 1.0 : 0.5 + group_overhead;
  } else if (!method.empty()) {
    return Fail(q["quant_method"].Err("unknown quantization method '" + method + "'"));
  }
  return Ok();
}

bool NonGatedModelType(const std::string& model_type) {
  static const char* kTypes[] = {"gpt2", "gpt_neox", "opt", "falcon", "phi", "bloom", "gpt_bigcode", "starcoder2",
                                 "gptj", "mpt"};
  for (const char* t : kTypes) {
    if (model_type == t) return true;
  }
  return false;
}

spec::Field TextConfig(const spec::Field& root) {
  for (const char* nested : {"text_config", "language_config", "llm_config"}) {
    if (root[nested].defined() && root[nested].is_map()) return root[nested];
  }
  return root;
}

Result<ModelSpec> FromHfRoot(const spec::Field& root) {
  HONE_TRY(root.RequireMap());
  // Multimodal configs nest the language model. (Never assign one Field to another:
  // yaml-cpp's Node::operator= writes through to the document.)
  const spec::Field c = TextConfig(root);
  ModelSpec m;
  auto archs = root["architectures"].StrList();
  if (archs && !archs->empty()) m.architecture = (*archs)[0];
  HONE_ASSIGN_OR_RETURN(std::string model_type, c["model_type"].StrOr(""));
  if (model_type.empty()) {
    HONE_ASSIGN_OR_RETURN(model_type, root["model_type"].StrOr(""));
  }
  if (m.architecture.empty()) m.architecture = model_type;
  m.name = m.architecture;

  HONE_ASSIGN_OR_RETURN(auto hidden, FirstInt(c, {"hidden_size", "n_embd", "d_model"}));
  HONE_ASSIGN_OR_RETURN(auto layers, FirstInt(c, {"num_hidden_layers", "n_layer", "num_layers"}));
  HONE_ASSIGN_OR_RETURN(auto heads, FirstInt(c, {"num_attention_heads", "n_head"}));
  if (!hidden || *hidden <= 0) return Fail(c["hidden_size"].Err("hidden_size is required"));
  if (!layers || *layers <= 0) return Fail(c["num_hidden_layers"].Err("num_hidden_layers is required"));
  if (!heads || *heads <= 0) return Fail(c["num_attention_heads"].Err("num_attention_heads is required"));
  m.hidden_size = *hidden;
  m.num_layers = *layers;
  m.num_heads = *heads;
  HONE_ASSIGN_OR_RETURN(auto kv_heads, FirstInt(c, {"num_key_value_heads", "num_kv_heads", "n_head_kv"}));
  HONE_ASSIGN_OR_RETURN(bool multi_query, c["multi_query"].BoolOr(false));
  m.num_kv_heads = kv_heads.value_or(multi_query ? 1 : m.num_heads);
  if (m.num_kv_heads <= 0 || m.num_heads % m.num_kv_heads != 0) {
    return Fail(c["num_key_value_heads"].Err("num_key_value_heads must divide num_attention_heads"));
  }
  HONE_ASSIGN_OR_RETURN(auto head_dim, FirstInt(c, {"head_dim"}));
  m.head_dim = head_dim.value_or(m.hidden_size / m.num_heads);
  HONE_ASSIGN_OR_RETURN(auto vocab, FirstInt(c, {"vocab_size", "padded_vocab_size"}));
  if (!vocab) {
    HONE_ASSIGN_OR_RETURN(vocab, FirstInt(root, {"vocab_size"}));
  }
  if (!vocab || *vocab <= 0) return Fail(c["vocab_size"].Err("vocab_size is required"));
  m.vocab_size = *vocab;
  HONE_ASSIGN_OR_RETURN(bool tied_c, c["tie_word_embeddings"].BoolOr(false));
  HONE_ASSIGN_OR_RETURN(bool tied_root, root["tie_word_embeddings"].BoolOr(tied_c));
  m.tied_embeddings = c["tie_word_embeddings"].defined() ? tied_c : tied_root;
  HONE_ASSIGN_OR_RETURN(auto ctx, FirstInt(c, {"max_position_embeddings", "n_positions", "seq_length"}));
  m.max_context = ctx.value_or(0);
  m.gated_mlp = !NonGatedModelType(model_type);
  HONE_ASSIGN_OR_RETURN(auto inter, FirstInt(c, {"intermediate_size", "ffn_hidden_size", "n_inner"}));
  m.intermediate_size = inter.value_or(4 * m.hidden_size);

  // Mixture of experts.
  HONE_ASSIGN_OR_RETURN(auto experts, FirstInt(c, {"num_local_experts", "n_routed_experts", "num_experts",
                                                   "moe_num_experts"}));
  HONE_ASSIGN_OR_RETURN(auto topk, FirstInt(c, {"num_experts_per_tok", "experts_per_token", "moe_topk",
                                                "num_experts_per_token"}));
  if (experts && *experts > 1) {
    if (!topk || *topk <= 0 || *topk > *experts) {
      return Fail(c["num_experts_per_tok"].Err("a mixture-of-experts config needs num_experts_per_tok in [1, experts]"));
    }
    m.num_experts = *experts;
    m.experts_per_token = *topk;
    HONE_ASSIGN_OR_RETURN(auto moe_inter, FirstInt(c, {"moe_intermediate_size", "expert_intermediate_size"}));
    m.moe_intermediate_size = moe_inter.value_or(m.intermediate_size);
    HONE_ASSIGN_OR_RETURN(auto shared_n, FirstInt(c, {"n_shared_experts", "num_shared_experts"}));
    HONE_ASSIGN_OR_RETURN(auto shared_inter, FirstInt(c, {"shared_expert_intermediate_size"}));
    m.num_shared_experts = shared_n.value_or(shared_inter ? 1 : 0);
    m.shared_intermediate_size = shared_inter.value_or(m.num_shared_experts * m.moe_intermediate_size);
    HONE_ASSIGN_OR_RETURN(auto first_dense, FirstInt(c, {"first_k_dense_replace"}));
    m.first_dense_layers = std::min(first_dense.value_or(0), m.num_layers);
    HONE_ASSIGN_OR_RETURN(auto step, FirstInt(c, {"decoder_sparse_step", "moe_layer_freq"}));
    m.moe_layer_step = std::max<int64_t>(1, step.value_or(1));
  }

  // Multi-head latent attention.
  HONE_ASSIGN_OR_RETURN(auto kv_lora, FirstInt(c, {"kv_lora_rank"}));
  if (kv_lora && *kv_lora > 0) {
    m.attention = AttentionKind::kMla;
    m.kv_lora_rank = *kv_lora;
    HONE_ASSIGN_OR_RETURN(auto q_lora, FirstInt(c, {"q_lora_rank"}));
    m.q_lora_rank = q_lora.value_or(0);
    HONE_ASSIGN_OR_RETURN(auto nope, FirstInt(c, {"qk_nope_head_dim"}));
    HONE_ASSIGN_OR_RETURN(auto rope, FirstInt(c, {"qk_rope_head_dim"}));
    HONE_ASSIGN_OR_RETURN(auto v, FirstInt(c, {"v_head_dim"}));
    if (!nope || !rope || !v) {
      return Fail(c["kv_lora_rank"].Err("an MLA config needs qk_nope_head_dim, qk_rope_head_dim and v_head_dim"));
    }
    m.qk_nope_head_dim = *nope;
    m.qk_rope_head_dim = *rope;
    m.v_head_dim = *v;
  } else {
    m.attention = m.num_kv_heads == m.num_heads ? AttentionKind::kMha : AttentionKind::kGqa;
  }
  HONE_TRY(SetWeightPrecision(root, m));
  return m;
}

// ggml tensor type -> (arithmetic dtype of the matmul, dtype name for bytes).
std::string GgmlComputeDtype(uint32_t type) {
  switch (static_cast<model::GgmlType>(type)) {
    case model::GgmlType::kF32: return "fp32";
    case model::GgmlType::kF16: return "fp16";
    case model::GgmlType::kBF16: return "bf16";
    default: return "int8";  // quantized blocks: dot products against q8 activations
  }
}

}  // namespace

Result<ModelSpec> ModelSpecFromHfConfig(const std::string& path) {
  HONE_ASSIGN_OR_RETURN(spec::Field root, spec::Field::LoadFile(path));
  return FromHfRoot(root);
}

Result<ModelSpec> ModelSpecFromHfConfigText(const std::string& text, const std::string& source_name) {
  HONE_ASSIGN_OR_RETURN(spec::Field root, spec::Field::Parse(text, source_name));
  return FromHfRoot(root);
}

Result<ModelSpec> ModelSpecFromGguf(const std::string& path) {
  HONE_ASSIGN_OR_RETURN(model::GgufFile f, model::ReadGguf(path));
  ModelSpec m;
  auto arch = f.Str("general.architecture");
  if (!arch) return DataLoss(path + ": no general.architecture in the GGUF metadata");
  m.architecture = *arch;
  m.name = f.Str("general.name").value_or(*arch);
  auto key = [&](const std::string& k) { return *arch + "." + k; };
  // Per-layer arrays (e.g. head_count_kv on hybrid models) count by their largest value.
  auto get = [&](const std::string& k) -> std::optional<int64_t> {
    const model::GgufValue* v = f.Find(key(k));
    if (!v) return std::nullopt;
    if (v->type == model::GgufType::kArray) {
      std::optional<int64_t> best;
      for (const auto& e : v->arr) {
        if (auto x = e.AsInt()) best = std::max(best.value_or(0), *x);
      }
      return best;
    }
    return v->AsInt();
  };
  auto need = [&](const std::string& k) -> Result<int64_t> {
    auto v = get(k);
    if (!v || *v <= 0) return DataLoss(path + ": GGUF metadata lacks " + key(k));
    return *v;
  };
  HONE_ASSIGN_OR_RETURN(m.num_layers, need("block_count"));
  HONE_ASSIGN_OR_RETURN(m.hidden_size, need("embedding_length"));
  HONE_ASSIGN_OR_RETURN(m.num_heads, need("attention.head_count"));
  m.num_kv_heads = get("attention.head_count_kv").value_or(m.num_heads);
  m.head_dim = get("attention.key_length").value_or(m.hidden_size / m.num_heads);
  m.intermediate_size = get("feed_forward_length").value_or(4 * m.hidden_size);
  m.max_context = get("context_length").value_or(0);
  for (const char* a : {"gpt2", "gptneox", "falcon", "phi2", "bloom", "starcoder", "mpt", "gptj"}) {
    if (*arch == a) m.gated_mlp = false;
  }
  if (auto experts = get("expert_count"); experts && *experts > 1) {
    m.num_experts = *experts;
    m.experts_per_token = get("expert_used_count").value_or(1);
    m.moe_intermediate_size = get("expert_feed_forward_length").value_or(m.intermediate_size);
    m.num_shared_experts = get("expert_shared_count").value_or(0);
    m.shared_intermediate_size = m.num_shared_experts * m.moe_intermediate_size;
    m.first_dense_layers = get("leading_dense_block_count").value_or(0);
  }
  if (auto kv_lora = get("attention.kv_lora_rank"); kv_lora && *kv_lora > 0) {
    m.attention = AttentionKind::kMla;
    m.kv_lora_rank = *kv_lora;
    m.q_lora_rank = get("attention.q_lora_rank").value_or(0);
    m.qk_rope_head_dim = get("rope.dimension_count").value_or(64);
    m.qk_nope_head_dim = get("attention.key_length").value_or(m.qk_rope_head_dim * 3) - m.qk_rope_head_dim;
    m.v_head_dim = get("attention.value_length").value_or(m.qk_nope_head_dim);
  } else {
    m.attention = m.num_kv_heads == m.num_heads ? AttentionKind::kMha : AttentionKind::kGqa;
  }

  // Weights: the real tensor bytes, split into embedding/head and the body.
  double embed_bytes = 0, embed_elems = 0, body_bytes = 0, body_elems = 0;
  bool has_output = false;
  std::map<std::string, double> body_bytes_by_dtype;
  for (const auto& t : f.tensors) {
    double elems = static_cast<double>(t.elements());
    double bytes = static_cast<double>(t.bytes);
    if (t.name == "token_embd.weight") {
      embed_bytes += bytes;
      embed_elems += elems;
      if (!t.dims.empty() && t.dims.size() >= 2) m.vocab_size = static_cast<int64_t>(t.dims[1]);
    } else if (t.name == "output.weight") {
      has_output = true;
      embed_bytes += bytes;
      embed_elems += elems;
    } else if (t.dims.size() >= 2) {  // matmul weights; 1-D norms and biases are noise
      body_bytes += bytes;
      body_elems += elems;
      body_bytes_by_dtype[GgmlComputeDtype(t.type)] += bytes;
    }
  }
  if (m.vocab_size <= 0) {
    if (const model::GgufValue* tokens = f.Find("tokenizer.ggml.tokens")) {
      m.vocab_size = static_cast<int64_t>(tokens->arr.size());
    }
  }
  if (m.vocab_size <= 0 || body_elems == 0) return DataLoss(path + ": GGUF has no token_embd or matmul tensors");
  m.tied_embeddings = !has_output;
  m.weight_bytes_per_param = body_bytes / body_elems;
  m.embedding_bytes_per_param = embed_elems > 0 ? embed_bytes / embed_elems : m.weight_bytes_per_param;
  // The dtype carrying most of the body's bytes decides the matmul rate.
  auto dominant = std::max_element(body_bytes_by_dtype.begin(), body_bytes_by_dtype.end(),
                                   [](const auto& a, const auto& b) { return a.second < b.second; });
  m.weight_dtype = dominant->first;
  m.kv_dtype = "fp16";  // llama.cpp's default KV cache type
  m.kv_bytes_per_element = 2;
  return m;
}

Result<ModelSpec> LoadModelSpec(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) return ModelSpecFromHfConfig(path + "/config.json");
  if (path.ends_with(".gguf")) return ModelSpecFromGguf(path);
  return ModelSpecFromHfConfig(path);
}

}  // namespace hone::roofline
