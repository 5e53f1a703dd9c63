#include "bench/logprobs.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "core/strings.h"

namespace hone::bench {

using json = nlohmann::json;

namespace {

// llama-server gives ids, vLLM "token_id:N" strings; anything else has no id.
std::optional<int32_t> TokenId(const json& t) {
  if (t.is_number_integer()) return t.get<int32_t>();
  if (t.is_string()) {
    const std::string s = t.get<std::string>();
    if (s.starts_with("token_id:")) {
      if (auto v = ParseInt(s.substr(9))) return static_cast<int32_t>(*v);
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<TokenLogprobs> ParseCompletionLogprobs(const json& lp) {
  if (!lp.is_object()) return std::nullopt;
  TokenLogprobs out;
  if (lp.contains("content") && lp["content"].is_array()) {
    for (const json& c : lp["content"]) {
      auto id = c.is_object() && c.contains("id") ? TokenId(c["id"]) : std::nullopt;
      if (!id) return std::nullopt;
      out.tokens.push_back(*id);
      TopLogprobs t;
      if (c.contains("top_logprobs") && c["top_logprobs"].is_array()) {
        for (const json& alt : c["top_logprobs"]) {
          auto alt_id = alt.is_object() && alt.contains("id") ? TokenId(alt["id"]) : std::nullopt;
          if (alt_id && alt.contains("logprob") && alt["logprob"].is_number()) t[*alt_id] = alt["logprob"].get<double>();
        }
      }
      out.top.push_back(std::move(t));
    }
  } else if (lp.contains("tokens") && lp["tokens"].is_array()) {
    for (const json& tok : lp["tokens"]) {
      auto id = TokenId(tok);
      if (!id) return std::nullopt;
      out.tokens.push_back(*id);
    }
    if (lp.contains("top_logprobs") && lp["top_logprobs"].is_array()) {
      for (const json& pos : lp["top_logprobs"]) {
        TopLogprobs t;
        if (pos.is_object()) {
          for (const auto& [k, v] : pos.items()) {
            if (auto id = TokenId(json(k)); id && v.is_number()) t[*id] = v.get<double>();
          }
        }
        out.top.push_back(std::move(t));
      }
    }
    if (out.top.size() != out.tokens.size()) out.top.clear();
  }
  if (out.tokens.empty()) return std::nullopt;
  return out;
}

double KlEstimate(const TopLogprobs& p, const TopLogprobs& q) {
  if (p.empty() || q.empty()) return 0;
  double q_floor = 0;
  for (const auto& [id, lq] : q) q_floor = std::min(q_floor, lq);
  double kl = 0, p_mass = 0, q_mass = 0;
  for (const auto& [id, lp] : p) {
    auto it = q.find(id);
    const double lq = it != q.end() ? it->second : q_floor;
    const double pi = std::exp(lp);
    kl += pi * (lp - lq);
    p_mass += pi;
    q_mass += std::exp(lq);
  }
  const double p_rest = std::max(0.0, 1 - p_mass), q_rest = std::max(1e-9, 1 - q_mass);
  if (p_rest > 1e-9) kl += p_rest * std::log(p_rest / q_rest);
  return std::max(0.0, kl);
}

}  // namespace hone::bench
