// Token and cost accounting for LLM calls, with a hard cap per session.
//
// Every call is admitted first: UsageMeter::Admit refuses it (kResourceExhausted,
// naming the cap) when its worst case (estimated input tokens plus the requested
// output limit, priced at the model's rate) would pass the session's dollar, token or
// call cap. After the call the actual usage (from the reply, or the worst case when a
// backend does not report it) is recorded. Once a cap is reached every further call is
// refused: spend is bounded, not just reported. PriceTable maps a model name to its
// price (data/agent/agents.yaml); local servers are free.
//
// UsageMeter is thread-safe and shared by every backend client of a session.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "core/error.h"

namespace hone::agent {

struct Usage {
  int64_t input_tokens = 0;
  int64_t output_tokens = 0;
  double cost_usd = 0;
  bool estimated = false;  // not reported by the backend: a conservative estimate
  int64_t tokens() const { return input_tokens + output_tokens; }
};

struct ModelPrice {
  double input_usd_per_mtok = 0;
  double output_usd_per_mtok = 0;
  double Cost(int64_t input_tokens, int64_t output_tokens) const {
    return (static_cast<double>(input_tokens) * input_usd_per_mtok +
            static_cast<double>(output_tokens) * output_usd_per_mtok) * 1e-6;
  }
};

class PriceTable {
 public:
  PriceTable() = default;
  PriceTable(ModelPrice fallback, std::map<std::string, ModelPrice> by_prefix)
      : default_(fallback), by_prefix_(std::move(by_prefix)) {}
  // The price of the longest listed prefix of `model`; the default for unlisted ones.
  ModelPrice For(const std::string& model) const;

 private:
  ModelPrice default_;
  std::map<std::string, ModelPrice> by_prefix_;
};

struct UsageLimits {
  double max_usd = 0;       // 0: no dollar cap
  int64_t max_tokens = 0;   // 0: no token cap
  int max_calls = 0;        // 0: no call cap
};

struct UsageTotals {
  int calls = 0;           // requests sent (every attempt)
  int refused = 0;         // calls refused by a cap
  int64_t input_tokens = 0;
  int64_t output_tokens = 0;
  double cost_usd = 0;
  bool estimated = false;  // some of it is an estimate
};

class UsageMeter {
 public:
  explicit UsageMeter(UsageLimits limits) : limits_(limits) {}
  UsageMeter(const UsageMeter&) = delete;
  UsageMeter& operator=(const UsageMeter&) = delete;

  // Admits one request whose worst case is `worst`, counting it as a call; refuses
  // it with kResourceExhausted (context "cap") when a cap would be passed.
  Status Admit(const std::string& role, const Usage& worst);
  // Records what an admitted call used.
  void Record(const std::string& role, const Usage& actual);

  UsageTotals totals() const;
  std::map<std::string, UsageTotals> by_role() const;
  const UsageLimits& limits() const { return limits_; }
  // Whether a cap has been reached (every further call is refused).
  bool exhausted() const;
  // "7 calls, 5120 in + 830 out tokens, $0.0210 of $5.00 (2 refused by the cap)".
  std::string Summary() const;

 private:
  std::string Exceeded(const Usage& worst) const;  // REQUIRES mu_; "" when within caps

  const UsageLimits limits_;
  mutable std::mutex mu_;
  UsageTotals total_;                          // GUARDED_BY(mu_)
  std::map<std::string, UsageTotals> roles_;   // GUARDED_BY(mu_)
};

// Estimated tokens of `chars` characters of prompt at `chars_per_token`.
int64_t EstimateTokens(size_t chars, double chars_per_token);

}  // namespace hone::agent
