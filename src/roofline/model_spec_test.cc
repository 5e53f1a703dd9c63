#include "roofline/model_spec.h"

#include <gtest/gtest.h>

#include <vector>

#include "model/gguf.h"
#include "sys/files.h"
#include "testing/test_util.h"

namespace hone::roofline {
namespace {

// The published config.json files (fields the roofline reads, values verbatim).
constexpr char kLlama31_8B[] = R"({
  "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096,
  "intermediate_size": 14336, "max_position_embeddings": 131072, "num_attention_heads": 32,
  "num_hidden_layers": 32, "num_key_value_heads": 8, "rope_theta": 500000.0,
  "rope_scaling": {"factor": 8.0, "rope_type": "llama3"}, "tie_word_embeddings": false,
  "torch_dtype": "bfloat16", "vocab_size": 128256})";

constexpr char kDeepSeekV3[] = R"({
  "architectures": ["DeepseekV3ForCausalLM"], "model_type": "deepseek_v3", "hidden_size": 7168,
  "intermediate_size": 18432, "moe_intermediate_size": 2048, "n_routed_experts": 256,
  "n_shared_experts": 1, "num_experts_per_tok": 8, "first_k_dense_replace": 3, "moe_layer_freq": 1,
  "num_hidden_layers": 61, "num_attention_heads": 128, "num_key_value_heads": 128,
  "kv_lora_rank": 512, "q_lora_rank": 1536, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64,
  "v_head_dim": 128, "vocab_size": 129280, "tie_word_embeddings": false, "torch_dtype": "bfloat16",
  "quantization_config": {"activation_scheme": "dynamic", "fmt": "e4m3", "quant_method": "fp8",
                          "weight_block_size": [128, 128]}})";

constexpr char kMixtral8x7B[] = R"({
  "architectures": ["MixtralForCausalLM"], "model_type": "mixtral", "hidden_size": 4096,
  "intermediate_size": 14336, "num_attention_heads": 32, "num_hidden_layers": 32,
  "num_key_value_heads": 8, "num_local_experts": 8, "num_experts_per_tok": 2, "vocab_size": 32000,
  "tie_word_embeddings": false, "torch_dtype": "bfloat16"})";

constexpr char kQwen3_30B_A3B[] = R"({
  "architectures": ["Qwen3MoeForCausalLM"], "model_type": "qwen3_moe", "hidden_size": 2048,
  "intermediate_size": 6144, "moe_intermediate_size": 768, "num_experts": 128,
  "num_experts_per_tok": 8, "decoder_sparse_step": 1, "num_hidden_layers": 48,
  "num_attention_heads": 32, "num_key_value_heads": 4, "head_dim": 128, "vocab_size": 151936,
  "tie_word_embeddings": false, "torch_dtype": "bfloat16", "mlp_only_layers": []})";

ModelSpec Parse(const char* text) {
  auto m = ModelSpecFromHfConfigText(text, "config.json");
  EXPECT_TRUE(m) << m.error().ToString();
  return m ? *m : ModelSpec{};
}

TEST(ModelSpecTest, Llama31_8BMatchesItsPublishedSize) {
  ModelSpec m = Parse(kLlama31_8B);
  EXPECT_EQ(m.architecture, "LlamaForCausalLM");
  EXPECT_EQ(m.attention, AttentionKind::kGqa);
  EXPECT_EQ(m.head_dim, 128);
  EXPECT_FALSE(m.is_moe());
  // 8.03B: embedding + LM head 2 x 525.3M, 32 x (41.9M attention + 176.2M MLP).
  EXPECT_DOUBLE_EQ(m.ParamCount(), 8'029'995'008.0);
  EXPECT_DOUBLE_EQ(m.ActiveParamCount(), m.ParamCount());
  EXPECT_DOUBLE_EQ(m.WeightBytes(), 2 * 8'029'995'008.0);
  EXPECT_DOUBLE_EQ(m.KvBytesPerToken(), 131072.0);  // 2 x 8 heads x 128 x 2 B x 32 layers
  // One token: 2 FLOPs per non-embedding weight (LM head included) ...
  EXPECT_DOUBLE_EQ(m.LinearFlopsPerToken(), 2 * (8'029'995'008.0 - 525'336'576.0));
  // ... plus QK^T and PV: 2 x 32 heads x 256 x 32 layers per context token.
  EXPECT_DOUBLE_EQ(m.AttentionFlopsPerContextToken(), 524288.0);
  // A decode step reads every weight but the embedding table (gathered, not read).
  EXPECT_DOUBLE_EQ(m.WeightBytesPerStep(1), 2 * (8'029'995'008.0 - 525'336'576.0));
  EXPECT_EQ(m.max_context, 131072);
}

TEST(ModelSpecTest, DeepSeekV3IsMlaMoeWithFp8Weights) {
  ModelSpec m = Parse(kDeepSeekV3);
  EXPECT_EQ(m.attention, AttentionKind::kMla);
  EXPECT_TRUE(m.is_moe());
  EXPECT_EQ(m.NumMoeLayers(), 58);
  // Published: 671B total, 37B activated (the 14B multi-token-prediction module aside).
  EXPECT_NEAR(m.ParamCount() / 1e9, 671, 671 * 0.01);
  EXPECT_NEAR(m.ActiveParamCount() / 1e9, 37.5, 37.5 * 0.03);
  EXPECT_EQ(m.weight_dtype, "fp8");
  EXPECT_DOUBLE_EQ(m.weight_bytes_per_param, 1);
  EXPECT_DOUBLE_EQ(m.embedding_bytes_per_param, 2);  // embeddings stay bf16
  // The compressed latent: (512 + 64) x 61 layers x 2 B.
  EXPECT_DOUBLE_EQ(m.KvBytesPerToken(), 70272.0);
  // One token touches 8 of 256 experts; a large batch touches (almost) all of them.
  EXPECT_LT(m.WeightBytesPerStep(1), m.WeightBytes() * 0.1);
  EXPECT_GT(m.WeightBytesPerStep(4096), m.WeightBytes() * 0.99);
}

TEST(ModelSpecTest, MixtralAndQwen3MoeActiveParameters) {
  ModelSpec mixtral = Parse(kMixtral8x7B);
  EXPECT_DOUBLE_EQ(mixtral.ParamCount(), 46'702'526'464.0);        // "46.7B"
  EXPECT_DOUBLE_EQ(mixtral.ActiveParamCount(), 12'879'659'008.0);  // "12.9B active"
  ModelSpec qwen = Parse(kQwen3_30B_A3B);
  EXPECT_NEAR(qwen.ParamCount() / 1e9, 30.5, 0.2);
  EXPECT_NEAR(qwen.ActiveParamCount() / 1e9, 3.3, 0.1);
  EXPECT_DOUBLE_EQ(qwen.KvBytesPerToken(), 2.0 * 4 * 128 * 2 * 48);
}

TEST(ModelSpecTest, QuantizationConfigsSetWeightBytes) {
  ModelSpec awq = Parse(R"({"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
    "vocab_size": 100, "torch_dtype": "float16",
    "quantization_config": {"quant_method": "awq", "bits": 4, "group_size": 128}})");
  EXPECT_EQ(awq.weight_dtype, "fp16");  // weight-only: matmuls at fp16
  EXPECT_DOUBLE_EQ(awq.weight_bytes_per_param, 0.5 + 4.0 / 128);
  ModelSpec ct = Parse(R"({"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
    "vocab_size": 100, "quantization_config": {"quant_method": "compressed-tensors",
    "format": "float-quantized"}})");
  EXPECT_EQ(ct.weight_dtype, "fp8");
  ModelSpec mx = Parse(R"({"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
    "vocab_size": 100, "quantization_config": {"quant_method": "mxfp4"}})");
  EXPECT_EQ(mx.weight_dtype, "fp4");
  EXPECT_DOUBLE_EQ(mx.weight_bytes_per_param, 0.5 + 1.0 / 32);
}

TEST(ModelSpecTest, MultimodalConfigsReadTheirTextConfig) {
  ModelSpec m = Parse(R"({"architectures": ["Gemma3ForConditionalGeneration"],
    "text_config": {"model_type": "gemma3_text", "hidden_size": 2560, "num_hidden_layers": 34,
      "num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 256, "intermediate_size": 10240,
      "vocab_size": 262208}, "vision_config": {"hidden_size": 1152}, "torch_dtype": "bfloat16",
    "tie_word_embeddings": true})");
  EXPECT_EQ(m.architecture, "Gemma3ForConditionalGeneration");
  EXPECT_EQ(m.hidden_size, 2560);
  EXPECT_EQ(m.head_dim, 256);
  EXPECT_TRUE(m.tied_embeddings);
  EXPECT_DOUBLE_EQ(m.LmHeadParams(), 0);
}

TEST(ModelSpecTest, BadConfigsNameTheCause) {
  struct Case {
    const char* json;
    const char* expect;
  } cases[] = {
      {R"({"num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 10})", "hidden_size is required"},
      {R"({"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 32, "num_key_value_heads": 5,
           "vocab_size": 10})",
       "num_key_value_heads must divide"},
      {R"({"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 10,
           "num_local_experts": 8})",
       "num_experts_per_tok"},
      {R"({"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 10,
           "quantization_config": {"quant_method": "magic"}})",
       "unknown quantization method 'magic'"},
      {R"({"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 10,
           "kv_lora_rank": 16})",
       "an MLA config needs"},
      {R"({"hidden_size": "wide"})", "expected an integer"},
      {R"({"hidden_size": 64,)", "syntax error"},
  };
  for (const auto& c : cases) {
    auto r = ModelSpecFromHfConfigText(c.json, "config.json");
    ASSERT_FALSE(r) << c.json;
    EXPECT_EQ(r.error().code, ErrorCode::kInvalidArgument);
    EXPECT_NE(r.error().message.find(c.expect), std::string::npos) << r.error().message;
    EXPECT_TRUE(r.error().message.starts_with("config.json:")) << r.error().message;
  }
  EXPECT_EQ(ModelSpecFromHfConfig("/nonexistent/config.json").error().code, ErrorCode::kNotFound);
}

class GgufSpecTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto d = sys::TempDir::Create("hone-roofline");
    ASSERT_TRUE(d);
    dir_ = std::move(*d);
  }
  static void Zeros(model::GgufWriter& w, const std::string& name, std::vector<uint64_t> dims, model::GgmlType type) {
    uint64_t n = 1;
    for (uint64_t d : dims) n *= d;
    uint64_t bytes = *model::GgmlTypeBytes(static_cast<uint32_t>(type), n);
    w.AddTensor(name, std::move(dims), type, [bytes](const model::GgufWriter::Sink& sink) {
      std::vector<char> zero(bytes, 0);
      sink(zero.data(), zero.size());
    });
  }
  std::unique_ptr<sys::TempDir> dir_;
};

TEST_F(GgufSpecTest, ReadsShapeAndRealTensorBytes) {
  model::GgufWriter w;
  w.AddKv("general.architecture", model::GgufValue::Str("llama"));
  w.AddKv("general.name", model::GgufValue::Str("tiny"));
  w.AddKv("llama.block_count", model::GgufValue::U32(2));
  w.AddKv("llama.embedding_length", model::GgufValue::U32(64));
  w.AddKv("llama.attention.head_count", model::GgufValue::U32(4));
  w.AddKv("llama.attention.head_count_kv", model::GgufValue::U32(2));
  w.AddKv("llama.feed_forward_length", model::GgufValue::U32(128));
  w.AddKv("llama.context_length", model::GgufValue::U32(256));
  using T = model::GgmlType;
  Zeros(w, "token_embd.weight", {64, 100}, T::kF16);
  for (int l = 0; l < 2; ++l) {
    std::string p = "blk." + std::to_string(l) + ".";
    Zeros(w, p + "attn_norm.weight", {64}, T::kF32);
    Zeros(w, p + "attn_q.weight", {64, 64}, T::kF16);
    Zeros(w, p + "attn_k.weight", {64, 32}, T::kF16);
    Zeros(w, p + "attn_v.weight", {64, 32}, T::kF16);
    Zeros(w, p + "attn_output.weight", {64, 64}, T::kF16);
    Zeros(w, p + "ffn_norm.weight", {64}, T::kF32);
    Zeros(w, p + "ffn_gate.weight", {64, 128}, T::kF16);
    Zeros(w, p + "ffn_up.weight", {64, 128}, T::kF16);
    Zeros(w, p + "ffn_down.weight", {128, 64}, T::kF16);
  }
  Zeros(w, "output.weight", {64, 100}, T::kQ8_0);
  std::string path = (dir_->path() / "tiny.gguf").string();
  ASSERT_OK(w.Write(path));

  ASSERT_OK_AND_ASSIGN(ModelSpec m, LoadModelSpec(path));
  EXPECT_EQ(m.name, "tiny");
  EXPECT_EQ(m.architecture, "llama");
  EXPECT_EQ(m.num_layers, 2);
  EXPECT_EQ(m.num_kv_heads, 2);
  EXPECT_EQ(m.head_dim, 16);
  EXPECT_EQ(m.vocab_size, 100);
  EXPECT_FALSE(m.tied_embeddings);
  EXPECT_EQ(m.weight_dtype, "fp16");
  EXPECT_DOUBLE_EQ(m.weight_bytes_per_param, 2);
  // token_embd f16 (12800 B) + output q8_0 (200 blocks x 34 B) over 12800 weights.
  EXPECT_DOUBLE_EQ(m.embedding_bytes_per_param, (12800.0 + 6800.0) / 12800.0);
  EXPECT_DOUBLE_EQ(m.ParamCount(), 12800 + 2 * (12288 + 24576));
  EXPECT_DOUBLE_EQ(m.KvBytesPerToken(), 2.0 * 2 * 16 * 2 * 2);  // f16 KV by default
}

TEST_F(GgufSpecTest, CorruptOrIncompleteFilesAreDataLoss) {
  model::GgufWriter w;
  w.AddKv("general.architecture", model::GgufValue::Str("llama"));
  std::string path = (dir_->path() / "bare.gguf").string();
  ASSERT_OK(w.Write(path));
  auto r = ModelSpecFromGguf(path);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::kDataLoss);
  EXPECT_NE(r.error().message.find("llama.block_count"), std::string::npos);
}

TEST(DtypeBytesTest, PlainAndBlockTypes) {
  EXPECT_EQ(*DtypeBytes("bfloat16"), 2);
  EXPECT_EQ(*DtypeBytes("fp8"), 1);
  EXPECT_EQ(*DtypeBytes("q8_0"), 34.0 / 32);
  EXPECT_EQ(*DtypeBytes("q4_0"), 18.0 / 32);
  EXPECT_FALSE(DtypeBytes("q3_xyz"));
}

}  // namespace
}  // namespace hone::roofline
