// Logprobs of an OpenAI-style completion, for the accuracy gate of engines without a
// perplexity tool: the tokens of choices[0].logprobs with their top-k alternatives, in
// llama-server's form ({"content": [{id, logprob, top_logprobs: [{id, logprob}]}]}) or
// the OpenAI completions form ({tokens, top_logprobs: [{token: logprob}]}, token ids as
// "token_id:N" when vLLM is asked for return_tokens_as_token_ids), and a KL divergence
// estimated from two top-k lists.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <vector>

namespace hone::bench {

// Top-k log-probabilities at one position: token id -> logprob.
using TopLogprobs = std::map<int32_t, double>;

struct TokenLogprobs {
  std::vector<int32_t> tokens;
  std::vector<TopLogprobs> top;  // one per token; empty when the answer listed none
};

// nullopt when `logprobs` is not one of the two forms or a token carries no id.
std::optional<TokenLogprobs> ParseCompletionLogprobs(const nlohmann::json& logprobs);

// KL(P_reference || P_candidate) from both top-k lists: a reference token missing from
// the candidate's list gets the candidate's smallest listed logprob (an upper bound on
// its probability), and the rest of the vocabulary is one bucket on each side. 0 when
// either list is empty. A lower bound when the lists hold little of the mass.
double KlEstimate(const TopLogprobs& reference, const TopLogprobs& candidate);

}  // namespace hone::bench
