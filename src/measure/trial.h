// Trials: one hermetic end-to-end measurement of one configuration.
//
// A trial is: fresh server process group -> health -> warm-up -> measured benchmark
// -> teardown, with a fixed seed (every trial sends the same prompts) and a cold
// server cache (a new process). Its directory trials/<id>/ holds config.json,
// command.txt, server.log, result.json, records.jsonl and outcome.json, so every
// number hone reports can be traced to the trial that measured it. A failed launch
// is an outcome (classified failure kind), not an error.
//
// TrialExecutor is the seam between the session coordinator and real servers:
// ServerTrialExecutor (below) runs them; tests drive the coordinator with fakes.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bench/metrics.h"
#include "bench/openai.h"
#include "bench/trace.h"
#include "measure/accuracy.h"
#include "core/config.h"
#include "core/error.h"
#include "spec/session_spec.h"
#include "target/adapter.h"

namespace hone::measure {

struct OperatingPoint {
  int concurrency = 1;
  int64_t isl = 0;
  int64_t osl = 0;
  std::string Label() const;  // "c4 isl128 osl32"
  friend bool operator==(const OperatingPoint&, const OperatingPoint&) = default;
};

// Why a trial runs; its name is the "role" in the trial's config.json and outcome.json.
enum class TrialRole {
  kWarmup,      // discarded first launch (page cache, lazy init)
  kBaseline,    // the stock configuration, first arm of an A/A pair
  kAa,          // the stock configuration again, second arm of an A/A pair
  kScreen,      // one unpaired trial of a candidate
  kIncumbent,   // a candidate's A arm
  kCandidate,   // a candidate's B arm
  kReplay,      // a knowledge-base recipe riding along the baseline
  kEnablement,  // a rung of the enablement ladder
  kSweep,       // both arms at a sweep operating point
  kValidate,    // both arms of the close's re-validation
  kSurface,     // `hone search record`: a response-surface sample
};
std::string_view TrialRoleName(TrialRole role);
Result<TrialRole> ParseTrialRole(std::string_view name);

struct TrialRequest {
  std::string id;    // "t0007"
  TrialRole role = TrialRole::kCandidate;
  Config config;     // the full configuration (stock merged with the candidate)
  OperatingPoint point;
  std::string server_binary;  // a patched build to run instead of the provisioned one
  std::string retry_of;       // the faulted trial this one measures again ("" = a first attempt)
};

struct TrialOutcome {
  std::string id;
  TrialRole role = TrialRole::kCandidate;
  Config config;
  OperatingPoint point;
  bool launched = false;
  std::string failure_kind;    // when !launched: bad_flag, out_of_memory, ...; "cut" when an
                               // interrupt or the session's deadline stopped it (launched or not)
  std::string failure_detail;
  bool cut() const { return failure_kind == "cut"; }
  bool valid = false;          // launched, and the benchmark run is a result
  std::vector<std::string> invalid_reasons;
  // What misbehaved in a launched trial ("connection_reset x2", "server_exited ...");
  // a faulted trial is never a measurement (valid is false) and is measured again once.
  std::vector<std::string> faults;
  std::string retry_of;        // the faulted trial this one measures again
  std::string injected;        // test runs only: the fault a chaos plan injected
  std::vector<std::string> relaunches;  // launches that failed and were retried (a port race)
  int server_pid = 0;          // the server's process (group) id, for post-mortems
  double objective = 0;
  bool slo_ok = true;
  std::vector<std::string> slo_violations;
  double error_rate = 0;
  double wall_s = 0;
  double startup_s = 0;
  int64_t start_unix_us = 0;
  std::string dir;
  std::string command;
  bench::BenchResult result;
};

struct AccuracyOutcome {
  bool passed = true;
  bool ran = false;
  double token_agreement = 1.0;
  int probes_compared = 0;               // teacher-forced positions compared
  std::optional<double> kld_mean;        // the KL divergence that gated (full or estimated)
  std::optional<double> same_top;
  std::optional<double> kl_estimate;     // from the server's top-k logprobs
  int kl_positions = 0;
  std::optional<double> ppl_ratio;       // llama-perplexity: PPL(candidate)/PPL(stock)
  std::string detail;
};

class TrialExecutor {
 public:
  virtual ~TrialExecutor() = default;
  // Runs one trial. Errors are infrastructure failures (a directory that cannot be
  // written, an interrupt); launch failures and invalid runs are outcomes.
  virtual Result<TrialOutcome> Run(const TrialRequest& request) = 0;
  // Captures the accuracy reference from the stock configuration (once per session).
  virtual Status PrepareAccuracy(const Config& stock) = 0;
  // Compares `config`'s outputs with the reference.
  virtual Result<AccuracyOutcome> CheckAccuracy(const Config& config, const std::string& label,
                                                const std::string& server_binary = "") = 0;
  // The gate's method, thresholds and A/A spread (after PrepareAccuracy).
  virtual AccuracyGateInfo AccuracyGate() const { return {}; }
};

// Objective value and SLO check of a result under a spec.
struct ObjectiveCheck {
  double value = 0;
  bool available = false;
  bool slo_ok = true;
  std::vector<std::string> violations;
};
ObjectiveCheck EvaluateObjective(const bench::BenchResult& r, const spec::ObjectiveSpec& objective);

// The objective's SLOs judged on the requests pooled over several trials of one
// configuration (bench::PoolResults): what every KEEP, the stock, the close and the
// sweep are held to. `excess` is the largest relative miss (0 when every SLO is met;
// 1e9 when a metric is unavailable), to name the closest configuration when none
// meets the SLOs.
struct PooledSlo {
  bool ok = true;
  int trials = 0;
  int requests = 0;  // successful requests pooled
  std::vector<std::string> violations;
  double excess = 0;
  // "meets p90_itl_ms <= 50 (pooled over 48 requests of 3 trials)" / "p90_itl_ms = 61 violates ..."
  std::string Describe() const;
};
PooledSlo CheckPooledSlo(const std::vector<const bench::BenchResult*>& results, const spec::ObjectiveSpec& objective);

// The transport and server faults in a benchmark result, one entry per error
// category that is not the configuration's doing ("connection_reset x2"): refused
// or reset connections, stalls, timeouts, truncated or malformed streams, 429 and
// 5xx answers, error events, dripped responses. Context overflows, other 4xx and
// output-length mismatches are properties of the workload, not faults.
std::vector<std::string> FaultsOf(const bench::BenchResult& result);

// Reads a finished trial back from its directory (for resume and reports).
Result<TrialOutcome> ReadTrialOutcome(const std::string& dir);
Status WriteTrialOutcome(const TrialOutcome& o);

}  // namespace hone::measure
