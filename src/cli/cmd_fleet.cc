// `hone fleet run|resume|status|report|cancel|job`: many sessions, unattended, on this
// host or a Slurm cluster, sharing one knowledge base (docs/fleet.md). Composition
// only: the fleet layer plans, drives and reports; this file picks the executor and
// runs each session's job as `hone run` / `hone resume` children.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>

#include "bench/metrics.h"
#include "cli/commands.h"
#include "core/strings.h"
#include "fleet/driver.h"
#include "fleet/local_executor.h"
#include "fleet/plan.h"
#include "fleet/slurm_executor.h"
#include "fleet/table.h"
#include "kb/rules.h"
#include "sys/clock.h"
#include "sys/files.h"
#include "sys/machine.h"
#include "sys/process.h"
#include "sys/signals.h"

namespace hone::cli {

namespace fs = std::filesystem;

namespace {

struct FleetOpts {
  std::string file;
  std::string dir;
  std::string session;
  std::string format = "md";
  std::string only;
  std::string budget;
  bool dry_run = false;
  fleet::FleetOverrides ov;
};

std::string SelfExe() {
  char exe[4096];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) return "hone";
  exe[n] = 0;
  return exe;
}

std::string Hostname() {
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  return host;
}

// The executor a fleet runs on (the scheduler's tools through ctx's process runner).
struct ExecutorBox {
  std::unique_ptr<fleet::Executor> executor;
};

ExecutorBox MakeExecutor(const fleet::FleetSpec& spec, const std::string& dir, const Context& ctx) {
  ExecutorBox box;
  if (spec.executor.kind == "slurm") {
    fleet::SlurmOptions o;
    o.spec = spec.executor;
    o.script_dir = (fs::path(dir) / "slurm").string();
    o.log_dir = (fs::path(dir) / "logs").string();
    o.job_name = "hone-" + spec.name;
    box.executor = std::make_unique<fleet::SlurmExecutor>(o, *ctx.runner);
  } else {
    fleet::LocalExecutorOptions o;
    o.gpus = static_cast<int>(sys::DescribeMachine().gpus.size());
    o.max_parallel = spec.executor.max_parallel;
    o.clock = ctx.clock;
    box.executor = std::make_unique<fleet::LocalExecutor>(o);
  }
  return box;
}

// "1 session at a time (2 CPUs each)" for each resource shape the fleet asks for.
std::string CapacityLine(const fleet::FleetSpec& spec, fleet::Executor& ex) {
  auto* local = dynamic_cast<fleet::LocalExecutor*>(&ex);
  if (local == nullptr) return ex.Describe();
  std::vector<std::string> parts;
  for (const fleet::FleetSession& s : spec.sessions) {
    std::string p = std::to_string(local->Capacity(s.resources)) + " session(s) at a time with " +
                    std::to_string(s.resources.cpus) + " CPUs" +
                    (s.resources.gpus ? " and " + std::to_string(s.resources.gpus) + " GPUs" : "") + " each";
    if (std::find(parts.begin(), parts.end(), p) == parts.end()) parts.push_back(p);
  }
  return ex.Describe() + ": " + Join(parts, "; ");
}

Result<fleet::FleetSpec> LoadWithOverrides(const std::string& file, const fleet::FleetOverrides& ov) {
  return fleet::LoadFleetSpec(file, bench::MetricNames(), ov);
}

fleet::DriverOptions MakeDriverOptions(const fleet::FleetSpec& spec, const std::string& dir, const Context& ctx) {
  fleet::DriverOptions d;
  d.fleet_dir = dir;
  d.hone_binary = !spec.executor.hone.empty() ? spec.executor.hone : SelfExe();
  d.cache_dir = !spec.executor.cache_dir.empty() ? spec.executor.cache_dir : fs::absolute(ctx.cache_dir).string();
  d.data_dir = fs::absolute(ctx.data_dir).string();
  d.cwd = fs::current_path().string();
  d.poll_s = spec.executor.poll_s;
  d.clock = ctx.clock;
  return d;
}

int Finish(const std::string& dir, const fleet::FleetState& state, const Context& ctx) {
  auto table = fleet::LoadFleetTable(dir, ctx.clock->WallMicros());
  if (!table) return ReportError(table.error());
  if (auto w = fleet::WriteFleetReports(*table, dir); !w) return ReportError(w.error());
  bool finished = state.finished_unix_us > 0;
  if (finished) {
    std::printf("%s\n", fleet::RenderFleetMarkdown(*table).c_str());
    std::printf("fleet report: %s/fleet-report.md (.html, .json)\n", dir.c_str());
  } else {
    std::printf("%s", fleet::RenderFleetStatus(*table).c_str());
  }
  if (!finished) return 130;
  return table->summary.failed > 0 || table->summary.cancelled > 0 ? 1 : 0;
}

int Drive(const fleet::FleetSpec& spec, const std::string& dir, const Context& ctx) {
  ExecutorBox box = MakeExecutor(spec, dir, ctx);
  fleet::FleetDriver driver(MakeDriverOptions(spec, dir, ctx), *box.executor);
  auto state = driver.Run();
  if (!state) return ReportError(state.error());
  return Finish(dir, *state, ctx);
}

int RunFleet(FleetOpts& o, const Context& ctx) {
  if (!o.only.empty()) o.ov.only = Split(o.only, ',');
  if (!o.budget.empty()) {
    auto b = spec::ParseDurationSeconds(o.budget);
    if (!b || *b <= 0) return ReportError(Error{ErrorCode::kInvalidArgument, "--budget: a duration such as 90s", {}});
    o.ov.budget_s = *b;
  }
  auto spec = LoadWithOverrides(o.file, o.ov);
  if (!spec) return ReportError(spec.error());
  auto rules = kb::LoadKbRules(ctx.data_dir);
  if (!rules) return ReportError(rules.error());
  fleet::FleetPlan plan = fleet::PlanFleet(spec->sessions, rules->fallback);
  std::string dir = !o.dir.empty()               ? o.dir
                    : !spec->output_dir.empty()  ? spec->output_dir
                                                 : "hone-fleets/" + spec->name + "-" +
                                                     ReplaceAll(sys::FormatUtc(ctx.clock->WallMicros()), ":", "");
  dir = fs::absolute(dir).lexically_normal().string();
  ExecutorBox box = MakeExecutor(*spec, dir, ctx);
  std::fprintf(stderr, "hone fleet: %s, %zu sessions in %d wave(s); %s\n", spec->name.c_str(), spec->sessions.size(),
               plan.waves, CapacityLine(*spec, *box.executor).c_str());
  for (const std::string& line : plan.explanation) std::fprintf(stderr, "  %s\n", line.c_str());
  if (o.dry_run) {
    for (const auto& s : spec->sessions) std::printf("--- %s\n%s", s.name.c_str(), s.spec_yaml.c_str());
    return 0;
  }
  auto text = sys::ReadFile(o.file);
  if (!text) return ReportError(text.error());
  if (auto p = fleet::PrepareFleetDir(*spec, plan, *text, dir, box.executor->Describe(), o.ov.ToPairs()); !p) {
    return ReportError(p.error());
  }
  std::fprintf(stderr, "hone fleet: directory %s\n", dir.c_str());
  box = {};  // the driver gets its own
  return Drive(*spec, dir, ctx);
}

Result<fleet::FleetSpec> SpecOfDir(const std::string& dir, const fleet::FleetState& state) {
  return LoadWithOverrides((fs::path(dir) / "fleet.yaml").string(), fleet::FleetOverrides::FromPairs(state.overrides));
}

int ResumeFleet(const FleetOpts& o, const Context& ctx) {
  std::string dir = fs::absolute(o.dir).lexically_normal().string();
  auto state = fleet::ReadFleetState(dir);
  if (!state) return ReportError(state.error());
  auto spec = SpecOfDir(dir, *state);
  if (!spec) return ReportError(spec.error());
  return Drive(*spec, dir, ctx);
}

int StatusFleet(const FleetOpts& o, const Context& ctx) {
  auto table = fleet::LoadFleetTable(o.dir, ctx.clock->WallMicros());
  if (!table) return ReportError(table.error());
  std::printf("%s", fleet::RenderFleetStatus(*table).c_str());
  return 0;
}

int ReportFleet(const FleetOpts& o, const Context& ctx) {
  auto table = fleet::LoadFleetTable(o.dir, ctx.clock->WallMicros());
  if (!table) return ReportError(table.error());
  if (auto w = fleet::WriteFleetReports(*table, o.dir); !w) return ReportError(w.error());
  if (o.format == "json") {
    std::printf("%s", fleet::RenderFleetJson(*table).c_str());
  } else if (o.format == "html") {
    std::printf("%s", fleet::RenderFleetHtml(*table).c_str());
  } else {
    std::printf("%s", fleet::RenderFleetMarkdown(*table).c_str());
  }
  std::fprintf(stderr, "fleet report: %s/fleet-report.md (.html, .json)\n", o.dir.c_str());
  return 0;
}

int CancelFleet(const FleetOpts& o, const Context& ctx) {
  std::string dir = fs::absolute(o.dir).lexically_normal().string();
  auto state = fleet::ReadFleetState(dir);
  if (!state) return ReportError(state.error());
  if (auto w = sys::WriteFileAtomic(fs::path(dir) / "cancel", "cancelled by hone fleet cancel\n"); !w) {
    return ReportError(w.error());
  }
  std::vector<std::string> ids;
  for (const fleet::SessionEntry& s : state->sessions) {
    if ((s.status == "queued" || s.status == "running") && !s.job_ids.empty()) ids.push_back(s.job_ids.back());
  }
  if (state->executor == "slurm") {
    // The cluster's jobs stop whether or not a driver still watches them.
    auto spec = SpecOfDir(dir, *state);
    if (!spec) return ReportError(spec.error());
    ExecutorBox box = MakeExecutor(*spec, dir, ctx);
    if (auto c = box.executor->Cancel(ids); !c) return ReportError(c.error());
    std::printf("scancel %s\n", Join(ids, " ").c_str());
  }
  // No driver running: record the cancel here (a running driver does it itself).
  if (auto lock = sys::FileLock::TryAcquire(fs::path(dir) / "driver.lock")) {
    state->cancelled = true;
    for (fleet::SessionEntry& s : state->sessions) {
      if (!s.Terminal()) {
        s.status = "cancelled";
        s.reason = "cancelled by hone fleet cancel";
      }
    }
    if (auto w = fleet::WriteFleetState(dir, *state); !w) return ReportError(w.error());
    std::printf("fleet %s cancelled (%zu job(s))\n", state->name.c_str(), ids.size());
  } else {
    std::printf("fleet %s: its driver cancels the remaining sessions within its poll interval\n",
                state->name.c_str());
  }
  return 0;
}

// One session's job: `hone run` the first time, `hone resume` after (a retry, or a
// Slurm requeue), each attempt recorded in jobs/<session>.json.
int RunJob(const FleetOpts& o, const Context& ctx) {
  std::string dir = fs::absolute(o.dir).lexically_normal().string();
  std::string record_path = fleet::JobRecordPath(dir, o.session);
  std::string spec_path = fleet::SpecPath(dir, o.session);
  std::string run_dir = fleet::RunDir(dir, o.session);
  if (!sys::FileExists(spec_path)) {
    return ReportError(Error{ErrorCode::kNotFound, "no session '" + o.session + "' in " + dir, {}});
  }
  // One job per session at a time (a driver retry racing a scheduler requeue must
  // not run the same session twice).
  auto lock = sys::FileLock::TryAcquire(fs::path(dir) / "jobs" / (o.session + ".lock"));
  if (!lock) {
    return ReportError(Error{ErrorCode::kFailedPrecondition,
                             "another job is running session " + o.session + " (" + lock.error().message + ")", {}});
  }
  fleet::JobRecord record;
  if (auto r = fleet::ReadJobRecord(record_path)) record = std::move(*r);
  record.session = o.session;
  for (fleet::Attempt& a : record.attempts) {
    if (a.finished_unix_us == 0 && a.note.empty()) a.note = "no end recorded (killed with its node or job)";
  }
  fleet::Attempt attempt;
  attempt.number = static_cast<int>(record.attempts.size()) + 1;
  attempt.mode = sys::FileExists(fs::path(run_dir) / "state.json") ? "resume" : "run";
  attempt.host = Hostname();
  const char* array_id = std::getenv("SLURM_ARRAY_JOB_ID");
  const char* task_id = std::getenv("SLURM_ARRAY_TASK_ID");
  const char* job_id = std::getenv("SLURM_JOB_ID");
  attempt.scheduler_job = array_id && task_id ? std::string(array_id) + "_" + task_id
                          : job_id            ? std::string(job_id)
                                              : "local";
  if (const char* r = std::getenv("SLURM_RESTART_COUNT")) attempt.restart = static_cast<int>(ParseInt(r).value_or(0));
  attempt.started_unix_us = ctx.clock->WallMicros();
  record.attempts.push_back(attempt);
  if (auto w = fleet::WriteJobRecord(record_path, record); !w) return ReportError(w.error());
  std::printf("hone fleet job: %s attempt %d (%s) on %s, job %s, CPUs %d\n", o.session.c_str(), attempt.number,
              attempt.mode.c_str(), attempt.host.c_str(), attempt.scheduler_job.c_str(),
              static_cast<int>(sys::AvailableCpus().size()));
  std::fflush(stdout);

  sys::ProcessSpec ps;
  ps.argv = {SelfExe(), "--cache-dir", fs::absolute(ctx.cache_dir).string()};
  if (attempt.mode == "run") {
    ps.argv.insert(ps.argv.end(), {"run", spec_path, "--out", run_dir});
  } else {
    ps.argv.insert(ps.argv.end(), {"resume", run_dir});
  }
  ps.log_path = fleet::LogPath(dir, o.session);
  ps.ring_bytes = 64 * 1024;
  int code = 1;
  auto child = sys::ChildProcess::Start(ps);
  if (!child) {
    record.attempts.back().note = "could not start hone: " + child.error().message;
  } else {
    while (true) {
      auto st = (*child)->WaitFor(std::chrono::seconds(1));
      if (st) {
        code = st->signal ? 128 + st->signal : st->code;
        break;
      }
      if (st.error().code == ErrorCode::kCancelled) {
        // Stopped by the scheduler or the driver: the session saves its state and
        // stops (it may have had the same signal: give it a moment first).
        auto own = (*child)->WaitFor(std::chrono::seconds(5), false);
        sys::ExitStatus es = own ? *own : (*child)->Stop(std::chrono::seconds(60));
        code = es.signal ? 128 + es.signal : es.code;
        record.attempts.back().note = "interrupted (signal " + std::to_string(sys::InterruptSignal()) + ")";
        break;
      }
    }
  }
  record.attempts.back().finished_unix_us = ctx.clock->WallMicros();
  record.attempts.back().exit_code = code;
  if (auto w = fleet::WriteJobRecord(record_path, record); !w) return ReportError(w.error());
  std::printf("hone fleet job: %s attempt %d ended: exit %d\n", o.session.c_str(), attempt.number, code);
  return code;
}

}  // namespace

Action RegisterFleet(CLI::App& app, const Context& ctx) {
  auto* cmd = app.add_subcommand("fleet", "Many sessions, unattended, sharing one knowledge base (docs/fleet.md)");
  cmd->require_subcommand(1);
  auto o = std::make_shared<FleetOpts>();
  auto* run = cmd->add_subcommand("run", "Run a fleet file: plan, run every session, write the fleet table");
  run->add_option("fleet", o->file, "Fleet file (YAML)")->required();
  run->add_option("--out", o->dir, "Fleet directory (default: the file's output_dir or hone-fleets/<name>-<time>)");
  run->add_option("--executor", o->ov.executor, "local | slurm (overrides the file)");
  run->add_option("--partition", o->ov.partition, "Slurm partition (overrides the file)");
  run->add_option("--kb", o->ov.kb, "Knowledge base: postgresql://... or a SQLite file (overrides the file)");
  run->add_option("--budget", o->budget, "Every session's budget (overrides the file), e.g. 90s");
  run->add_option("--only", o->only, "Only these sessions: names or prefixes ending in '*', comma-separated");
  run->add_option("--hone", o->ov.hone, "The hone binary the jobs run (default: this one)");
  run->add_flag("--dry-run", o->dry_run, "Print the plan and every session's spec; run nothing");
  auto* resume = cmd->add_subcommand("resume", "Continue a fleet: watch its jobs, resume interrupted sessions");
  resume->add_option("dir", o->dir, "Fleet directory")->required();
  auto* status = cmd->add_subcommand("status", "Show a fleet's sessions: status, job, phase, trials, gain");
  status->add_option("dir", o->dir, "Fleet directory")->required();
  auto* report = cmd->add_subcommand("report", "Write and print the fleet table (fleet-report.md, .html, .json)");
  report->add_option("dir", o->dir, "Fleet directory")->required();
  report->add_option("--format", o->format, "What to print: md | html | json")
      ->check(CLI::IsMember({"md", "html", "json"}));
  auto* cancel = cmd->add_subcommand("cancel", "Cancel a fleet's jobs (Slurm: scancel)");
  cancel->add_option("dir", o->dir, "Fleet directory")->required();
  auto* job = cmd->add_subcommand("job", "Run one session of a fleet (what each job runs)");
  job->add_option("dir", o->dir, "Fleet directory")->required();
  job->add_option("session", o->session, "Session name")->required();
  job->group("");  // internal: not listed in --help
  return [=, &ctx]() -> int {
    if (run->parsed()) return RunFleet(*o, ctx);
    if (resume->parsed()) return ResumeFleet(*o, ctx);
    if (status->parsed()) return StatusFleet(*o, ctx);
    if (report->parsed()) return ReportFleet(*o, ctx);
    if (cancel->parsed()) return CancelFleet(*o, ctx);
    if (job->parsed()) return RunJob(*o, ctx);
    return 2;
  };
}

}  // namespace hone::cli
