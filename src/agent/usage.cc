#include "agent/usage.h"

#include <cmath>
#include <cstdio>

namespace hone::agent {

ModelPrice PriceTable::For(const std::string& model) const {
  const ModelPrice* best = nullptr;
  size_t best_len = 0;
  for (const auto& [prefix, price] : by_prefix_) {
    if (model.starts_with(prefix) && prefix.size() >= best_len) {
      best = &price;
      best_len = prefix.size();
    }
  }
  return best ? *best : default_;
}

int64_t EstimateTokens(size_t chars, double chars_per_token) {
  if (chars_per_token <= 0) chars_per_token = 1;
  return static_cast<int64_t>(std::ceil(static_cast<double>(chars) / chars_per_token));
}

std::string UsageMeter::Exceeded(const Usage& worst) const {
  char buf[200];
  if (limits_.max_calls > 0 && total_.calls + 1 > limits_.max_calls) {
    std::snprintf(buf, sizeof buf, "call cap reached (%d of %d calls)", total_.calls, limits_.max_calls);
    return buf;
  }
  if (limits_.max_tokens > 0 && total_.input_tokens + total_.output_tokens + worst.tokens() > limits_.max_tokens) {
    std::snprintf(buf, sizeof buf, "token cap: %lld used + %lld worst case > %lld",
                  static_cast<long long>(total_.input_tokens + total_.output_tokens),
                  static_cast<long long>(worst.tokens()), static_cast<long long>(limits_.max_tokens));
    return buf;
  }
  if (limits_.max_usd > 0 && total_.cost_usd + worst.cost_usd > limits_.max_usd) {
    std::snprintf(buf, sizeof buf, "cost cap: $%.4f spent + $%.4f worst case > $%.2f", total_.cost_usd,
                  worst.cost_usd, limits_.max_usd);
    return buf;
  }
  return "";
}

Status UsageMeter::Admit(const std::string& role, const Usage& worst) {
  std::lock_guard<std::mutex> lock(mu_);
  std::string why = Exceeded(worst);
  if (!why.empty()) {
    ++total_.refused;
    ++roles_[role].refused;
    return Fail(Error{ErrorCode::kResourceExhausted, "agent budget: " + why + "; call refused", {{"cap", why}}});
  }
  ++total_.calls;
  ++roles_[role].calls;
  return Ok();
}

void UsageMeter::Record(const std::string& role, const Usage& actual) {
  std::lock_guard<std::mutex> lock(mu_);
  for (UsageTotals* t : {&total_, &roles_[role]}) {
    t->input_tokens += actual.input_tokens;
    t->output_tokens += actual.output_tokens;
    t->cost_usd += actual.cost_usd;
    t->estimated = t->estimated || actual.estimated;
  }
}

UsageTotals UsageMeter::totals() const {
  std::lock_guard<std::mutex> lock(mu_);
  return total_;
}

std::map<std::string, UsageTotals> UsageMeter::by_role() const {
  std::lock_guard<std::mutex> lock(mu_);
  return roles_;
}

bool UsageMeter::exhausted() const {
  std::lock_guard<std::mutex> lock(mu_);
  return !Exceeded(Usage{}).empty() ||
         (limits_.max_usd > 0 && total_.cost_usd >= limits_.max_usd) ||
         (limits_.max_tokens > 0 && total_.input_tokens + total_.output_tokens >= limits_.max_tokens);
}

std::string UsageMeter::Summary() const {
  UsageTotals t = totals();
  char buf[256];
  std::snprintf(buf, sizeof buf, "%d calls, %lld in + %lld out tokens, $%.4f%s", t.calls,
                static_cast<long long>(t.input_tokens), static_cast<long long>(t.output_tokens), t.cost_usd,
                t.estimated ? " (partly estimated)" : "");
  std::string out = buf;
  if (limits_.max_usd > 0) {
    std::snprintf(buf, sizeof buf, " of $%.2f", limits_.max_usd);
    out += buf;
  }
  if (t.refused) out += " (" + std::to_string(t.refused) + " refused by the cap)";
  return out;
}

}  // namespace hone::agent
