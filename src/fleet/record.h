// The fleet directory's files, read and written here (JSON stays at this edge):
//
//   fleet.json          FleetState: the plan and every session's status and jobs,
//                       rewritten atomically by the driver.
//   jobs/<session>.json JobRecord: each attempt of a session's job (run or resume,
//                       host, scheduler ids, start, end, exit code), written by the
//                       job itself (`hone fleet job`), so it survives the driver.
//   runs/<session>/     the session's run directory; RunOutcome is what its
//                       state.json and summary.json say.
//
// Plain values; each file is written atomically (temp + fsync + rename).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/error.h"

namespace hone::fleet {

// ---- a session's job attempts ----

struct Attempt {
  int number = 1;
  std::string mode;            // run | resume
  std::string host;
  std::string scheduler_job;   // SLURM_JOB_ID (array: <array id>_<index>), or "local"
  int restart = 0;             // SLURM_RESTART_COUNT: requeues by the scheduler
  int64_t started_unix_us = 0;
  int64_t finished_unix_us = 0;  // 0: never recorded (still running, or killed hard)
  int exit_code = -1;
  std::string note;
};

struct JobRecord {
  std::string session;
  std::vector<Attempt> attempts;
  // Seconds the attempts ran (an unfinished one up to `now_unix_us`, or not at all when 0).
  double WallSeconds(int64_t now_unix_us) const;
};

Result<JobRecord> ReadJobRecord(const std::string& path);  // kNotFound when absent
Status WriteJobRecord(const std::string& path, const JobRecord& r);

// ---- what a session's run directory says ----

struct RunOutcome {
  bool has_state = false;
  std::string phase;          // prelude | framework | ... | done
  int trials_run = 0;
  std::string stop_reason;
  bool has_summary = false;   // written at close
  std::string metric;
  bool maximize = true;
  double stock = 0;           // validated stock value, else the baseline
  double best = 0;            // validated best value, else the stock's
  bool validated = false;     // the close re-measured best against stock
  double gain = 0;            // relative, direction-adjusted
  double ci_lo = 0, ci_hi = 0;  // ratio interval
  std::string verdict;        // the close's verdict (KEEP, INCONCLUSIVE, ...)
  std::string accuracy;       // the close's accuracy check
  std::string model;
  uint64_t model_parameters = 0;
  std::string precision;
  std::string hardware;
  std::string framework_version;
  std::string warm_replay;
  std::string kb_result;
  bool replayed = false;      // a knowledge-base recipe was replayed in the prelude

  bool Closed() const { return has_state && phase == "done"; }
  // The validated gain as a ratio: 1 + gain when the close kept it (KEEP), else 1.
  double ValidatedRatio() const;
  // "cold", "warm (replayed: ...)" or "warm (priors)".
  std::string Start() const;
};

// Reads state.json and summary.json (either may be missing: a session not started,
// or not closed yet). kDataLoss when a file is there but unreadable.
Result<RunOutcome> ReadRunOutcome(const std::string& run_dir);

// ---- the fleet ----

struct SessionEntry {
  std::string name;
  std::string engine;
  std::string model;
  std::string precision;
  std::string workload;       // label
  std::string workload_kind;
  std::string workload_detail;  // "c2 128/32" or "c4 trace cpu"
  double budget_s = 0;
  int cpus = 0, gpus = 0;
  int64_t mem_mb = 0;
  double time_limit_s = 0;
  int wave = 0;
  std::string parent;         // the session it follows ("" = cold root)
  double relatedness = 0;
  // planned | queued | running | done | failed | cancelled | interrupted
  std::string status = "planned";
  std::vector<std::string> job_ids;  // one per submission, latest last
  std::string reason;         // why pending, or why it failed
  std::string node;

  bool Terminal() const { return status == "done" || status == "failed" || status == "cancelled"; }
};

struct FleetState {
  std::string name;
  std::string source;         // the fleet file as given
  std::string executor;       // local | slurm
  std::string executor_detail;
  std::string kb;             // where the knowledge base is (no password)
  int retries = 1;
  int64_t created_unix_us = 0;
  int64_t finished_unix_us = 0;
  bool cancelled = false;
  // The command line's overrides of the fleet file (FleetOverrides), so a resumed
  // driver and `hone fleet cancel` see the fleet as it was started.
  std::vector<std::pair<std::string, std::string>> overrides;
  std::vector<std::string> plan;  // the ordering's explanation
  std::vector<SessionEntry> sessions;  // in run order
};

Result<FleetState> ReadFleetState(const std::string& fleet_dir);
Status WriteFleetState(const std::string& fleet_dir, const FleetState& s);

}  // namespace hone::fleet
