// Completion logprobs in the forms engines answer with, and the KL estimate.
#include "bench/logprobs.h"

#include <gtest/gtest.h>

#include <cmath>

namespace hone::bench {
namespace {

using json = nlohmann::json;

TEST(LogprobsTest, LlamaServersFormCarriesIdsAndTopLists) {
  // As llama-server's /v1/completions answers with n_probs (abridged).
  json lp = json::parse(R"({"content": [
    {"id": 2075, "token": "atal", "logprob": -0.5, "top_logprobs": [{"id": 2075, "logprob": -0.5}, {"id": 7, "logprob": -1.5}]},
    {"id": 18063, "token": " x", "logprob": -0.1, "top_logprobs": [{"id": 18063, "logprob": -0.1}]}]})");
  auto got = ParseCompletionLogprobs(lp);
  ASSERT_TRUE(got);
  EXPECT_EQ(got->tokens, (std::vector<int32_t>{2075, 18063}));
  ASSERT_EQ(got->top.size(), 2u);
  EXPECT_DOUBLE_EQ(got->top[0].at(7), -1.5);
}

TEST(LogprobsTest, VllmsFormNeedsTokenIds) {
  // vLLM's legacy completions form with return_tokens_as_token_ids.
  json lp = json::parse(R"({"tokens": ["token_id:11", "token_id:12"], "token_logprobs": [-0.2, -0.3],
    "top_logprobs": [{"token_id:11": -0.2, "token_id:5": -2.0}, {"token_id:12": -0.3}], "text_offset": [0, 3]})");
  auto got = ParseCompletionLogprobs(lp);
  ASSERT_TRUE(got);
  EXPECT_EQ(got->tokens, (std::vector<int32_t>{11, 12}));
  EXPECT_DOUBLE_EQ(got->top[0].at(5), -2.0);
  // Token texts (an engine that ignores return_tokens_as_token_ids): no ids, no answer.
  EXPECT_FALSE(ParseCompletionLogprobs(json::parse(R"({"tokens": ["Hello"], "top_logprobs": [{"Hello": -0.1}]})")));
  EXPECT_FALSE(ParseCompletionLogprobs(json(nullptr)));
  EXPECT_FALSE(ParseCompletionLogprobs(json::parse(R"({"content": []})")));
}

TEST(LogprobsTest, KlEstimateIsZeroForTheSameListsAndGrowsWithTheShift) {
  TopLogprobs p = {{1, std::log(0.6)}, {2, std::log(0.3)}};
  EXPECT_NEAR(KlEstimate(p, p), 0, 1e-12);
  TopLogprobs q = {{1, std::log(0.3)}, {2, std::log(0.6)}};
  // 0.6 ln 2 + 0.3 ln 0.5 over the listed tokens; the remaining 0.1 is the same on both sides.
  EXPECT_NEAR(KlEstimate(p, q), 0.6 * std::log(2.0) + 0.3 * std::log(0.5), 1e-9);
  // The reference's top token is missing from the candidate's list: it gets the
  // candidate's smallest listed logprob.
  TopLogprobs r = {{2, std::log(0.9)}, {3, std::log(0.05)}};
  EXPECT_NEAR(KlEstimate(p, r), 0.6 * std::log(0.6 / 0.05) + 0.3 * std::log(0.3 / 0.9) + 0.1 * std::log(0.1 / 0.05),
              1e-6);
  EXPECT_GT(KlEstimate(p, r), KlEstimate(p, q));
  EXPECT_EQ(KlEstimate(p, {}), 0);
}

}  // namespace
}  // namespace hone::bench
