#include "fleet/local_executor.h"

#include <algorithm>
#include <cstdio>

#include "core/strings.h"
#include "sys/machine.h"

namespace hone::fleet {

LocalExecutor::LocalExecutor(LocalExecutorOptions options) : options_(std::move(options)) {
  if (options_.cpus.empty()) options_.cpus = sys::AvailableCpus();
  cpu_busy_.assign(options_.cpus.size(), false);
  gpu_busy_.assign(static_cast<size_t>(std::max(0, options_.gpus)), false);
}

LocalExecutor::~LocalExecutor() {
  for (auto& job : jobs_) {
    if (job->child) job->child->Stop(options_.stop_grace);
  }
}

int LocalExecutor::CpusFor(const JobResources& r) const {
  return std::clamp(r.cpus, 1, static_cast<int>(options_.cpus.size()));
}

int LocalExecutor::Capacity(const JobResources& r) const {
  int n = static_cast<int>(options_.cpus.size()) / CpusFor(r);
  if (r.gpus > 0) n = std::min(n, options_.gpus / r.gpus);
  if (options_.max_parallel > 0) n = std::min(n, options_.max_parallel);
  return n;
}

std::string LocalExecutor::Describe() const {
  std::string cpus;
  for (size_t i = 0; i < options_.cpus.size(); ++i) cpus += (i ? "," : "") + std::to_string(options_.cpus[i]);
  return "local: " + std::to_string(options_.cpus.size()) + " CPUs (" + cpus + "), " + std::to_string(options_.gpus) +
         " GPUs" + (options_.max_parallel > 0 ? ", at most " + std::to_string(options_.max_parallel) + " at once" : "");
}

Status LocalExecutor::CheckCanRun(const std::vector<JobResources>& needs) {
  for (const JobResources& r : needs) {
    if (r.gpus > options_.gpus) {
      return FailedPrecondition("a session needs " + std::to_string(r.gpus) + " GPUs; this host has " +
                                std::to_string(options_.gpus) + " (use the slurm executor, or fewer GPUs)");
    }
  }
  return Ok();
}

LocalExecutor::Job* LocalExecutor::Find(const std::string& id) {
  for (auto& j : jobs_) {
    if (j->id == id) return j.get();
  }
  return nullptr;
}

const LocalExecutor::Job* LocalExecutor::Find(const std::string& id) const {
  for (const auto& j : jobs_) {
    if (j->id == id) return j.get();
  }
  return nullptr;
}

std::vector<int> LocalExecutor::PinnedCpus(const std::string& id) const {
  const Job* j = Find(id);
  return j && j->status.phase == JobPhase::kRunning ? j->cpus : std::vector<int>{};
}

Result<std::vector<std::string>> LocalExecutor::Submit(const JobBatch& batch) {
  std::vector<std::string> ids;
  for (const JobSpec& spec : batch.jobs) {
    auto job = std::make_unique<Job>();
    job->id = "local-" + std::to_string(next_id_++);
    job->spec = spec;
    job->after = batch.after;
    job->status = {JobPhase::kPending, -1, "PENDING", batch.after.empty() ? "queued" : "dependency", ""};
    ids.push_back(job->id);
    jobs_.push_back(std::move(job));
  }
  StartReady();
  return ids;
}

void LocalExecutor::Release(Job& job) {
  for (int cpu : job.cpus) {
    auto it = std::find(options_.cpus.begin(), options_.cpus.end(), cpu);
    if (it != options_.cpus.end()) cpu_busy_[static_cast<size_t>(it - options_.cpus.begin())] = false;
  }
  for (int gpu : job.gpus) gpu_busy_[static_cast<size_t>(gpu)] = false;
}

void LocalExecutor::Reap() {
  sys::Clock& clock = options_.clock != nullptr ? *options_.clock : sys::DefaultClock();
  for (auto& job : jobs_) {
    if (job->status.phase != JobPhase::kRunning) continue;
    auto exited = job->child->Poll();
    double limit_s = job->spec.resources.time_limit_s;
    if (!exited && limit_s > 0 && static_cast<double>(clock.MonoNanos() - job->started_ns) * 1e-9 > limit_s) {
      sys::ExitStatus st = job->child->Stop(options_.stop_grace);
      job->status = {JobPhase::kFinished, st.signal ? 128 + st.signal : st.code, "TIMEOUT",
                     "stopped after its time limit (" + HumanSeconds(limit_s) + ")", job->status.node};
      Release(*job);
      continue;
    }
    if (!exited) continue;
    int code = exited->signal ? 128 + exited->signal : exited->code;
    job->status = {JobPhase::kFinished, code, code == 0 ? "COMPLETED" : "FAILED", exited->ToString(),
                   job->status.node};
    Release(*job);
  }
}

bool LocalExecutor::TryStart(Job& job) {
  const int want_cpus = CpusFor(job.spec.resources);
  const int want_gpus = job.spec.resources.gpus;
  int running = 0;
  for (const auto& j : jobs_) running += j->status.phase == JobPhase::kRunning ? 1 : 0;
  if (options_.max_parallel > 0 && running >= options_.max_parallel) return false;
  std::vector<size_t> cpu_idx, gpu_idx;
  for (size_t i = 0; i < cpu_busy_.size() && static_cast<int>(cpu_idx.size()) < want_cpus; ++i) {
    if (!cpu_busy_[i]) cpu_idx.push_back(i);
  }
  for (size_t i = 0; i < gpu_busy_.size() && static_cast<int>(gpu_idx.size()) < want_gpus; ++i) {
    if (!gpu_busy_[i]) gpu_idx.push_back(i);
  }
  if (static_cast<int>(cpu_idx.size()) < want_cpus || static_cast<int>(gpu_idx.size()) < want_gpus) return false;
  job.cpus.clear();
  job.gpus.clear();
  for (size_t i : cpu_idx) job.cpus.push_back(options_.cpus[i]);
  for (size_t i : gpu_idx) job.gpus.push_back(static_cast<int>(i));
  sys::ProcessSpec ps;
  ps.argv = job.spec.argv;
  ps.env = job.spec.env;
  ps.cwd = job.spec.cwd;
  ps.log_path = job.spec.log_path;
  ps.cpus = job.cpus;
  ps.ring_bytes = 16 * 1024;
  std::string cpu_list, gpu_list;
  for (int c : job.cpus) cpu_list += (cpu_list.empty() ? "" : ",") + std::to_string(c);
  for (int g : job.gpus) gpu_list += (gpu_list.empty() ? "" : ",") + std::to_string(g);
  ps.env["HONE_FLEET_CPUS"] = cpu_list;
  ps.env["CUDA_VISIBLE_DEVICES"] = gpu_list;  // "" hides every GPU from a CPU session
  auto child = sys::ChildProcess::Start(ps);
  if (!child) {
    job.status = {JobPhase::kFinished, 127, "FAILED", "could not start: " + child.error().message, "localhost"};
    return true;  // it "ran" and failed: the driver records it
  }
  for (size_t i : cpu_idx) cpu_busy_[i] = true;
  for (size_t i : gpu_idx) gpu_busy_[i] = true;
  job.child = std::move(*child);
  sys::Clock& clock = options_.clock != nullptr ? *options_.clock : sys::DefaultClock();
  job.started_ns = clock.MonoNanos();
  job.status = {JobPhase::kRunning, -1, "RUNNING", "cpus " + cpu_list + (gpu_list.empty() ? "" : ", gpus " + gpu_list),
                "localhost"};
  return true;
}

void LocalExecutor::StartReady() {
  for (auto& job : jobs_) {
    if (job->status.phase != JobPhase::kPending) continue;
    bool ready = true;
    for (const std::string& dep : job->after) {
      const Job* d = Find(dep);
      ready = ready && (d == nullptr || d->status.phase == JobPhase::kFinished);
    }
    if (!ready) {
      job->status.reason = "dependency";
      continue;
    }
    if (!TryStart(*job)) job->status.reason = "resources";
  }
}

Result<std::map<std::string, JobStatus>> LocalExecutor::Poll(const std::vector<std::string>& ids) {
  Reap();
  StartReady();
  std::map<std::string, JobStatus> out;
  for (const std::string& id : ids) {
    const Job* j = Find(id);
    out[id] = j ? j->status : JobStatus{JobPhase::kUnknown, -1, "UNKNOWN", "not started by this driver", ""};
  }
  return out;
}

Status LocalExecutor::Cancel(const std::vector<std::string>& ids) {
  for (const std::string& id : ids) {
    Job* j = Find(id);
    if (j == nullptr || j->status.phase == JobPhase::kFinished) continue;
    if (j->status.phase == JobPhase::kRunning) {
      sys::ExitStatus st = j->child->Stop(options_.stop_grace);
      j->status = {JobPhase::kFinished, st.signal ? 128 + st.signal : st.code, "CANCELLED", "cancelled",
                   j->status.node};
      Release(*j);
    } else {
      j->status = {JobPhase::kFinished, -1, "CANCELLED", "cancelled before it started", ""};
    }
  }
  return Ok();
}

}  // namespace hone::fleet
