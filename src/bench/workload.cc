#include "bench/workload.h"

#include <cmath>

#include "core/rng.h"

namespace hone::bench {

std::string_view RangeSemanticsName(RangeSemantics s) {
  return s == RangeSemantics::kVllm ? "vllm" : "inferencex";
}

Result<RangeSemantics> ParseRangeSemantics(std::string_view s) {
  if (s == "vllm") return RangeSemantics::kVllm;
  if (s == "inferencex" || s == "sglang") return RangeSemantics::kInferenceX;
  return InvalidArgument("unknown range semantics '" + std::string(s) + "' (inferencex or vllm)");
}

int64_t SampleLength(int64_t mean_len, double r, RangeSemantics semantics, uint64_t draw) {
  int64_t lo, hi;
  if (semantics == RangeSemantics::kVllm) {
    lo = static_cast<int64_t>(std::floor(static_cast<double>(mean_len) * (1.0 - r)));
    hi = static_cast<int64_t>(std::ceil(static_cast<double>(mean_len) * (1.0 + r)));
  } else {
    lo = static_cast<int64_t>(static_cast<double>(mean_len) * r);
    hi = mean_len;
  }
  lo = std::max<int64_t>(1, lo);
  hi = std::max(lo, hi);
  Rng rng(draw);
  return rng.Uniform(lo, hi);
}

std::string TextSynth::Text(uint64_t seed, int64_t tokens) const {
  static const char* kSyllables[] = {"ka", "lo", "mi", "ne", "ru", "sa", "to", "vi", "be", "da", "fo", "gu",
                                     "he", "ji", "ko", "la", "mu", "ni", "po", "re", "si", "ta", "ve", "wo"};
  constexpr int kCount = sizeof(kSyllables) / sizeof(kSyllables[0]);
  Rng rng(seed);
  int64_t words = std::max<int64_t>(1, static_cast<int64_t>(std::llround(static_cast<double>(tokens) / tokens_per_word_)));
  std::string out;
  out.reserve(static_cast<size_t>(words) * 7);
  for (int64_t w = 0; w < words; ++w) {
    if (w) out += (w % 12 == 0) ? ". " : " ";
    int syllables = 1 + static_cast<int>(rng.NextU64() % 2);
    for (int s = 0; s < syllables; ++s) out += kSyllables[rng.NextU64() % kCount];
  }
  return out;
}

std::vector<RequestSpec> GenerateFixed(const FixedWorkloadSpec& spec) {
  std::vector<RequestSpec> out;
  TextSynth synth(spec.tokens_per_word);
  auto make = [&](int index) {
    uint64_t base = MixSeed(spec.seed, static_cast<uint64_t>(index));
    RequestSpec r;
    r.endpoint = spec.endpoint;
    int64_t isl = SampleLength(spec.isl, spec.range_ratio, spec.semantics, MixSeed(base, 1));
    r.max_tokens = SampleLength(spec.osl, spec.range_ratio, spec.semantics, MixSeed(base, 2));
    r.isl_expected = isl;
    if (spec.endpoint == Endpoint::kChat) {
      r.messages.push_back({"user", synth.Text(MixSeed(base, 3), isl)});
    } else {
      Rng rng(MixSeed(base, 3));
      r.prompt_ids.reserve(static_cast<size_t>(isl));
      for (int64_t i = 0; i < isl; ++i) r.prompt_ids.push_back(static_cast<int32_t>(rng.Uniform(spec.vocab_lo, spec.vocab_hi - 1)));
    }
    return r;
  };
  if (spec.num_prompts <= 0) return out;
  // Warm-ups have prompts of their own (InferenceX repeats prompt 0): a measured
  // request must never hit a warm-up's prefix cache.
  for (int w = 0; w < spec.num_warmups; ++w) {
    RequestSpec warm = make(1'000'000 + w);
    warm.phase = Phase::kWarmup;
    out.push_back(std::move(warm));
  }
  for (int i = 0; i < spec.num_prompts; ++i) out.push_back(make(i));
  return out;
}

}  // namespace hone::bench
