#include "bench/workload.h"

#include <gtest/gtest.h>

#include <set>

namespace hone::bench {
namespace {

TEST(SampleLengthTest, SemanticsBounds) {
  int64_t lo = INT64_MAX, hi = 0;
  for (uint64_t d = 0; d < 5000; ++d) {
    int64_t v = SampleLength(1000, 0.8, RangeSemantics::kInferenceX, d);
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  EXPECT_EQ(lo, 800);  // [int(L*r), L]
  EXPECT_EQ(hi, 1000);
  lo = INT64_MAX, hi = 0;
  for (uint64_t d = 0; d < 5000; ++d) {
    int64_t v = SampleLength(1000, 0.1, RangeSemantics::kVllm, d);
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  EXPECT_EQ(lo, 900);  // [floor(L(1-r)), ceil(L(1+r))]
  EXPECT_EQ(hi, 1100);
  EXPECT_EQ(SampleLength(128, 0, RangeSemantics::kVllm, 7), 128);       // exact
  EXPECT_EQ(SampleLength(128, 1.0, RangeSemantics::kInferenceX, 7), 128);
  EXPECT_GE(SampleLength(10, 0, RangeSemantics::kInferenceX, 3), 1);    // SGLang r=0: [1, L]
}

TEST(GenerateFixedTest, DeterministicExactAndWarmupsApart) {
  FixedWorkloadSpec spec;
  spec.isl = 64;
  spec.osl = 16;
  spec.num_prompts = 10;
  spec.num_warmups = 3;
  auto a = GenerateFixed(spec);
  auto b = GenerateFixed(spec);
  ASSERT_EQ(a.size(), 13u);
  std::set<std::vector<int32_t>> prompts;
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].prompt_ids, b[i].prompt_ids);
    EXPECT_EQ(a[i].phase, i < 3 ? Phase::kWarmup : Phase::kProfiling);
    EXPECT_EQ(a[i].prompt_ids.size(), 64u);
    EXPECT_EQ(a[i].max_tokens, 16);
    for (int32_t id : a[i].prompt_ids) {
      EXPECT_GE(id, 1000);
      EXPECT_LT(id, 31000);
    }
    prompts.insert(a[i].prompt_ids);
  }
  EXPECT_EQ(prompts.size(), 13u);  // no measured prompt repeats a warm-up's
  spec.seed = 43;
  EXPECT_NE(GenerateFixed(spec)[5].prompt_ids, a[5].prompt_ids);
}

TEST(GenerateFixedTest, ChatTextIsSizedByTokensPerWord) {
  FixedWorkloadSpec spec;
  spec.endpoint = Endpoint::kChat;
  spec.isl = 130;
  spec.num_prompts = 1;
  spec.num_warmups = 0;
  auto r = GenerateFixed(spec);
  ASSERT_EQ(r[0].messages.size(), 1u);
  size_t words = 1;
  for (char c : r[0].messages[0].content) words += c == ' ';
  EXPECT_EQ(words, 100u);  // 130 tokens / 1.3 tokens per word
  TextSynth t;
  EXPECT_EQ(t.Text(5, 50), t.Text(5, 50));
  EXPECT_NE(t.Text(5, 50), t.Text(6, 50));
}

}  // namespace
}  // namespace hone::bench
