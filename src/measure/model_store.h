// ModelStore: the model file a configuration runs on. The "weights" knob (an
// artifact knob: weight precision) selects a quantized variant of the session's base
// model, made once with llama-quantize and cached next to it; every other knob
// leaves the base file. Concurrent sessions share variants safely (file lock,
// atomic rename). Not thread-safe within a process.
#pragma once

#include <string>

#include "core/config.h"
#include "core/error.h"

namespace hone::measure {

class ModelStore {
 public:
  // `base` is the session's model file; `quantize` the llama-quantize binary (may be
  // empty: then only the base is available).
  ModelStore(std::string base, std::string quantize, std::string variants_dir);
  // The file for `config` (quantizing on first use).
  Result<std::string> Resolve(const Config& config);
  // `config` as the server is launched with it: artifact knobs that name further files
  // become their flags. spec_draft_weights=TYPE (a draft model for speculative
  // decoding: this model quantized to TYPE, whose greedy agreement with the target is
  // high even with random weights) becomes spec_draft_model=<file> and, unless the
  // config names one, spec_type=draft-simple.
  Result<Config> LaunchConfig(const Config& config);
  // The base file's weight type as the "weights" knob names it ("f16", "q8_0", ...).
  Result<std::string> BaseType() const;
  const std::string& base() const { return base_; }

 private:
  // The base model quantized to `type` (made once, under a file lock).
  Result<std::string> Variant(const std::string& type);

  std::string base_;
  std::string quantize_;
  std::string variants_dir_;
};

}  // namespace hone::measure
