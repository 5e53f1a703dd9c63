// FleetDriver: runs a fleet unattended, from its plan to its report.
//
// Prepare() lays out a new fleet directory: fleet.yaml (the file as given),
// specs/<session>.yaml (each generated session spec), fleet.json (the plan, every
// session "planned"), and the runs/, jobs/ and logs/ directories. Run() then submits
// the sessions wave by wave (each wave waits for the previous one, so later sessions
// start warm from the knowledge base the earlier ones wrote), watches the jobs, and
// judges each finished one by its run directory: a session whose state says "done"
// (it closed with its report) is done, whatever the exit code; any other end is a
// failed attempt, which is submitted again (the job resumes the session: nothing it
// validated is lost) until `retries` is spent, then recorded with the reason
// (scheduler state, exit code, the log's last lines).
//
// Every session's job is `hone fleet job DIR SESSION` (cli/cmd_fleet.cc): it runs
// `hone run` the first time and `hone resume` after, and records each attempt in
// jobs/<session>.json. A Slurm requeue after a node failure re-runs the same job,
// which resumes the same way. Run() returns when every session is done, failed or
// cancelled; on an interrupt (Ctrl-C) it returns early: local jobs stop (they are
// children of the driver), Slurm jobs keep running, and Run() on the same
// directory later picks everything up again. A file `cancel` in the directory
// (`hone fleet cancel`) makes the driver cancel every job and stop.
//
// Holds the directory's driver.lock while running: one driver per fleet. Not
// thread-safe.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "core/error.h"
#include "fleet/executor.h"
#include "fleet/fleet_spec.h"
#include "fleet/plan.h"
#include "fleet/record.h"
#include "sys/clock.h"
#include "sys/files.h"

namespace hone::fleet {

struct DriverOptions {
  std::string fleet_dir;     // absolute
  std::string hone_binary;   // the command each job runs (absolute)
  std::string cache_dir;     // passed to the jobs (--cache-dir), "" = theirs
  std::string data_dir;      // HONE_DATA_DIR for the jobs, "" = theirs
  std::string cwd;           // the jobs' working directory
  double poll_s = 5;
  sys::Clock* clock = nullptr;                         // sys::DefaultClock() when null
  std::function<void(const std::string&)> log;         // progress lines (stderr when null)
  std::function<bool()> interrupted;                   // sys::InterruptRequested when null
};

// Lays out a new fleet directory; kAlreadyExists when it already holds a fleet.
// `overrides`: the command line's overrides, kept in fleet.json for a resumed driver.
Status PrepareFleetDir(const FleetSpec& spec, const FleetPlan& plan, const std::string& spec_text,
                       const std::string& fleet_dir, const std::string& executor_detail,
                       const std::vector<std::pair<std::string, std::string>>& overrides = {});

class FleetDriver {
 public:
  FleetDriver(DriverOptions options, Executor& executor) : options_(std::move(options)), executor_(executor) {}
  FleetDriver(const FleetDriver&) = delete;
  FleetDriver& operator=(const FleetDriver&) = delete;

  // Runs (or continues) the fleet in options.fleet_dir until every session is
  // terminal, or an interrupt or cancel; returns the final state.
  Result<FleetState> Run();

  // The job that runs `session` (exposed for tests).
  JobSpec JobFor(const SessionEntry& session) const;

 private:
  Status Save();
  void Log(const std::string& line);
  Status SubmitPlanned();
  Status PollOnce();
  void Judge(SessionEntry& s, const JobStatus& st);
  Status Resubmit(SessionEntry& s, const std::string& why);
  Status CancelAll(const std::string& why);
  bool Interrupted() const;
  sys::Clock& clock() const { return options_.clock != nullptr ? *options_.clock : sys::DefaultClock(); }

  DriverOptions options_;
  Executor& executor_;
  FleetState state_;
};

// Fleet directory layout.
std::string SpecPath(const std::string& fleet_dir, const std::string& session);
std::string RunDir(const std::string& fleet_dir, const std::string& session);
std::string JobRecordPath(const std::string& fleet_dir, const std::string& session);
std::string LogPath(const std::string& fleet_dir, const std::string& session);

}  // namespace hone::fleet
