#include "model/synth.h"

#include <sys/stat.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <functional>
#include <thread>
#include <vector>

#include "core/rng.h"
#include "core/strings.h"
#include "spec/yaml.h"

namespace hone::model {
namespace {

constexpr const char* kChatTemplate =
    "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + "
    "'<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

uint64_t NameSeed(uint64_t seed, const std::string& name) {
  uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : name) h = (h ^ c) * 1099511628211ULL;
  return MixSeed(seed, h);
}

// The bytes a GPT-2 byte-level BPE token stands for: its text maps each byte to a
// printable code point (bytes 33-126, 161-172 and 174-255 to themselves, the rest to
// 256 + n in byte order).
std::string Gpt2Bytes(const std::string& text) {
  static const auto kDecode = [] {
    std::array<int, 512> table;
    table.fill(-1);
    int n = 0;
    for (int b = 0; b < 256; ++b) {
      bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
      table[static_cast<size_t>(printable ? b : 256 + n++)] = b;
    }
    return table;
  }();
  std::string out;
  for (size_t i = 0; i < text.size();) {
    auto c = static_cast<unsigned char>(text[i]);
    uint32_t cp = 0;
    size_t len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : 4;
    cp = len == 1 ? c : len == 2 ? (c & 0x1f) : len == 3 ? (c & 0x0f) : (c & 0x07);
    for (size_t k = 1; k < len && i + k < text.size(); ++k) cp = (cp << 6) | (static_cast<unsigned char>(text[i + k]) & 0x3f);
    i += len;
    if (cp < kDecode.size() && kDecode[cp] >= 0) {
      out += static_cast<char>(kDecode[cp]);
    } else {
      return text;  // not a byte-level token (an added token): its text is what it says
    }
  }
  return out;
}

bool ValidUtf8(const std::string& s) {
  for (size_t i = 0; i < s.size();) {
    auto c = static_cast<unsigned char>(s[i]);
    size_t len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (len == 0 || i + len > s.size()) return false;
    for (size_t k = 1; k < len; ++k) {
      if ((static_cast<unsigned char>(s[i + k]) & 0xc0) != 0x80) return false;
    }
    i += len;
  }
  return true;
}

uint16_t FloatToBf16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x40);  // quiet NaN
  bits += 0x7fffu + ((bits >> 16) & 1u);  // round to nearest even
  return static_cast<uint16_t>(bits >> 16);
}

// Values are drawn in blocks of kBlock, each from its own stream seeded by (tensor
// seed, block index): blocks are generated in parallel and the file is the same
// whatever the thread count. An 8B-parameter model is 8000 blocks.
constexpr uint64_t kBlock = 1 << 20;

void FillBlock(uint64_t seed, uint64_t block, size_t m, double std, float fill, GgmlType type, char* out) {
  Rng rng(MixSeed(seed, block));
  auto value = [&] { return std == 0 ? fill : static_cast<float>(rng.NextGaussian() * std); };
  if (type == GgmlType::kF32) {
    auto* v = reinterpret_cast<float*>(out);
    for (size_t k = 0; k < m; ++k) v[k] = value();
  } else {
    auto* v = reinterpret_cast<uint16_t*>(out);
    if (type == GgmlType::kBF16) {
      for (size_t k = 0; k < m; ++k) v[k] = FloatToBf16(value());
    } else {
      for (size_t k = 0; k < m; ++k) v[k] = FloatToHalf(value());
    }
  }
}

// Writes `n` values drawn from N(0, std^2) (or constant `fill` when std == 0) as `type`,
// generating up to `threads` blocks at once; `written` counts bytes for progress.
GgufWriter::Generator RandomTensor(uint64_t seed, uint64_t n, double std, float fill, GgmlType type, int threads,
                                   const std::function<void(uint64_t)>& written) {
  return [=](const GgufWriter::Sink& sink) {
    const size_t elem = type == GgmlType::kF32 ? 4 : 2;
    const uint64_t blocks = (n + kBlock - 1) / kBlock;
    const uint64_t batch = std::max<uint64_t>(1, std::min<uint64_t>(static_cast<uint64_t>(threads), blocks));
    std::vector<std::vector<char>> bufs(batch, std::vector<char>(std::min<uint64_t>(n, kBlock) * elem));
    for (uint64_t first = 0; first < blocks; first += batch) {
      const uint64_t count = std::min(batch, blocks - first);
      auto size_of = [&](uint64_t b) { return static_cast<size_t>(std::min(kBlock, n - b * kBlock)); };
      if (count == 1) {
        FillBlock(seed, first, size_of(first), std, fill, type, bufs[0].data());
      } else {
        std::vector<std::thread> workers;
        for (uint64_t i = 0; i < count; ++i) {
          workers.emplace_back(FillBlock, seed, first + i, size_of(first + i), std, fill, type, bufs[i].data());
        }
        for (auto& t : workers) t.join();
      }
      for (uint64_t i = 0; i < count; ++i) {
        sink(bufs[i].data(), size_of(first + i) * elem);
        if (written) written(size_of(first + i) * elem);
      }
    }
  };
}

Result<ModelShape> ShapeFromField(const spec::Field& f, std::string name) {
  ModelShape s;
  s.name = std::move(name);
  // Accept HF config.json names and hone's short names.
  // Missing fields are reported by the name style the file uses.
  const bool hf_style = f["num_hidden_layers"].defined() || f["hidden_size"].defined();
  auto pick = [&](const char* hf, const char* shortname) {
    if (f[hf].defined()) return f[hf];
    if (f[shortname].defined()) return f[shortname];
    return hf_style ? f[hf] : f[shortname];
  };
  HONE_ASSIGN_OR_RETURN(s.n_layer, pick("num_hidden_layers", "layers").Int(1, 1024));
  HONE_ASSIGN_OR_RETURN(s.n_embd, pick("hidden_size", "hidden").Int(32, 1 << 16));
  HONE_ASSIGN_OR_RETURN(s.n_head, pick("num_attention_heads", "heads").Int(1, 1024));
  HONE_ASSIGN_OR_RETURN(s.n_head_kv, pick("num_key_value_heads", "kv_heads").IntOr(s.n_head, 1, 1024));
  HONE_ASSIGN_OR_RETURN(s.n_ff, pick("intermediate_size", "ffn").Int(32, 1 << 20));
  HONE_ASSIGN_OR_RETURN(s.n_ctx, pick("max_position_embeddings", "context").IntOr(4096, 64, 1 << 22));
  HONE_ASSIGN_OR_RETURN(s.rope_theta, pick("rope_theta", "rope_theta").DoubleOr(10000.0, 1.0, 1e12));
  HONE_ASSIGN_OR_RETURN(s.rms_eps, pick("rms_norm_eps", "rms_eps").DoubleOr(1e-5, 1e-12, 1.0));
  HONE_ASSIGN_OR_RETURN(s.vocab, f["vocab"].StrOr("llama-spm"));
  if (auto v = s.Validate(); !v) return Fail(f.Err(v.error().message));
  return s;
}

}  // namespace

Status ModelShape::Validate() const {
  if (n_layer < 1) return InvalidArgument("layers must be >= 1");
  if (n_head < 1 || n_head_kv < 1) return InvalidArgument("heads and kv_heads must be >= 1");
  if (n_embd % n_head != 0) {
    return InvalidArgument("hidden (" + std::to_string(n_embd) + ") must be a multiple of heads (" +
                           std::to_string(n_head) + ")");
  }
  if (n_head % n_head_kv != 0) {
    return InvalidArgument("heads (" + std::to_string(n_head) + ") must be a multiple of kv_heads (" +
                           std::to_string(n_head_kv) + ")");
  }
  if ((n_embd / n_head) % 2 != 0) return InvalidArgument("head size (hidden/heads) must be even for RoPE");
  // Block quantization (Q4_0, Q8_0: 32 values per block) needs rows that are whole blocks.
  if (n_embd % 32 != 0 || n_ff % 32 != 0) {
    return InvalidArgument("hidden and ffn must be multiples of 32 (quantization blocks)");
  }
  if (n_ctx < 64) return InvalidArgument("context must be >= 64");
  return Ok();
}

uint64_t ModelShape::ParameterCount(uint64_t n_vocab) const {
  uint64_t e = static_cast<uint64_t>(n_embd);
  uint64_t kv = e / static_cast<uint64_t>(n_head) * static_cast<uint64_t>(n_head_kv);
  uint64_t per_layer = 2 * e + e * e * 2 + 2 * e * kv + 3 * e * static_cast<uint64_t>(n_ff);
  return static_cast<uint64_t>(n_layer) * per_layer + 2 * e * n_vocab + e;
}

Result<ModelShape> LoadShapePreset(const std::string& name, const std::string& presets_path) {
  HONE_ASSIGN_OR_RETURN(spec::Field root, spec::Field::LoadFile(presets_path));
  spec::Field presets = root["presets"];
  if (!presets.is_map()) return Fail(presets.Err("expected a mapping of presets"));
  if (!presets[name].defined()) {
    return InvalidArgument("unknown model preset '" + name + "' (known: " + Join(presets.Keys(), ", ") + ")");
  }
  return ShapeFromField(presets[name], name);
}

Result<ModelShape> LoadShapeFile(const std::string& path) {
  HONE_ASSIGN_OR_RETURN(spec::Field root, spec::Field::LoadFile(path));
  if (!root.is_map()) return Fail(root.Err("expected a mapping (an HF config.json or a shape YAML)"));
  return ShapeFromField(root, "custom");
}

Result<SynthResult> SynthesizeModel(const SynthOptions& options) {
  const ModelShape& s = options.shape;
  HONE_TRY(s.Validate());
  if (options.type != GgmlType::kF16 && options.type != GgmlType::kBF16 && options.type != GgmlType::kF32) {
    return InvalidArgument("synthesis writes F16, BF16 or F32; quantize afterwards for other types");
  }
  auto vocab = ReadGguf(options.vocab_path);
  if (!vocab) {
    Error e = vocab.error();
    if (e.code == ErrorCode::kNotFound) e.message = "vocab file not found: " + options.vocab_path;
    return Fail(std::move(e));
  }
  const GgufValue* tokens = vocab->Find("tokenizer.ggml.tokens");
  if (!tokens || tokens->type != GgufType::kArray || tokens->arr.empty()) {
    return DataLoss("vocab file has no tokenizer.ggml.tokens: " + options.vocab_path);
  }
  const uint64_t n_vocab = tokens->arr.size();
  const uint64_t e = static_cast<uint64_t>(s.n_embd);
  const uint64_t head_dim = e / static_cast<uint64_t>(s.n_head);
  const uint64_t kv = head_dim * static_cast<uint64_t>(s.n_head_kv);
  const uint64_t ff = static_cast<uint64_t>(s.n_ff);

  GgufWriter w;
  w.AddKv("general.architecture", GgufValue::Str("llama"));
  w.AddKv("general.name", GgufValue::Str("hone-synth-" + s.name));
  // llama_ftype: ALL_F32 = 0, MOSTLY_F16 = 1, MOSTLY_BF16 = 32.
  w.AddKv("general.file_type",
          GgufValue::U32(options.type == GgmlType::kF16 ? 1 : options.type == GgmlType::kBF16 ? 32 : 0));
  w.AddKv("general.quantization_version", GgufValue::U32(2));
  w.AddKv("llama.vocab_size", GgufValue::U32(static_cast<uint32_t>(n_vocab)));
  w.AddKv("llama.context_length", GgufValue::U32(static_cast<uint32_t>(s.n_ctx)));
  w.AddKv("llama.embedding_length", GgufValue::U32(static_cast<uint32_t>(e)));
  w.AddKv("llama.block_count", GgufValue::U32(static_cast<uint32_t>(s.n_layer)));
  w.AddKv("llama.feed_forward_length", GgufValue::U32(static_cast<uint32_t>(ff)));
  w.AddKv("llama.attention.head_count", GgufValue::U32(static_cast<uint32_t>(s.n_head)));
  w.AddKv("llama.attention.head_count_kv", GgufValue::U32(static_cast<uint32_t>(s.n_head_kv)));
  w.AddKv("llama.rope.dimension_count", GgufValue::U32(static_cast<uint32_t>(head_dim)));
  w.AddKv("llama.rope.freq_base", GgufValue::F32(static_cast<float>(s.rope_theta)));
  w.AddKv("llama.attention.layer_norm_rms_epsilon", GgufValue::F32(static_cast<float>(s.rms_eps)));
  w.AddKv("hone.synth.seed", GgufValue::U32(static_cast<uint32_t>(options.seed)));
  w.AddKv("hone.synth.shape", GgufValue::Str(s.name));
  bool has_template = false;
  for (const auto& [key, value] : vocab->kv) {
    if (!key.starts_with("tokenizer.")) continue;
    has_template = has_template || key == "tokenizer.chat_template";
    if (key == "tokenizer.ggml.token_type" && !options.keep_byte_tokens) {
      GgufValue retyped = value;
      const bool byte_level_bpe = vocab->Str("tokenizer.ggml.model").value_or("") == "gpt2";
      for (size_t id = 0; id < retyped.arr.size(); ++id) {
        GgufValue& t = retyped.arr[id];
        if (t.AsInt() == 6) t.i = 1, t.u = 1;  // SentencePiece BYTE -> NORMAL ("<0x80>" as text)
        // A byte-level BPE token that is not whole UTF-8 on its own (a fragment of a
        // multi-byte character): random weights string such fragments into invalid
        // UTF-8. USER_DEFINED tokens are rendered as their stored (valid) text instead.
        if (byte_level_bpe && t.AsInt() == 1 && id < tokens->arr.size() && !ValidUtf8(Gpt2Bytes(tokens->arr[id].s))) {
          t.i = 4, t.u = 4;
        }
      }
      w.AddKv(key, std::move(retyped));
      continue;
    }
    w.AddKv(key, value);
  }
  if (!has_template) w.AddKv("tokenizer.chat_template", GgufValue::Str(kChatTemplate));

  const GgmlType mt = options.type;
  const int threads = options.threads > 0 ? options.threads
                                          : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  // Progress in bytes of tensor data (the header is small).
  uint64_t total_bytes = 0, done_bytes = 0;
  std::function<void(uint64_t)> written;
  if (options.progress) {
    written = [&](uint64_t bytes) {
      done_bytes += bytes;
      options.progress(static_cast<double>(done_bytes) / static_cast<double>(std::max<uint64_t>(1, total_bytes)));
    };
  }
  auto add = [&](const std::string& name, std::vector<uint64_t> dims, double std, float fill, GgmlType type) {
    uint64_t n = 1;
    for (uint64_t d : dims) n *= d;
    total_bytes += n * (type == GgmlType::kF32 ? 4 : 2);
    w.AddTensor(name, std::move(dims), type,
                RandomTensor(NameSeed(options.seed, name), n, std, fill, type, threads, written));
  };
  // Embeddings N(0,1); projections N(0, 0.02^2); the LM head N(0, 0.08^2) so that the
  // logits are far from flat and KL divergence between precisions means something.
  add("token_embd.weight", {e, n_vocab}, 1.0, 0, mt);
  add("output_norm.weight", {e}, 0, 1.0f, GgmlType::kF32);
  add("output.weight", {e, n_vocab}, 0.08, 0, mt);
  for (int64_t layer = 0; layer < s.n_layer; ++layer) {
    std::string p = "blk." + std::to_string(layer) + ".";
    add(p + "attn_norm.weight", {e}, 0, 1.0f, GgmlType::kF32);
    add(p + "attn_q.weight", {e, e}, 0.02, 0, mt);
    add(p + "attn_k.weight", {e, kv}, 0.02, 0, mt);
    add(p + "attn_v.weight", {e, kv}, 0.02, 0, mt);
    add(p + "attn_output.weight", {e, e}, 0.02, 0, mt);
    add(p + "ffn_norm.weight", {e}, 0, 1.0f, GgmlType::kF32);
    add(p + "ffn_gate.weight", {e, ff}, 0.02, 0, mt);
    add(p + "ffn_up.weight", {e, ff}, 0.02, 0, mt);
    add(p + "ffn_down.weight", {ff, e}, 0.02, 0, mt);
  }
  HONE_TRY(w.Write(options.out_path));
  struct stat st;
  stat(options.out_path.c_str(), &st);
  return SynthResult{options.out_path, s.ParameterCount(n_vocab), static_cast<uint64_t>(st.st_size),
                     static_cast<int64_t>(n_vocab)};
}

}  // namespace hone::model
