// Fixed-length workloads: random prompts of given input/output lengths, as the
// anchors' "random" datasets make them, reproducible from a seed.
//
// Length sampling follows one of two named semantics, because the anchors differ:
//   kInferenceX (InferenceX's fork, SGLang): uniform integer in [max(1, int(L*r)), L]
//   kVllm (upstream vLLM):                   uniform integer in [floor(L*(1-r)), ceil(L*(1+r))]
// Completions prompts are token-id lists (exact ISL on llama.cpp and vLLM); chat
// prompts are synthetic text sized with a tokens-per-word ratio (calibrated against
// the server's /tokenize when possible), and their ISL is then read from usage.
// Warm-ups use prompts of their own (InferenceX repeats prompt 0, which lets the first
// measured request hit the warm-up's prefix cache) and are excluded from metrics.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "bench/record.h"
#include "core/error.h"

namespace hone::bench {

enum class RangeSemantics { kInferenceX, kVllm };
std::string_view RangeSemanticsName(RangeSemantics s);
Result<RangeSemantics> ParseRangeSemantics(std::string_view s);

// Draws a length around `mean_len` with ratio `r` under `semantics`.
int64_t SampleLength(int64_t mean_len, double r, RangeSemantics semantics, uint64_t draw);

// Deterministic pseudo-English text. `tokens_per_word` converts a token target into
// a word count (1.3 is typical for English-like text under BPE/SPM vocabularies).
class TextSynth {
 public:
  explicit TextSynth(double tokens_per_word = 1.3) : tokens_per_word_(tokens_per_word) {}
  // About `tokens` tokens of text; the same seed always gives the same text.
  std::string Text(uint64_t seed, int64_t tokens) const;
  double tokens_per_word() const { return tokens_per_word_; }

 private:
  double tokens_per_word_;
};

struct FixedWorkloadSpec {
  Endpoint endpoint = Endpoint::kCompletions;
  int64_t isl = 128;
  int64_t osl = 64;
  double range_ratio = 0.0;
  RangeSemantics semantics = RangeSemantics::kVllm;  // with ratio 0: exact lengths
  int num_prompts = 32;
  int num_warmups = 2;
  uint64_t seed = 42;
  int32_t vocab_lo = 1000;   // token ids drawn uniformly from [vocab_lo, vocab_hi)
  int32_t vocab_hi = 31000;
  double tokens_per_word = 1.3;  // chat text sizing
};

// Warm-ups first (phase kWarmup), then the measured prompts.
std::vector<RequestSpec> GenerateFixed(const FixedWorkloadSpec& spec);

}  // namespace hone::bench
