#include "fleet/driver.h"

#include <cstdio>
#include <filesystem>
#include <map>

#include "core/strings.h"
#include "kb/postgres.h"
#include "sys/signals.h"

namespace hone::fleet {

namespace fs = std::filesystem;

std::string SpecPath(const std::string& d, const std::string& s) { return (fs::path(d) / "specs" / (s + ".yaml")).string(); }
std::string RunDir(const std::string& d, const std::string& s) { return (fs::path(d) / "runs" / s).string(); }
std::string JobRecordPath(const std::string& d, const std::string& s) { return (fs::path(d) / "jobs" / (s + ".json")).string(); }
std::string LogPath(const std::string& d, const std::string& s) { return (fs::path(d) / "logs" / (s + ".log")).string(); }

namespace {

std::string WorkloadDetail(const spec::SessionSpec& spec) {
  const spec::WorkloadSpec& w = spec.workload;
  if (w.kind == "agentic") {
    return "c" + std::to_string(w.concurrency) + " trace " + (w.trace.empty() ? w.trace_preset : fs::path(w.trace).stem().string()) +
           " x" + std::to_string(w.trace_sessions);
  }
  return "c" + std::to_string(w.concurrency) + " " + std::to_string(w.isl) + "/" + std::to_string(w.osl);
}

}  // namespace

Status PrepareFleetDir(const FleetSpec& spec, const FleetPlan& plan, const std::string& spec_text,
                       const std::string& fleet_dir, const std::string& executor_detail,
                       const std::vector<std::pair<std::string, std::string>>& overrides) {
  if (sys::FileExists(fs::path(fleet_dir) / "fleet.json")) {
    return Fail(Error{ErrorCode::kAlreadyExists,
                      fleet_dir + " already holds a fleet (continue it with: hone fleet resume " + fleet_dir + ")", {}});
  }
  for (const char* sub : {"specs", "runs", "jobs", "logs"}) HONE_TRY(sys::EnsureDir(fs::path(fleet_dir) / sub));
  HONE_TRY(sys::WriteFileAtomic(fs::path(fleet_dir) / "fleet.yaml", spec_text));
  FleetState f;
  f.name = spec.name;
  f.source = spec.source;
  f.executor = spec.executor.kind;
  f.executor_detail = executor_detail;
  f.kb = kb::RedactUrl(spec.KbLocation());
  f.retries = spec.retries;
  f.created_unix_us = sys::DefaultClock().WallMicros();
  f.plan = plan.explanation;
  f.overrides = overrides;
  for (const PlannedSession& p : plan.order) {
    const FleetSession& s = spec.sessions[static_cast<size_t>(p.session)];
    HONE_TRY(sys::WriteFileAtomic(SpecPath(fleet_dir, s.name), s.spec_yaml));
    SessionEntry e;
    e.name = s.name;
    e.engine = s.engine;
    e.model = s.model;
    e.precision = s.precision;
    e.workload = s.workload;
    e.workload_kind = s.workload_kind;
    e.workload_detail = WorkloadDetail(s.spec);
    e.budget_s = s.budget_s;
    e.cpus = s.resources.cpus;
    e.gpus = s.resources.gpus;
    e.mem_mb = s.resources.mem_mb;
    e.time_limit_s = s.resources.time_limit_s;
    e.wave = p.wave;
    e.parent = p.parent < 0 ? "" : spec.sessions[static_cast<size_t>(p.parent)].name;
    e.relatedness = p.relatedness;
    f.sessions.push_back(std::move(e));
  }
  // Run order: wave by wave, the plan's order within a wave.
  std::stable_sort(f.sessions.begin(), f.sessions.end(),
                   [](const SessionEntry& a, const SessionEntry& b) { return a.wave < b.wave; });
  return WriteFleetState(fleet_dir, f);
}

void FleetDriver::Log(const std::string& line) {
  if (options_.log) {
    options_.log(line);
  } else {
    std::fprintf(stderr, "hone fleet: %s\n", line.c_str());
  }
}

bool FleetDriver::Interrupted() const {
  return options_.interrupted ? options_.interrupted() : sys::InterruptRequested();
}

Status FleetDriver::Save() { return WriteFleetState(options_.fleet_dir, state_); }

JobSpec FleetDriver::JobFor(const SessionEntry& s) const {
  JobSpec j;
  j.name = s.name;
  j.argv = {options_.hone_binary};
  if (!options_.cache_dir.empty()) j.argv.insert(j.argv.end(), {"--cache-dir", options_.cache_dir});
  j.argv.insert(j.argv.end(), {"fleet", "job", options_.fleet_dir, s.name});
  if (!options_.data_dir.empty()) j.env["HONE_DATA_DIR"] = options_.data_dir;
  j.cwd = options_.cwd;
  j.log_path = LogPath(options_.fleet_dir, s.name);
  j.resources = {s.cpus, s.gpus, s.mem_mb, s.time_limit_s};
  return j;
}

Status FleetDriver::SubmitPlanned() {
  std::map<int, std::vector<SessionEntry*>> waves;
  for (SessionEntry& s : state_.sessions) {
    if (s.status == "planned") waves[s.wave].push_back(&s);
  }
  for (auto& [wave, members] : waves) {
    JobBatch batch;
    // afterany on every earlier-wave session still in the queue (finished ones are
    // already in the knowledge base).
    for (const SessionEntry& s : state_.sessions) {
      if (s.wave < wave && (s.status == "queued" || s.status == "running") && !s.job_ids.empty()) {
        batch.after.push_back(s.job_ids.back());
      }
    }
    for (SessionEntry* s : members) batch.jobs.push_back(JobFor(*s));
    HONE_ASSIGN_OR_RETURN(std::vector<std::string> ids, executor_.Submit(batch));
    for (size_t i = 0; i < members.size(); ++i) {
      members[i]->job_ids.push_back(ids[i]);
      members[i]->status = "queued";
      members[i]->reason = batch.after.empty() ? "submitted" : "after wave " + std::to_string(wave - 1);
    }
    Log("wave " + std::to_string(wave) + ": " + std::to_string(members.size()) + " session(s) submitted (" +
        Join(ids, ", ") + ")");
    HONE_TRY(Save());
  }
  return Ok();
}

Status FleetDriver::Resubmit(SessionEntry& s, const std::string& why) {
  JobBatch batch;
  batch.jobs.push_back(JobFor(s));
  HONE_ASSIGN_OR_RETURN(std::vector<std::string> ids, executor_.Submit(batch));
  s.job_ids.push_back(ids.front());
  s.status = "queued";
  s.reason = why;
  Log(s.name + ": " + why + " -> job " + ids.front());
  return Ok();
}

void FleetDriver::Judge(SessionEntry& s, const JobStatus& st) {
  auto outcome = ReadRunOutcome(RunDir(options_.fleet_dir, s.name));
  if (outcome && outcome->Closed()) {
    s.status = "done";
    s.reason = outcome->stop_reason;
    Log(s.name + ": done (" + outcome->stop_reason + ")");
    return;
  }
  // A local job unknown to this executor was started by an earlier driver, which
  // took it down when it stopped: not the session's failure, so no retry is spent.
  if (st.phase == JobPhase::kUnknown && executor_.kind() == "local" && !state_.cancelled) {
    if (auto r = Resubmit(s, "resumed (its driver had stopped)"); !r) {
      s.status = "failed";
      s.reason = "could not resubmit: " + r.error().message;
    }
    return;
  }
  std::string why = st.state.empty() ? "ended" : st.state;
  if (st.exit_code >= 0) why += ", exit " + std::to_string(st.exit_code);
  if (!st.reason.empty() && st.reason != "None") why += " (" + st.reason + ")";
  auto record = ReadJobRecord(JobRecordPath(options_.fleet_dir, s.name));
  if (record && !record->attempts.empty()) {
    const Attempt& a = record->attempts.back();
    if (a.finished_unix_us > 0 && a.exit_code >= 0 && st.exit_code < 0) why += ", exit " + std::to_string(a.exit_code);
    if (a.finished_unix_us == 0) why += ", no end recorded (killed)";
  } else {
    why += ", never started";
  }
  if (outcome && outcome->has_state) why += "; session in " + outcome->phase + " after " + std::to_string(outcome->trials_run) + " trials";
  if (auto log = sys::ReadFile(LogPath(options_.fleet_dir, s.name))) {
    // The session's own error line when it printed one (the job's "attempt N ended"
    // line comes after it), else the log's last line.
    std::string tail(Trim(LastLines(*log, 1)));
    if (size_t e = log->rfind("hone: error:"); e != std::string::npos) {
      tail = std::string(Trim(log->substr(e, log->find('\n', e) - e)));
    }
    if (!tail.empty()) why += "; log: " + tail.substr(0, 200);
  }
  if (state_.cancelled) {
    s.status = "cancelled";
    s.reason = why;
    return;
  }
  int attempts = static_cast<int>(s.job_ids.size());
  if (attempts <= state_.retries) {
    if (auto r = Resubmit(s, "retry " + std::to_string(attempts) + " of " + std::to_string(state_.retries) +
                                 " after: " + why);
        r) {
      return;
    } else {
      why += "; resubmitting failed: " + r.error().message;
    }
  }
  s.status = "failed";
  s.reason = why;
  Log(s.name + ": failed: " + why);
}

Status FleetDriver::PollOnce() {
  std::vector<std::string> ids;
  for (const SessionEntry& s : state_.sessions) {
    if ((s.status == "queued" || s.status == "running") && !s.job_ids.empty()) ids.push_back(s.job_ids.back());
  }
  if (ids.empty()) return Ok();
  HONE_ASSIGN_OR_RETURN(auto statuses, executor_.Poll(ids));
  bool changed = false;
  for (SessionEntry& s : state_.sessions) {
    if ((s.status != "queued" && s.status != "running") || s.job_ids.empty()) continue;
    auto it = statuses.find(s.job_ids.back());
    JobStatus st = it != statuses.end() ? it->second : JobStatus{JobPhase::kUnknown, -1, "UNKNOWN", "", ""};
    std::string before = s.status + "|" + s.reason + "|" + s.node;
    switch (st.phase) {
      case JobPhase::kPending:
        s.status = "queued";
        s.reason = st.reason;
        break;
      case JobPhase::kRunning:
        if (s.status != "running") Log(s.name + ": running on " + (st.node.empty() ? "?" : st.node) + " (job " + s.job_ids.back() + ")");
        s.status = "running";
        s.reason = st.reason;
        s.node = st.node;
        break;
      case JobPhase::kFinished:
      case JobPhase::kUnknown:
        Judge(s, st);
        break;
    }
    changed = changed || before != s.status + "|" + s.reason + "|" + s.node;
  }
  if (changed) HONE_TRY(Save());
  return Ok();
}

Status FleetDriver::CancelAll(const std::string& why) {
  std::vector<std::string> ids;
  for (const SessionEntry& s : state_.sessions) {
    if ((s.status == "queued" || s.status == "running") && !s.job_ids.empty()) ids.push_back(s.job_ids.back());
  }
  state_.cancelled = true;
  auto cancelled = executor_.Cancel(ids);
  for (SessionEntry& s : state_.sessions) {
    if (!s.Terminal()) {
      auto outcome = ReadRunOutcome(RunDir(options_.fleet_dir, s.name));
      s.status = outcome && outcome->Closed() ? "done" : "cancelled";
      s.reason = s.status == "done" ? s.reason : why;
    }
  }
  Log("cancelled " + std::to_string(ids.size()) + " job(s): " + why);
  HONE_TRY(Save());
  return cancelled;
}

Result<FleetState> FleetDriver::Run() {
  auto lock = sys::FileLock::TryAcquire(fs::path(options_.fleet_dir) / "driver.lock");
  if (!lock) {
    return FailedPrecondition("another driver runs " + options_.fleet_dir +
                              " (see it with: hone fleet status " + options_.fleet_dir + ")");
  }
  HONE_ASSIGN_OR_RETURN(state_, ReadFleetState(options_.fleet_dir));
  // Sessions an earlier driver left interrupted continue where they stopped.
  for (SessionEntry& s : state_.sessions) {
    if (s.status == "interrupted") HONE_TRY(Resubmit(s, "resumed"));
  }
  std::vector<JobResources> needs;
  for (const SessionEntry& s : state_.sessions) needs.push_back({s.cpus, s.gpus, s.mem_mb, s.time_limit_s});
  HONE_TRY(executor_.CheckCanRun(needs));
  HONE_TRY(SubmitPlanned());
  const fs::path cancel_marker = fs::path(options_.fleet_dir) / "cancel";
  std::string poll_error;
  while (true) {
    if (sys::FileExists(cancel_marker) && !state_.cancelled) {
      (void)CancelAll("cancelled by hone fleet cancel");
      break;
    }
    if (Interrupted()) {
      if (executor_.kind() == "local") {
        std::vector<std::string> ids;
        for (SessionEntry& s : state_.sessions) {
          if ((s.status == "queued" || s.status == "running") && !s.job_ids.empty()) {
            ids.push_back(s.job_ids.back());
            s.status = "interrupted";
            s.reason = "the driver was interrupted";
          }
        }
        (void)executor_.Cancel(ids);  // the sessions save their state and stop
        Log("interrupted: " + std::to_string(ids.size()) + " session(s) stopped; continue with: hone fleet resume " +
            options_.fleet_dir);
      } else {
        Log("interrupted: the jobs keep running on the cluster; watch them again with: hone fleet resume " +
            options_.fleet_dir + " (or stop them: hone fleet cancel " + options_.fleet_dir + ")");
      }
      HONE_TRY(Save());
      return state_;
    }
    auto polled = PollOnce();
    if (!polled) {
      if (polled.error().message != poll_error) Log("polling the jobs failed (retrying): " + polled.error().message);
      poll_error = polled.error().message;
    } else {
      poll_error.clear();
    }
    bool all_done = true;
    for (const SessionEntry& s : state_.sessions) all_done = all_done && s.Terminal();
    if (all_done) break;
    // Sleep in short steps so an interrupt or a cancel is seen quickly.
    int64_t until = clock().MonoNanos() + static_cast<int64_t>(options_.poll_s * 1e9);
    while (clock().MonoNanos() < until && !Interrupted() && !sys::FileExists(cancel_marker)) {
      clock().SleepFor(std::chrono::milliseconds(200));
    }
  }
  state_.finished_unix_us = clock().WallMicros();
  HONE_TRY(Save());
  return state_;
}

}  // namespace hone::fleet
