// The collaborators a session's coordinator is given (SessionServices): the trial
// executor and the proposer (required), the clock, and optional lanes and hooks —
// the knowledge base's warm start, source patches, a kernel backend, the closer that
// writes the report, the critic, the roofline. Interfaces only; the real ones are
// built by src/run/, the fakes live in src/testing/.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/config.h"
#include "core/error.h"
#include "core/verdict.h"
#include "measure/trial.h"
#include "search/proposer.h"
#include "session/state.h"
#include "sys/clock.h"

namespace hone::session {

struct WarmCandidate {
  Config config;
  double recorded_gain = 0;
  std::string explanation;
  int64_t recipe_id = 0;
};

// How the replay of a recipe went in this session.
struct ReplayResult {
  Verdict verdict = Verdict::kPending;
  double gain = 0;                     // vs this session's stock baseline
  bool accuracy_passed = true;
  std::vector<std::string> trial_ids;  // the replay's own trials
  std::string detail;
  std::string session_id;
};

// The knowledge base as the coordinator sees it. The knowledge base alone decides
// whether a replay reproduced its recipe (or, at another operating point, transferred);
// RecordReplay returns that judgment in words for the report.
class WarmStart {
 public:
  virtual ~WarmStart() = default;
  virtual std::optional<WarmCandidate> Match(std::string* explanation) = 0;
  virtual std::string RecordReplay(const WarmCandidate& c, const ReplayResult& r) = 0;
};

// A kernel backend as the coordinator sees it: given the best config, returns
// candidate configurations that enable verified kernels (measured end to end here).
class KernelLane {
 public:
  virtual ~KernelLane() = default;
  // `note` receives what the backend did (for the report), whatever it returns.
  virtual Result<std::vector<search::Candidate>> Propose(const SessionState& state, std::string* note) = 0;
};

// Source patches (user-given diffs or backports): applied in an isolated worktree,
// rebuilt, measured through the coordinator and committed or reverted (patch/).
struct PatchIdea {
  std::string id;
  std::string title;
};
enum class PatchStatus { kKept, kReverted, kRejected, kBuildFailed, kError };
struct PatchResult {
  PatchStatus status = PatchStatus::kError;
  std::string reason;
  std::string binary;   // when kept: a persistent copy of the patched server binary
  std::string diffstat;
  std::string stopped_by;  // the policy rule or check that stopped it
  double build_seconds = 0;
};
class PatchLane {
 public:
  virtual ~PatchLane() = default;
  virtual std::vector<PatchIdea> Pending(const SessionState& state) = 0;
  // Applies and builds the patch, calls `measure` with the built binary (true = keep),
  // and commits or reverts accordingly.
  virtual Result<PatchResult> Try(const PatchIdea& idea,
                                  const std::function<Result<bool>(const std::string& binary)>& measure) = 0;
  // The longest the next Try's build may run: what the session's budget has left for it
  // after the patch's trials and the close (the budget is hard; a first build is priced
  // at nothing, and a cold llama.cpp build takes minutes).
  virtual void LimitBuild(std::chrono::seconds) {}
};

// Writes the report, summary and knowledge-base recipe at close.
class Closer {
 public:
  virtual ~Closer() = default;
  virtual Status Close(SessionState& state) = 0;
};

// What the roofline analysis says about a measured configuration.
struct RooflineNote {
  std::string summary;     // one line: bound, measured/bound, bound class
  double ratio = 0;        // measured / bound
  bool saturated = false;  // at the ceiling: another cycle cannot help
  std::string bound_class; // compute | memory_bandwidth | kv_capacity | overhead
};

struct CriticNote {
  bool approve = true;
  std::string reason;
  std::string learning;
  std::string signature;
};

struct SessionServices {
  measure::TrialExecutor* executor = nullptr;
  search::Proposer* proposer = nullptr;
  sys::Clock* clock = nullptr;
  WarmStart* warm_start = nullptr;  // optional
  KernelLane* kernel = nullptr;     // optional
  PatchLane* patches = nullptr;     // optional
  Closer* closer = nullptr;         // optional
  // Whether changing these knobs can change outputs (the catalog's accuracy risk).
  std::function<bool(const Config& delta)> risky;
  // Enablement ladder: configuration changes to try for a launch failure kind.
  std::function<std::vector<Config>(const std::string& failure_kind)> enablement;
  // Re-tuning at a sweep point (optional): variants of `config` for this operating
  // point (the knobs that track the load, set for it), each a complete configuration.
  std::function<std::vector<Config>(const Config& config, const measure::OperatingPoint& point)> point_variants;
  std::function<void(const std::string& line)> progress;
  // A critic reviewing every measured verdict (optional). It can only make an
  // outcome more conservative: its refusal is a veto (Decide) that turns a measured
  // KEEP into REVERT; an approval never creates a KEEP. Errors mean "no review"
  // (recorded). `measured` is what the paired comparison said.
  std::function<Result<CriticNote>(const CandidateRecord& c, Verdict measured)> critic;
  // Roofline analysis of a configuration's measured throughput (optional).
  std::function<Result<RooflineNote>(const Config& config, double total_tps, double output_tps)> roofline;
  int cpus = 1;
  int cores = 0;  // the host's physical cores (an engine's `auto` threads); 0: unknown
  bool gpu = false;
};

}  // namespace hone::session
