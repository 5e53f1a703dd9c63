// Synthesized models: llama-architecture GGUF files with deterministic random weights,
// for serving experiments where real weights cannot be downloaded (like vLLM's
// --load-format dummy).
//
// A ModelShape is the HF-style shape (layers, hidden size, heads, KV heads, FFN size,
// context). Presets live in data/synth_presets.yaml; a shape can also come from an HF
// config.json. The vocabulary and tokenizer are copied from one of llama.cpp's
// vocab-only GGUF files (models/ggml-vocab-*.gguf in the provisioned source tree).
// The same shape, vocab, seed and type always give a byte-identical file, whatever the
// thread count (values come in blocks of 2^20, each from its own seeded stream, so an
// 8B-parameter model is written in parallel at disk speed).
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "core/error.h"
#include "model/gguf.h"

namespace hone::model {

struct ModelShape {
  std::string name = "custom";
  int64_t n_layer = 0;
  int64_t n_embd = 0;
  int64_t n_head = 0;
  int64_t n_head_kv = 0;
  int64_t n_ff = 0;
  int64_t n_ctx = 0;
  double rope_theta = 10000.0;
  double rms_eps = 1e-5;
  std::string vocab = "llama-spm";  // models/ggml-vocab-<vocab>.gguf

  // Checks divisibility rules llama.cpp and quantization need; errors say which.
  Status Validate() const;
  uint64_t ParameterCount(uint64_t n_vocab) const;
};

// Presets by name from a presets file ("tiny", "small", ...).
Result<ModelShape> LoadShapePreset(const std::string& name, const std::string& presets_path);
// A shape from an HF config.json (num_hidden_layers, hidden_size, ...) or a YAML file
// with hone's short names (layers, hidden, heads, kv_heads, ffn, context, vocab).
Result<ModelShape> LoadShapeFile(const std::string& path);

struct SynthOptions {
  ModelShape shape;
  uint64_t seed = 42;
  std::string vocab_path;  // a vocab-only GGUF
  std::string out_path;
  GgmlType type = GgmlType::kF16;  // kF16, kBF16 or kF32 for the matrices
  int threads = 0;                 // generator threads (0 = all CPUs); the file does not depend on it
  std::function<void(double fraction)> progress;  // optional, called as tensor data is written
  // llama-server aborts a stream when a random model emits SentencePiece byte tokens
  // that form invalid UTF-8 (llama.cpp#27543); by default they are re-typed NORMAL.
  bool keep_byte_tokens = false;
};

struct SynthResult {
  std::string path;
  uint64_t parameters = 0;
  uint64_t file_bytes = 0;
  int64_t n_vocab = 0;
};

Result<SynthResult> SynthesizeModel(const SynthOptions& options);

}  // namespace hone::model
