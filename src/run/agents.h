// The session's agents (spec `agents:`, docs/agents.md): the LLM runtime, the
// orchestrator behind an AgentProposer (with the session's planner as its fallback),
// robustness, and a critic reviewing every measured verdict. Agents propose and
// review; they never measure, and the critic's refusal is only a veto
// (session/comparison.h's Decide).
//
// BuildAgents checks everything before the session starts: an unknown mode, a missing
// key variable, an unreachable endpoint or a missing CLI is one error line (with
// `required: false`, a warning and the planner alone). `hone run --agents none` sets the
// mode to none before this runs. The backend's one-line events (credentials rejected,
// the spending cap reached) go to the progress lines and the report.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "agent/agent_proposer.h"
#include "agent/critic.h"
#include "agent/orchestrator.h"
#include "agent/robustness.h"
#include "agent/runtime.h"
#include "agent/transport.h"
#include "core/verdict.h"
#include "run/context.h"
#include "search/planner.h"
#include "search/proposer.h"
#include "session/services.h"
#include "session/state.h"
#include "spec/session_spec.h"
#include "target/catalog.h"

namespace hone::run {

struct Agents {
  std::unique_ptr<agent::AgentData> data;
  std::unique_ptr<agent::AgentRuntime> runtime;
  std::unique_ptr<agent::Orchestrator> orchestrator;
  std::unique_ptr<agent::Robustness> robustness;
  std::unique_ptr<agent::Critic> critic;
  agent::AgentProposer* proposer = nullptr;   // owned by the session's proposer when the orchestrator runs
  std::unique_ptr<search::Proposer> planner;  // the planner behind it (owned here then)
  std::vector<std::string> roles;             // the roles that run
  std::string backend;                        // the backend's name ("openai:model@host")
  std::string warning;                        // why agents are off ("" when they run or were not asked for)
  std::shared_ptr<std::vector<std::string>> events = std::make_shared<std::vector<std::string>>();
  std::vector<std::string> knob_priors;       // the KB's learnings and failures, for the orchestrator
  bool active() const { return runtime != nullptr; }
};

struct AgentsInputs {
  const target::KnobCatalog* catalog = nullptr;  // required
  std::vector<std::string> exclude;              // knobs the planner's domain excludes
  std::vector<search::Prior> priors;             // the knowledge base's learnings and failures
  agent::EnvLookup env;                          // null: the process environment
  agent::Transport* transport = nullptr;         // null: the real one
};

// The agents the spec asks for. When the orchestrator runs, `proposer` (the session's
// planner) moves into Agents::planner and `proposer` becomes the AgentProposer over it.
// `run_dir` receives the redacted transcript (agent_calls.jsonl).
Result<Agents> BuildAgents(const spec::SessionSpec& spec, const std::string& run_dir, const RunContext& ctx,
                           const AgentsInputs& in, std::unique_ptr<search::Proposer>& proposer);

// Whether `url`'s host accepts a TCP connection within `timeout_s` (sends nothing).
Status ProbeEndpoint(const std::string& url, double timeout_s);

// The evidence the critic reviews for a measured verdict (the session's real noise
// floor included).
agent::Decision CriticDecision(const session::CandidateRecord& c, Verdict measured, double noise_floor);
// The coordinator's critic hook over `critic`; `noise_floor` reads the live session's.
std::function<Result<session::CriticNote>(const session::CandidateRecord&, Verdict)> CriticHook(
    agent::Critic& critic, std::function<double()> noise_floor);

// Lets the orchestrator see the live session (call once the coordinator exists).
void AttachState(Agents& agents, const session::SessionState& state);
// What the agents did, for the report: ideas proposed/measured/kept, critic refusals
// with their reasons, tokens and cost, stops, calibration ("" when agents were not
// asked for).
std::string AgentSummary(const Agents& agents, const session::SessionState& state);

}  // namespace hone::run
