#include "agent/robustness.h"

#include <algorithm>
#include <map>
#include <set>
#include <sstream>

#include "core/strings.h"

namespace hone::agent {

using json = nlohmann::json;

std::string_view SignalKindName(SignalKind k) {
  switch (k) {
    case SignalKind::kStall: return "stall";
    case SignalKind::kCrashLoop: return "crash_loop";
    case SignalKind::kCircling: return "circling";
  }
  return "stall";
}

std::string_view RecoveryKindName(RecoveryKind k) {
  switch (k) {
    case RecoveryKind::kExcludeKnobs: return "exclude_knobs";
    case RecoveryKind::kResetIdeas: return "reset_ideas";
    case RecoveryKind::kUseFallback: return "use_fallback";
    case RecoveryKind::kStopSearch: return "stop_search";
  }
  return "reset_ideas";
}

std::optional<RecoveryKind> ParseRecoveryKind(std::string_view name) {
  for (RecoveryKind k : {RecoveryKind::kExcludeKnobs, RecoveryKind::kResetIdeas, RecoveryKind::kUseFallback,
                         RecoveryKind::kStopSearch}) {
    if (RecoveryKindName(k) == name) return k;
  }
  return std::nullopt;
}

namespace {

// "a=1 b=2" -> {"a=1", "b=2"}.
std::vector<std::string> Pairs(const std::string& delta) {
  std::vector<std::string> out;
  for (const auto& p : Split(delta, ' ')) {
    if (!Trim(p).empty() && p.find('=') != std::string::npos) out.emplace_back(Trim(p));
  }
  return out;
}

std::string KnobOf(const std::string& pair) { return pair.substr(0, pair.find('=')); }

void AddUnique(std::vector<std::string>& v, const std::string& s) {
  if (std::find(v.begin(), v.end(), s) == v.end()) v.push_back(s);
}

}  // namespace

std::optional<Signal> DetectStall(const RunHistory& h, const DetectorThresholds& t) {
  const auto& e = h.entries;
  size_t since_keep = 0;
  double last_keep_s = h.started_s;
  for (auto it = e.rbegin(); it != e.rend(); ++it) {
    if (it->verdict == Verdict::kKeep) {
      last_keep_s = it->t_s;
      break;
    }
    ++since_keep;
  }
  if (since_keep >= static_cast<size_t>(t.stall_candidates)) {
    return Signal{SignalKind::kStall, std::to_string(since_keep) + " verdicts in a row without a KEEP", {}, e.size()};
  }
  if (since_keep >= 2 && h.now_s - last_keep_s >= t.stall_seconds) {
    return Signal{SignalKind::kStall,
                  "no KEEP for " + HumanSeconds(h.now_s - last_keep_s) + " (" + std::to_string(since_keep) + " verdicts)",
                  {}, e.size()};
  }
  return std::nullopt;
}

std::optional<Signal> DetectCrashLoop(const RunHistory& h, const DetectorThresholds& t) {
  const auto& e = h.entries;
  size_t streak = 0;
  for (auto it = e.rbegin(); it != e.rend() && it->verdict == Verdict::kLaunchFailed; ++it) ++streak;
  std::vector<std::string> knobs;
  if (streak >= static_cast<size_t>(t.crash_streak)) {
    for (size_t i = e.size() - streak; i < e.size(); ++i) {
      for (const auto& p : Pairs(e[i].delta)) AddUnique(knobs, KnobOf(p));
    }
    return Signal{SignalKind::kCrashLoop,
                  std::to_string(streak) + " launch failures in a row (last: " + e.back().failure_kind + ")", knobs,
                  e.size()};
  }
  size_t window = std::min(e.size(), static_cast<size_t>(t.circling_window));
  std::map<std::string, int> kinds;
  for (size_t i = e.size() - window; i < e.size(); ++i) {
    if (e[i].verdict == Verdict::kLaunchFailed && !e[i].failure_kind.empty()) ++kinds[e[i].failure_kind];
  }
  for (const auto& [kind, n] : kinds) {
    if (n >= t.crash_same_kind) {
      for (size_t i = e.size() - window; i < e.size(); ++i) {
        if (e[i].failure_kind == kind) {
          for (const auto& p : Pairs(e[i].delta)) AddUnique(knobs, KnobOf(p));
        }
      }
      return Signal{SignalKind::kCrashLoop,
                    std::to_string(n) + " launch failures of kind " + kind + " in the last " + std::to_string(window),
                    knobs, e.size()};
    }
  }
  return std::nullopt;
}

std::optional<Signal> DetectCircling(const RunHistory& h, const DetectorThresholds& t) {
  const auto& e = h.entries;
  size_t window = std::min(e.size(), static_cast<size_t>(t.circling_window));
  std::map<std::string, int> seen;
  std::string repeated;
  for (size_t i = e.size() - window; i < e.size(); ++i) {
    if (e[i].config_hash.empty()) continue;
    if (++seen[e[i].config_hash] >= t.circling_repeats && repeated.empty()) repeated = e[i].config;
  }
  // Flip-flops: a knob set to a value, then away, then back (per knob, in order).
  std::map<std::string, std::vector<std::string>> values;  // knob -> values set, in order
  for (size_t i = e.size() - window; i < e.size(); ++i) {
    for (const auto& p : Pairs(e[i].delta)) values[KnobOf(p)].push_back(p.substr(p.find('=') + 1));
  }
  std::vector<std::string> knobs;
  for (const auto& [knob, vs] : values) {
    int flips = 0;
    for (size_t i = 2; i < vs.size(); ++i) flips += vs[i] == vs[i - 2] && vs[i] != vs[i - 1];
    if (flips >= t.flip_flops) knobs.push_back(knob);
  }
  if (!repeated.empty()) {
    return Signal{SignalKind::kCircling,
                  "configuration measured " + std::to_string(t.circling_repeats) + "+ times: " + repeated, knobs,
                  e.size()};
  }
  if (!knobs.empty()) {
    return Signal{SignalKind::kCircling, "knobs set back and forth: " + Join(knobs, ", "), knobs, e.size()};
  }
  return std::nullopt;
}

std::vector<Signal> DetectAll(const RunHistory& h, const DetectorThresholds& t, const std::vector<Signal>& previous) {
  std::vector<Signal> out;
  for (auto detect : {DetectCrashLoop, DetectCircling, DetectStall}) {
    std::optional<Signal> s = detect(h, t);
    if (!s) continue;
    bool cooling = false;
    for (const Signal& p : previous) {
      cooling = cooling || (p.kind == s->kind && s->at_entry < p.at_entry + static_cast<size_t>(t.cooldown_candidates));
    }
    if (!cooling) out.push_back(std::move(*s));
  }
  return out;
}

RecoveryAction DefaultRecovery(const std::vector<Signal>& signals) {
  RecoveryAction a;
  a.source = "default";
  for (const Signal& s : signals) {
    if (s.kind == SignalKind::kCrashLoop && !s.knobs.empty()) {
      a.kind = RecoveryKind::kExcludeKnobs;
      a.knobs = s.knobs;
      a.reason = "crash loop: stop changing " + Join(s.knobs, ", ");
      return a;
    }
  }
  for (const Signal& s : signals) {
    if (s.kind == SignalKind::kCircling) {
      a.kind = s.knobs.empty() ? RecoveryKind::kResetIdeas : RecoveryKind::kExcludeKnobs;
      a.knobs = s.knobs;
      a.reason = "circling: " + s.detail;
      return a;
    }
  }
  a.kind = RecoveryKind::kUseFallback;
  a.reason = signals.empty() ? "no signal" : "stall: " + signals.front().detail + "; switching to the planner";
  return a;
}

RecoveryAction Robustness::Recover(const std::vector<Signal>& signals, const RunHistory& history) {
  RecoveryAction fallback = DefaultRecovery(signals);
  if (!client_ || client_->disabled()) return fallback;
  std::ostringstream u;
  u << "Detectors fired:\n";
  for (const Signal& s : signals) {
    u << "- " << SignalKindName(s.kind) << ": " << s.detail;
    if (!s.knobs.empty()) u << " (knobs: " << Join(s.knobs, ", ") << ")";
    u << "\n";
  }
  u << "\nRecent candidates (oldest first):\n";
  size_t from = history.entries.size() > 16 ? history.entries.size() - 16 : 0;
  for (size_t i = from; i < history.entries.size(); ++i) {
    const HistoryEntry& e = history.entries[i];
    u << "- " << e.candidate << " " << e.delta << ": " << VerdictName(e.verdict);
    if (!e.failure_kind.empty()) u << " [" << e.failure_kind << "]";
    u << "\n";
  }
  u << "\nThe deterministic default would be: " << RecoveryKindName(fallback.kind)
    << (fallback.knobs.empty() ? "" : " " + Join(fallback.knobs, ",")) << ".\n";
  ChatRequest req;
  req.system = data_.robustness.system;
  req.messages.push_back({"user", u.str()});
  req.max_output_tokens = 300;
  req.temperature = 0;
  auto reply = client_->Structured("robustness", std::move(req), data_.robustness_schema);
  if (!reply) {
    fallback.reason += " (robustness model unavailable: " + reply.error().message + ")";
    return fallback;
  }
  RecoveryAction a;
  a.source = "robustness";
  std::optional<RecoveryKind> kind = ParseRecoveryKind(reply->value["action"].get<std::string>());
  if (!kind) {
    fallback.reason += " (the model chose an unknown action)";
    return fallback;
  }
  a.kind = *kind;
  a.reason = reply->value["reason"].get<std::string>();
  if (reply->value.contains("knobs")) {
    for (const json& k : reply->value["knobs"]) a.knobs.push_back(k.get<std::string>());
  }
  if (a.kind == RecoveryKind::kExcludeKnobs && a.knobs.empty()) {
    fallback.reason += " (the model chose exclude_knobs without knobs)";
    return fallback;
  }
  return a;
}

}  // namespace hone::agent
