// ModelSpec: the shape of a transformer LLM as far as the roofline needs it, with the
// arithmetic that turns a shape into bytes and FLOPs.
//
// A spec comes from a Hugging Face config.json (dense, GQA, MoE with active experts,
// MLA as in DeepSeek-V2/V3; multimodal configs are read from their text_config) or
// from a GGUF file's metadata, where the weight bytes are the real tensor sizes
// (quantized types included). The derived quantities are exact for the listed
// architectures up to biases and norms (below 0.1% of the weights):
//   - ParamCount/ActiveParamCount: all weights / weights one token touches (MoE routes
//     each token through experts_per_token of num_experts experts);
//   - KvBytesPerToken: K and V (or MLA's compressed latent) over all layers;
//   - FlopsPerToken(context): 2 x active matmul weights + attention over `context`.
// A ModelSpec is a plain value.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/error.h"

namespace hone::roofline {

enum class AttentionKind { kMha, kGqa, kMla };
std::string_view AttentionKindName(AttentionKind k);

struct ModelSpec {
  std::string name;          // "LlamaForCausalLM" or the GGUF general.name
  std::string architecture;  // HF architectures[0] or GGUF general.architecture
  int64_t hidden_size = 0;
  int64_t num_layers = 0;
  int64_t num_heads = 0;
  int64_t num_kv_heads = 0;
  int64_t head_dim = 0;
  int64_t intermediate_size = 0;  // dense MLP width
  int64_t vocab_size = 0;
  bool tied_embeddings = false;
  bool gated_mlp = true;  // SwiGLU-style (gate, up, down) vs. two-matrix MLP
  int64_t max_context = 0;

  // Mixture of experts (num_experts == 0: dense).
  int64_t num_experts = 0;
  int64_t experts_per_token = 0;
  int64_t moe_intermediate_size = 0;
  int64_t num_shared_experts = 0;
  int64_t shared_intermediate_size = 0;  // total width of the shared expert(s)
  int64_t first_dense_layers = 0;        // DeepSeek's first_k_dense_replace
  int64_t moe_layer_step = 1;            // Qwen-MoE decoder_sparse_step

  // Multi-head latent attention (DeepSeek-V2/V3).
  AttentionKind attention = AttentionKind::kGqa;
  int64_t kv_lora_rank = 0;
  int64_t q_lora_rank = 0;
  int64_t qk_nope_head_dim = 0;
  int64_t qk_rope_head_dim = 0;
  int64_t v_head_dim = 0;

  // Precision of the served artifact.
  std::string weight_dtype = "bf16";  // arithmetic dtype of the matmuls
  double weight_bytes_per_param = 2;  // attention + MLP weights, quantization scales included
  double embedding_bytes_per_param = 2;  // token embedding and LM head (rarely quantized)
  std::string kv_dtype = "bf16";
  double kv_bytes_per_element = 2;

  bool is_moe() const { return num_experts > 0 && experts_per_token > 0; }
  int64_t NumMoeLayers() const;

  double EmbeddingParams() const;            // token embedding table
  double LmHeadParams() const;               // output projection (0 when tied)
  double AttentionParamsPerLayer() const;
  double DenseMlpParamsPerLayer() const;
  double MoeParamsPerLayer(bool active_only) const;  // routed + shared experts + router
  double ParamCount() const;                 // all weights
  double ActiveParamCount() const;           // weights one token touches (incl. embedding row lookup as a param)
  // Bytes of all weights as served.
  double WeightBytes() const;
  // Bytes one decode step streams for `batch` tokens: every non-embedding dense weight,
  // and for MoE the experts the batch touches (min(E, batch x k) per layer, expected
  // distinct experts under uniform routing).
  double WeightBytesPerStep(double batch) const;
  double KvBytesPerToken() const;
  // Forward FLOPs for one token attending over `context` tokens.
  double FlopsPerToken(double context) const;
  // Linear (matmul) FLOPs per token, attention excluded.
  double LinearFlopsPerToken() const;
  // The LM head's share of LinearFlopsPerToken (prefill computes it for one token).
  double LmHeadFlopsPerToken() const { return 2.0 * (tied_embeddings ? EmbeddingParams() : LmHeadParams()); }
  // Attention FLOPs per token per context token (QK^T and PV, all layers).
  double AttentionFlopsPerContextToken() const;
};

// Reads an HF config.json (or a multimodal config with text_config). Quantized
// checkpoints (quantization_config: fp8, awq/gptq bits, mxfp4/nvfp4) set the weight
// dtype and bytes; errors name file:line:col.
Result<ModelSpec> ModelSpecFromHfConfig(const std::string& path);
Result<ModelSpec> ModelSpecFromHfConfigText(const std::string& text, const std::string& source_name);

// Reads a GGUF file's metadata and tensor table (no tensor data).
Result<ModelSpec> ModelSpecFromGguf(const std::string& path);

// Dispatches on the file: ".gguf" -> GGUF, a directory -> <dir>/config.json, else JSON.
Result<ModelSpec> LoadModelSpec(const std::string& path);

// Bytes per element for a dtype name ("bf16" 2, "fp8" 1, "fp4" 0.5, "q8_0" 1.0625, ...);
// nullopt for an unknown name.
std::optional<double> DtypeBytes(std::string_view dtype);

}  // namespace hone::roofline
