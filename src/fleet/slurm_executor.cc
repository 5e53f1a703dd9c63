#include "fleet/slurm_executor.h"

#include <cmath>
#include <filesystem>

#include "core/strings.h"
#include "sys/files.h"

namespace hone::fleet {

namespace fs = std::filesystem;

namespace {

std::string Replace(std::string s, const std::string& from, const std::string& to) { return ReplaceAll(s, from, to); }

// "0:0" -> 0, "1:0" -> 1, "0:15" -> 128 + 15 (killed by a signal).
int ParseExitCode(std::string_view text) {
  auto parts = Split(std::string(text), ':');
  int code = parts.empty() ? -1 : static_cast<int>(ParseInt(parts[0]).value_or(-1));
  int signal = parts.size() > 1 ? static_cast<int>(ParseInt(parts[1]).value_or(0)) : 0;
  return signal > 0 ? 128 + signal : code;
}

std::string FirstWord(std::string_view s) {
  std::string t(Trim(s));
  size_t sp = t.find(' ');
  return sp == std::string::npos ? t : t.substr(0, sp);
}

bool SameShape(const JobResources& a, const JobResources& b) {
  return a.cpus == b.cpus && a.gpus == b.gpus && a.mem_mb == b.mem_mb && a.time_limit_s == b.time_limit_s;
}

}  // namespace

JobPhase SlurmPhase(std::string_view state) {
  static const char* kPending[] = {"PENDING", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED", "RESV_DEL_HOLD", "CONFIGURING"};
  static const char* kRunning[] = {"RUNNING", "COMPLETING", "SUSPENDED", "STOPPED", "SIGNALING", "STAGE_OUT", "RESIZING"};
  for (const char* s : kPending) {
    if (state == s) return JobPhase::kPending;
  }
  for (const char* s : kRunning) {
    if (state == s) return JobPhase::kRunning;
  }
  return state.empty() ? JobPhase::kUnknown : JobPhase::kFinished;  // COMPLETED, FAILED, CANCELLED, NODE_FAIL, ...
}

std::map<std::string, JobStatus> ParseSqueue(const std::string& text) {
  std::map<std::string, JobStatus> out;
  for (const std::string& line : Split(text, '\n')) {
    auto f = Split(std::string(Trim(line)), '|');
    if (f.size() < 2 || f[0].empty()) continue;
    JobStatus s;
    s.state = FirstWord(f[1]);
    s.phase = SlurmPhase(s.state);
    if (f.size() > 2) s.reason = std::string(Trim(f[2]));
    if (f.size() > 3) s.node = std::string(Trim(f[3]));
    out[std::string(Trim(f[0]))] = s;
  }
  return out;
}

std::map<std::string, JobStatus> ParseSacct(const std::string& text) {
  std::map<std::string, JobStatus> out;
  for (const std::string& line : Split(text, '\n')) {
    auto f = Split(std::string(Trim(line)), '|');
    if (f.size() < 3 || f[0].empty()) continue;
    JobStatus s;
    s.state = FirstWord(f[1]);  // "CANCELLED by 0" -> CANCELLED
    s.phase = SlurmPhase(s.state);
    s.exit_code = ParseExitCode(f[2]);
    if (f.size() > 3) s.node = std::string(Trim(f[3]));
    s.reason = std::string(Trim(f[1]));
    out[std::string(Trim(f[0]))] = s;
  }
  return out;
}

std::optional<JobStatus> ParseScontrolJob(const std::string& text) {
  auto field = [&](const std::string& key) -> std::string {
    size_t at = 0;
    while ((at = text.find(key + "=", at)) != std::string::npos) {
      if (at == 0 || text[at - 1] == ' ' || text[at - 1] == '\n') break;
      at += key.size();
    }
    if (at == std::string::npos) return "";
    size_t start = at + key.size() + 1;
    size_t end = text.find_first_of(" \n", start);
    return text.substr(start, end == std::string::npos ? std::string::npos : end - start);
  };
  std::string state = field("JobState");
  if (state.empty()) return std::nullopt;
  JobStatus s;
  s.state = state;
  s.phase = SlurmPhase(state);
  s.reason = field("Reason");
  std::string exit = field("ExitCode");
  if (!exit.empty() && s.phase == JobPhase::kFinished) s.exit_code = ParseExitCode(exit);
  s.node = field("NodeList");
  if (s.node == "(null)") s.node.clear();
  return s;
}

std::string SlurmExecutor::Describe() const {
  const ExecutorSpec& e = options_.spec;
  return "slurm: partition " + (e.partition.empty() ? std::string("(default)") : e.partition) +
         (e.account.empty() ? "" : ", account " + e.account) + (e.qos.empty() ? "" : ", qos " + e.qos) +
         ", one job array per wave, --requeue";
}

Result<sys::CommandOutput> SlurmExecutor::RunTool(const std::vector<std::string>& argv) {
  auto out = runner_.Run({.argv = argv, .ring_bytes = 1 << 20}, options_.command_timeout);
  if (!out) return Fail(std::move(out).error().Wrap(argv[0]));
  return out;
}

Status SlurmExecutor::CheckCanRun(const std::vector<JobResources>&) {
  HONE_ASSIGN_OR_RETURN(sys::CommandOutput q, RunTool({"squeue", "--me", "-h", "-o", "%i"}));
  if (!q.status.success()) {
    return FailedPrecondition("the Slurm controller does not answer (squeue: " +
                              std::string(Trim(LastLines(q.output, 3))) + ")");
  }
  return Ok();
}

std::string SlurmExecutor::BatchScript(const std::vector<JobSpec>& jobs, const std::vector<std::string>& after) const {
  const ExecutorSpec& e = options_.spec;
  const JobResources& r = jobs.front().resources;
  const bool array = jobs.size() > 1;
  std::string s = "#!/bin/bash\n";
  auto opt = [&](const std::string& o) { s += "#SBATCH " + o + "\n"; };
  opt("--job-name=" + options_.job_name);
  opt("--nodes=1");
  opt("--ntasks=1");
  opt("--cpus-per-task=" + std::to_string(r.cpus));
  if (r.time_limit_s > 0) opt("--time=" + std::to_string(static_cast<int64_t>(std::ceil(r.time_limit_s / 60))));
  if (r.mem_mb > 0) opt("--mem=" + std::to_string(r.mem_mb) + "M");
  if (r.gpus > 0) opt(Replace(e.gpu_request, "{n}", std::to_string(r.gpus)));
  if (!e.partition.empty()) opt("--partition=" + e.partition);
  if (!e.account.empty()) opt("--account=" + e.account);
  if (!e.qos.empty()) opt("--qos=" + e.qos);
  opt("--requeue");            // a node failure re-runs the job, which resumes the session
  opt("--open-mode=append");   // a re-run adds to the logs instead of truncating them
  opt("--output=" + (fs::path(options_.log_dir) / (array ? "slurm-%A_%a.out" : "slurm-%j.out")).string());
  if (!jobs.front().cwd.empty()) opt("--chdir=" + jobs.front().cwd);
  if (array) opt("--array=0-" + std::to_string(jobs.size() - 1));
  if (!after.empty()) opt("--dependency=afterany:" + Join(after, ":"));
  for (const std::string& a : e.sbatch_args) opt(a);
  s += "# hone fleet: " + std::to_string(jobs.size()) + " session job(s)\n";
  for (const std::string& line : e.setup) s += line + "\n";
  s += "case \"${SLURM_ARRAY_TASK_ID:-0}\" in\n";
  for (size_t i = 0; i < jobs.size(); ++i) {
    const JobSpec& j = jobs[i];
    s += "  " + std::to_string(i) + ")  # " + j.name + "\n";
    for (const auto& [k, v] : j.env) s += "    export " + k + "=" + ShellQuote(v) + "\n";
    std::string cmd;
    for (const std::string& a : j.argv) cmd += (cmd.empty() ? "" : " ") + ShellQuote(a);
    s += "    exec " + cmd + " >>" + ShellQuote(j.log_path) + " 2>&1 ;;\n";
  }
  s += "esac\necho \"hone fleet: no job for array index ${SLURM_ARRAY_TASK_ID:-0}\" >&2\nexit 2\n";
  return s;
}

Result<std::vector<std::string>> SlurmExecutor::SubmitShape(const std::vector<JobSpec>& jobs,
                                                             const std::vector<std::string>& after) {
  HONE_TRY(sys::EnsureDir(options_.script_dir));
  HONE_TRY(sys::EnsureDir(options_.log_dir));
  std::string script = (fs::path(options_.script_dir) / ("batch-" + std::to_string(next_script_) + ".sh")).string();
  while (sys::FileExists(script)) {  // a restarted driver keeps the earlier scripts
    script = (fs::path(options_.script_dir) / ("batch-" + std::to_string(++next_script_) + ".sh")).string();
  }
  ++next_script_;
  HONE_TRY(sys::WriteFileAtomic(script, BatchScript(jobs, after)));
  HONE_ASSIGN_OR_RETURN(sys::CommandOutput out, RunTool({"sbatch", "--parsable", script}));
  std::string text(Trim(out.output));
  auto id = ParseInt(text.substr(0, text.find(';')));
  if (!out.status.success() || !id) {
    return Fail(Error{ErrorCode::kFailedPrecondition, "sbatch refused " + script + ": " + LastLines(text, 3),
                      {{"script", script}}});
  }
  std::vector<std::string> ids;
  if (jobs.size() == 1) {
    ids.push_back(std::to_string(*id));
  } else {
    for (size_t i = 0; i < jobs.size(); ++i) ids.push_back(std::to_string(*id) + "_" + std::to_string(i));
  }
  return ids;
}

Result<std::vector<std::string>> SlurmExecutor::Submit(const JobBatch& batch) {
  // One array per resource shape (an array's tasks share their resources), in order.
  std::vector<std::string> ids(batch.jobs.size());
  std::vector<bool> done(batch.jobs.size(), false);
  for (size_t i = 0; i < batch.jobs.size(); ++i) {
    if (done[i]) continue;
    std::vector<JobSpec> shape;
    std::vector<size_t> where;
    for (size_t j = i; j < batch.jobs.size(); ++j) {
      if (!done[j] && SameShape(batch.jobs[i].resources, batch.jobs[j].resources)) {
        shape.push_back(batch.jobs[j]);
        where.push_back(j);
        done[j] = true;
      }
    }
    HONE_ASSIGN_OR_RETURN(std::vector<std::string> got, SubmitShape(shape, batch.after));
    for (size_t k = 0; k < where.size(); ++k) ids[where[k]] = got[k];
  }
  return ids;
}

Result<std::map<std::string, JobStatus>> SlurmExecutor::Poll(const std::vector<std::string>& ids) {
  std::map<std::string, JobStatus> out;
  HONE_ASSIGN_OR_RETURN(sys::CommandOutput q, RunTool({"squeue", "--me", "-h", "-r", "-o", "%i|%T|%r|%N"}));
  if (!q.status.success()) {
    return Unavailable("squeue failed: " + std::string(Trim(LastLines(q.output, 3))));
  }
  std::map<std::string, JobStatus> queued = ParseSqueue(q.output);
  std::vector<std::string> gone;
  for (const std::string& id : ids) {
    if (auto it = queued.find(id); it != queued.end()) {
      out[id] = it->second;
    } else {
      gone.push_back(id);
    }
  }
  if (gone.empty()) return out;
  if (sacct_works_) {
    auto a = RunTool({"sacct", "-n", "-P", "-X", "-j", Join(gone, ","), "-o", "JobID,State,ExitCode,NodeList"});
    if (a && a->status.success() && !Contains(a->output, "accounting storage is disabled")) {
      std::map<std::string, JobStatus> acct = ParseSacct(a->output);
      std::vector<std::string> still;
      for (const std::string& id : gone) {
        if (auto it = acct.find(id); it != acct.end()) {
          out[id] = it->second;
        } else {
          still.push_back(id);
        }
      }
      gone = std::move(still);
    } else if (a && Contains(a->output, "accounting storage is disabled")) {
      sacct_works_ = false;
    }
  }
  for (const std::string& id : gone) {
    auto sc = RunTool({"scontrol", "show", "job", id});
    std::optional<JobStatus> s;
    if (sc && sc->status.success()) s = ParseScontrolJob(sc->output);
    out[id] = s ? *s : JobStatus{JobPhase::kUnknown, -1, "UNKNOWN", "no longer known to Slurm", ""};
  }
  return out;
}

Status SlurmExecutor::Cancel(const std::vector<std::string>& ids) {
  if (ids.empty()) return Ok();
  std::vector<std::string> argv = {"scancel"};
  argv.insert(argv.end(), ids.begin(), ids.end());
  HONE_ASSIGN_OR_RETURN(sys::CommandOutput out, RunTool(argv));
  if (!out.status.success()) return Unavailable("scancel failed: " + std::string(Trim(LastLines(out.output, 3))));
  return Ok();
}

}  // namespace hone::fleet
