// Proposer: where the session's next candidate configuration comes from.
//
// The coordinator asks Next() for a candidate (a Config delta on top of the current
// best) and reports every verdict back through Observe(). A proposer never measures
// and never decides: it only orders ideas. Its state (e.g. an idea tree) is saved in
// the session state with Save() and restored on resume with Load(). Implementations:
// the catalog proposer (one knob at a time, in catalog priority), the planner
// (idea tree + scoring, planner.h), random and grid search (baselines.h).
// Not thread-safe.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/config.h"
#include "core/error.h"
#include "core/verdict.h"

namespace hone::search {

struct Candidate {
  std::string idea;       // stable id ("weights=q8_0")
  std::string title;      // human text ("quantize weights to Q8_0")
  Config delta;
  std::string rationale;
  double expected_gain = 0;  // a prior, never a result
};

struct ProposalContext {
  Config stock;
  Config best;
  std::set<std::string> tried;  // hashes of full configurations already measured
  int cycle = 1;
  double time_left_s = 0;
  int concurrency = 1;
  int cpus = 1;
  int cores = 0;  // the host's physical cores, what a knob's `auto_means: cores` resolves to (0: unknown)
  bool gpu = false;
  // Optional evidence for the planner (planner.h); proposers may ignore it.
  // Achieved fraction of the roofline bound (0..1] for the baseline (roofline/):
  // urgency is the distance below it, and no idea can gain more than 1/headroom - 1.
  std::optional<double> headroom;
  // The binding ceiling as the roofline names it ("compute", "memory_bandwidth",
  // "kv_capacity", "overhead") or a diagnosis ("decode", "prefill", "queueing");
  // empty: diagnose from baseline_metrics.
  std::string bottleneck;
  // The stock baseline's bench metrics by name (mean_ttft_ms, kv_usage_max, ...).
  std::map<std::string, double> baseline_metrics;
  // Relative noise of one measured gain (the A/A noise floor), when known.
  std::optional<double> noise_floor;
};

// The failure_kind of an INVALID candidate whose own run served no valid measurement
// ("invalid: no token arrived inside the measurement window": a stalled server), as a
// session reports it and a surface records it. Other INVALIDs (the incumbent's trial
// failed, a faulted run) leave failure_kind empty: they say nothing about the candidate.
inline constexpr std::string_view kNoValidRunPrefix = "invalid: ";

// A launch failure a configuration can explain (not a port race, a model that does not
// load, a health timeout or a flag the engine rejects): what a launch conflict is
// learned from.
inline bool ConfigurationExplains(std::string_view failure_kind) {
  return failure_kind == "context_create" || failure_kind == "out_of_memory" || failure_kind == "crashed" ||
         failure_kind == "exited";
}

// A knowledge-base failure (kb::FailureKindName) of a value at a match confidence this
// high (the same identity and operating point) is a launch failure the planner takes as
// its own: the value is not launched alone again, and it is retried with its partners.
inline constexpr double kKnownLaunchFailureConfidence = 0.9;
inline bool KnownLaunchFailure(std::string_view kb_failure_kind, double confidence) {
  return confidence >= kKnownLaunchFailureConfidence &&
         (kb_failure_kind == "crashed" || kb_failure_kind == "out_of_memory" || kb_failure_kind == "timeout");
}

struct Observation {
  Candidate candidate;
  Config config;
  Verdict verdict = Verdict::kPending;  // the candidate's final verdict (core/verdict.h)
  double gain = 0;
  std::string failure_kind;
  // The candidate's own run served no valid measurement (see kNoValidRunPrefix).
  bool no_valid_run() const { return verdict == Verdict::kInvalid && failure_kind.starts_with(kNoValidRunPrefix); }
};

class Proposer {
 public:
  virtual ~Proposer() = default;
  virtual std::optional<Candidate> Next(const ProposalContext& ctx) = 0;
  virtual void Observe(const Observation& obs) = 0;
  virtual std::string Save() const = 0;
  virtual Status Load(const std::string& saved) = 0;
  // A readable summary of what was tried and what remains (for the report).
  virtual std::string Describe() const = 0;
  // Launch conflicts this proposer learned from the session's own trials (each a
  // sub-configuration whose values do not launch together, cache_type_k=q8_0 with
  // flash_attn=on), for the knowledge base; none by default.
  virtual std::vector<Config> LearnedConflicts() const { return {}; }
};

}  // namespace hone::search
