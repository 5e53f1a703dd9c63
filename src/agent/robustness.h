// Robustness: deterministic detectors that decide when the search is stuck, and the
// role that picks a recovery.
//
// The detectors are pure functions over a plain RunHistory (one entry per judged
// candidate) with thresholds from data/agent/agents.yaml:
//   stall     no KEEP in the last N verdicts, or none for T seconds (>= 2 candidates);
//   crashes   N launch failures in a row, or M of one failure kind in the window;
//   circling  a configuration measured again within the window, or a knob set back to
//             a value it just left (A -> B -> A) repeatedly.
// A signal kind does not fire again within `cooldown_candidates` of its last firing.
// Only when a detector fires is the robustness role asked (an LLM call); it returns a
// RecoveryAction from a closed set. Without a backend, or when the call fails,
// DefaultRecovery() decides deterministically. A recovery only changes which ideas are
// proposed next; it never touches measurements or state.
//
// Pure functions are thread-safe; Robustness is not (it holds the client reference).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "agent/client.h"
#include "core/verdict.h"
#include "agent/settings.h"

namespace hone::agent {

struct HistoryEntry {
  std::string candidate;     // "c004"
  std::string idea;
  std::string delta;         // "knob=value ..."
  std::string config_hash;   // of the full configuration measured
  std::string config;        // Config::ToString
  Verdict verdict = Verdict::kPending;
  std::string failure_kind;
  double t_s = 0;            // session time of the verdict
};

struct RunHistory {
  std::vector<HistoryEntry> entries;  // oldest first
  double now_s = 0;
  double started_s = 0;
};

enum class SignalKind { kStall, kCrashLoop, kCircling };
std::string_view SignalKindName(SignalKind k);

struct Signal {
  SignalKind kind = SignalKind::kStall;
  std::string detail;                // one line
  std::vector<std::string> knobs;    // knobs implicated (crashing / toggled ones)
  size_t at_entry = 0;               // history size when it fired
};

std::optional<Signal> DetectStall(const RunHistory& h, const DetectorThresholds& t);
std::optional<Signal> DetectCrashLoop(const RunHistory& h, const DetectorThresholds& t);
std::optional<Signal> DetectCircling(const RunHistory& h, const DetectorThresholds& t);
// Every detector that fires and is not cooling down (`previous`: signals already
// fired, from older to newer).
std::vector<Signal> DetectAll(const RunHistory& h, const DetectorThresholds& t, const std::vector<Signal>& previous);

enum class RecoveryKind { kExcludeKnobs, kResetIdeas, kUseFallback, kStopSearch };
std::string_view RecoveryKindName(RecoveryKind k);
std::optional<RecoveryKind> ParseRecoveryKind(std::string_view name);

struct RecoveryAction {
  RecoveryKind kind = RecoveryKind::kResetIdeas;
  std::vector<std::string> knobs;  // kExcludeKnobs
  std::string reason;
  std::string source;              // "robustness" (the model) | "default" (deterministic)
};

// The deterministic recovery: crash loop -> exclude the crashing knobs; circling ->
// exclude the toggled knobs (or reset the ideas); stall -> switch to the fallback.
RecoveryAction DefaultRecovery(const std::vector<Signal>& signals);

class Robustness {
 public:
  // `client` may be null: then every recovery is DefaultRecovery().
  Robustness(LlmClient* client, const AgentData& data) : client_(client), data_(data) {}
  // Picks a recovery for the signals. Never fails: a failed or invalid model reply
  // falls back to DefaultRecovery (the reason says so).
  RecoveryAction Recover(const std::vector<Signal>& signals, const RunHistory& history);
  const DetectorThresholds& thresholds() const { return data_.detectors; }

 private:
  LlmClient* client_;
  const AgentData& data_;
};

}  // namespace hone::agent
