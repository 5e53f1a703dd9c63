// The session's composition root: every collaborator a coordinator needs, built by
// one builder each (engine.h, executor.h, knowledge.h, search.h, roofline.h,
// enablement.h, lanes.h, agents.h) and owned here, and RunSession, which `hone run`
// and `hone resume` call once their flags are parsed.
//
// A broken data file (catalogs, data/*.yaml) stops the wiring with an error naming
// the file; optional parts that are merely absent (no knowledge base file, no device
// entry for the roofline) leave their hook null. Not thread-safe.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "chaos/plan.h"
#include "kb/match.h"
#include "kb/store.h"
#include "measure/server_executor.h"
#include "run/agents.h"
#include "run/context.h"
#include "run/enablement.h"
#include "run/engine.h"
#include "search/proposer.h"
#include "session/coordinator.h"
#include "session/state.h"
#include "spec/session_spec.h"
#include "sys/machine.h"

namespace hone::run {

struct SessionWiring {
  spec::SessionSpec spec;
  std::string run_dir;
  sys::MachineInfo machine;
  std::string hardware;      // the device the engine runs on (HardwareName)
  Engine engine;
  kb::MatchQuery kb_query;   // the session's identity and workload
  std::unique_ptr<measure::ServerTrialExecutor> executor;
  // Test runs only (docs/reliability.md): HONE_CHAOS_PLAN's faults for the real
  // executor, and HONE_TEST_EXECUTOR's scripted executor in its place.
  std::unique_ptr<chaos::FaultPlan> chaos;
  std::unique_ptr<measure::TrialExecutor> test_executor;
  std::unique_ptr<kb::RecipeStore> kb;  // null: disabled or unavailable
  std::string kb_error;                 // why an enabled knowledge base could not be opened ("" = fine)
  std::optional<kb::KbRules> kb_rules;  // the rules it was opened with (admission at close)
  std::unique_ptr<session::WarmStart> warm;
  std::unique_ptr<search::Proposer> proposer;
  Agents agents;
  EnablementLadder enablement;
  std::unique_ptr<session::PatchLane> patches;
  std::unique_ptr<session::KernelLane> kernel;
  std::unique_ptr<session::Closer> closer;
  session::SessionServices services;  // points into the above
};

// Builds everything for a session in `run_dir` (created if needed) on `machine`.
Result<std::unique_ptr<SessionWiring>> WireSession(const spec::SessionSpec& spec, const std::string& run_dir,
                                                   const RunContext& ctx, const sys::MachineInfo& machine);
// The same on this machine (sys::DescribeMachine).
Result<std::unique_ptr<SessionWiring>> WireSession(const spec::SessionSpec& spec, const std::string& run_dir,
                                                   const RunContext& ctx);

// The close's writer: the knowledge base's admission, the agents' summary, then the
// report, summary.json and report.html.
std::unique_ptr<session::Closer> MakeReportCloser(const SessionWiring& w, const RunContext& ctx);

// A resumed session's saved proposer state for the proposer wired now: an agent
// proposer's state gives its planner's when agents are off now; a planner's state is
// dropped when agents are on now (the planner restarts under them).
std::string AdaptSearchState(const std::string& saved, bool agents);

struct SessionOutcome {
  session::SessionState state;
  bool already_closed = false;  // resume of a session that had closed: nothing ran
};

// Runs a new session in `run_dir`, or (resume) continues the one whose state is there.
Result<SessionOutcome> RunSession(const spec::SessionSpec& spec, const std::string& run_dir, const RunContext& ctx,
                                  bool resume);

}  // namespace hone::run
