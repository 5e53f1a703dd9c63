// SlurmExecutor: the fleet's jobs as Slurm batch jobs.
//
// A batch becomes one sbatch submission: a job array (--array=0-N) when it has
// several jobs, with the resources each session needs (--cpus-per-task, --mem, the
// GPU request, --time = budget + margin), the fleet's partition, account and qos,
// --requeue (Slurm re-runs the job when its node fails; the job resumes the session),
// and --dependency=afterany on the batch's `after` jobs. Jobs of one batch with
// different resources go out as one array per resource shape. The batch script is
// written into the fleet directory (slurm/batch-N.sh): array index i runs job i's
// command with its output appended to its log; Slurm's own messages go to
// logs/slurm-<array>_<index>.out. Job ids are "<array>_<index>" (or "<job>").
//
// Status: squeue (-r: one line per array task) for jobs the queue still holds; for the
// rest sacct when the cluster has accounting, else `scontrol show job` (until
// MinJobAge), else kUnknown (the driver then reads the job's own record). Cancel is
// scancel by job id. Every command runs through the process seam (sys::ProcessRunner:
// the real one in `hone`, a scripted fake in the tests).
#pragma once

#include <string>
#include <vector>

#include "fleet/executor.h"
#include "sys/process.h"

namespace hone::fleet {

struct SlurmOptions {
  ExecutorSpec spec;        // partition, account, qos, gpu_request, sbatch_args, setup
  std::string script_dir;   // where batch scripts go
  std::string log_dir;      // where Slurm's own output files go
  std::string job_name = "hone";
  std::chrono::milliseconds command_timeout{60000};
};

class SlurmExecutor final : public Executor {
 public:
  SlurmExecutor(SlurmOptions options, sys::ProcessRunner& runner) : options_(std::move(options)), runner_(runner) {}

  std::string_view kind() const override { return "slurm"; }
  std::string Describe() const override;
  Status CheckCanRun(const std::vector<JobResources>& needs) override;
  Result<std::vector<std::string>> Submit(const JobBatch& batch) override;
  Result<std::map<std::string, JobStatus>> Poll(const std::vector<std::string>& ids) override;
  Status Cancel(const std::vector<std::string>& ids) override;

  // The batch script for jobs sharing one resource shape (exposed for tests and docs).
  std::string BatchScript(const std::vector<JobSpec>& jobs, const std::vector<std::string>& after) const;

 private:
  Result<sys::CommandOutput> RunTool(const std::vector<std::string>& argv);
  Result<std::vector<std::string>> SubmitShape(const std::vector<JobSpec>& jobs, const std::vector<std::string>& after);

  SlurmOptions options_;
  sys::ProcessRunner& runner_;
  int next_script_ = 1;
  bool sacct_works_ = true;  // false once the cluster said it has no accounting
};

// Parsers of the tools' output (pure; tested on captured text).
// squeue -h -r -o '%i|%T|%r|%N' lines -> id -> status.
std::map<std::string, JobStatus> ParseSqueue(const std::string& text);
// sacct -n -P -X -o JobID,State,ExitCode,NodeList lines -> id -> status.
std::map<std::string, JobStatus> ParseSacct(const std::string& text);
// `scontrol show job ID` -> status (nullopt: no such job).
std::optional<JobStatus> ParseScontrolJob(const std::string& text);
// The phase a Slurm job state word means (PENDING, RUNNING, COMPLETED, NODE_FAIL, ...).
JobPhase SlurmPhase(std::string_view state);

}  // namespace hone::fleet
