// Executor: where the fleet's session jobs run. The fleet driver hands it batches of
// jobs and watches them; the executor owns placement, resources and the scheduler's
// vocabulary.
//
//   local  (fleet/local_executor.h): child processes on this host, as many at once as
//          its CPUs and GPUs allow, each pinned to its own CPUs and GPUs.
//   slurm  (fleet/slurm_executor.h): one sbatch job array per batch, status from
//          squeue (then sacct or scontrol), scancel, requeue on node failure.
//
// A batch is a list of jobs with the same dependencies: they may start once every job
// in `after` has finished (whatever its outcome: "afterany"), in the order given.
// Kubernetes Jobs fit the same shape: a batch is one Indexed Job (completionMode:
// Indexed; JOB_COMPLETION_INDEX plays SLURM_ARRAY_TASK_ID), `after` is kept by the
// executor (it creates the Job when the previous ones completed), Poll reads the
// Jobs' conditions, Cancel deletes them, a pod lost with its node is retried by the
// Job's backoffLimit, and logs go to the same shared fleet directory.
//
// Job ids are the executor's own strings ("local-3", "8812_4"); the driver stores them
// in fleet.json and may hand them back to a new executor of the same kind (a driver
// restarted on a fleet whose jobs still run). Not thread-safe.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/error.h"
#include "fleet/fleet_spec.h"

namespace hone::fleet {

struct JobSpec {
  std::string name;                        // unique in the fleet (the session's name)
  std::vector<std::string> argv;           // the command: hone fleet job DIR SESSION
  std::map<std::string, std::string> env;  // on top of the job's environment
  std::string cwd;                         // where the command runs
  std::string log_path;                    // stdout and stderr, appended (each attempt adds to it)
  JobResources resources;
};

struct JobBatch {
  std::vector<JobSpec> jobs;
  std::vector<std::string> after;  // job ids that must finish first (any outcome)
};

enum class JobPhase {
  kPending,   // waiting: dependencies, resources, the queue, or a requeue
  kRunning,
  kFinished,  // the scheduler says it ended: exit_code, state
  kUnknown,   // the scheduler no longer knows it (the driver decides from the job's own record)
};
std::string_view JobPhaseName(JobPhase p);

// Single-quotes a word for a POSIX shell ("it's" -> 'it'\''s').
std::string ShellQuote(const std::string& word);

struct JobStatus {
  JobPhase phase = JobPhase::kPending;
  int exit_code = -1;   // when finished and known
  std::string state;    // the scheduler's word: PENDING, RUNNING, COMPLETED, FAILED, NODE_FAIL, ...
  std::string reason;   // why pending, or how it ended
  std::string node;     // where it runs or ran
};

class Executor {
 public:
  virtual ~Executor() = default;
  virtual std::string_view kind() const = 0;
  // One line for the log: capacity, partition, pinning.
  virtual std::string Describe() const = 0;
  // Checks that every job can ever run here (enough CPUs/GPUs, a reachable scheduler);
  // kFailedPrecondition saying what is missing.
  virtual Status CheckCanRun(const std::vector<JobResources>& needs) = 0;
  // Submits a batch; returns the jobs' ids in order.
  virtual Result<std::vector<std::string>> Submit(const JobBatch& batch) = 0;
  // The status of each id (ids this executor does not know are kUnknown). The local
  // executor also starts queued jobs here, so the driver calls it regularly.
  virtual Result<std::map<std::string, JobStatus>> Poll(const std::vector<std::string>& ids) = 0;
  // Stops the jobs (pending ones never start).
  virtual Status Cancel(const std::vector<std::string>& ids) = 0;
};

}  // namespace hone::fleet
