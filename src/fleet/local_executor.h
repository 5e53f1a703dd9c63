// LocalExecutor: the fleet's jobs as child processes on this host (the default).
//
// The host's CPUs (this process's affinity mask) and GPUs are the pool. A job takes
// `cpus` CPUs and `gpus` GPUs from it while it runs — the lowest free ids, so its
// share is contiguous when it can be — and is pinned to them: its process and all
// it starts (hone run, llama-server) run on those CPUs only (sched_setaffinity), and
// see only those GPUs (CUDA_VISIBLE_DEVICES). No two jobs share a CPU, so no two
// benchmarks run on the same cores; as many jobs run at once as the pool allows
// (and max_parallel, when set). A job asking for more CPUs than the host has gets
// all of them.
//
// Queued jobs start in submission order, each once its `after` jobs have finished,
// skipping over a job that does not fit yet (first fit). Every job runs in its own
// process group with a guard (sys::ChildProcess): if the driver dies, its jobs die
// with it, and a job that outlives its time limit is stopped (TERM, then KILL).
// Poll() reaps and starts jobs; the destructor stops whatever still runs. Not
// thread-safe.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "fleet/executor.h"
#include "sys/clock.h"
#include "sys/process.h"

namespace hone::fleet {

struct LocalExecutorOptions {
  std::vector<int> cpus;  // the pool (default: sys::AvailableCpus())
  int gpus = 0;           // GPUs on this host
  int max_parallel = 0;   // 0: as many as the pool allows
  std::chrono::milliseconds stop_grace{60000};  // TERM -> KILL when cancelling (a session saves its state)
  sys::Clock* clock = nullptr;  // time limits; sys::DefaultClock() when null
};

class LocalExecutor final : public Executor {
 public:
  explicit LocalExecutor(LocalExecutorOptions options);
  ~LocalExecutor() override;
  LocalExecutor(const LocalExecutor&) = delete;
  LocalExecutor& operator=(const LocalExecutor&) = delete;

  std::string_view kind() const override { return "local"; }
  std::string Describe() const override;
  Status CheckCanRun(const std::vector<JobResources>& needs) override;
  Result<std::vector<std::string>> Submit(const JobBatch& batch) override;
  Result<std::map<std::string, JobStatus>> Poll(const std::vector<std::string>& ids) override;
  Status Cancel(const std::vector<std::string>& ids) override;

  // How many jobs needing `r` can run at once here.
  int Capacity(const JobResources& r) const;
  // The CPUs a running job is pinned to (empty when not running).
  std::vector<int> PinnedCpus(const std::string& id) const;

 private:
  struct Job {
    std::string id;
    JobSpec spec;
    std::vector<std::string> after;
    JobStatus status;
    std::unique_ptr<sys::ChildProcess> child;
    std::vector<int> cpus, gpus;
    int64_t started_ns = 0;
  };
  Job* Find(const std::string& id);
  const Job* Find(const std::string& id) const;
  void Reap();
  void StartReady();
  bool TryStart(Job& job);
  void Release(Job& job);
  int CpusFor(const JobResources& r) const;

  LocalExecutorOptions options_;
  std::vector<std::unique_ptr<Job>> jobs_;
  std::vector<bool> cpu_busy_;  // by index into options_.cpus
  std::vector<bool> gpu_busy_;
  int next_id_ = 1;
};

}  // namespace hone::fleet
