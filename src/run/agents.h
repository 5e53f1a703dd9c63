// The session's agents (spec `agents:`): the LLM runtime, the orchestrator behind an
// AgentProposer (with the deterministic planner as its fallback), robustness, and a
// critic reviewing every measured verdict. Agents propose and review; they never
// measure, and the critic's refusal is only a veto (session/comparison.h's Decide).
//
// `hone run` does not construct the roles yet (the spec's agents section is parsed
// and, unless its mode is none, reported as not wired): this builder holds what the
// session needs from them once they are, and the critic's and the orchestrator's
// view of the session.
#pragma once

#include <memory>
#include <string>

#include "agent/agent_proposer.h"
#include "agent/critic.h"
#include "agent/orchestrator.h"
#include "agent/robustness.h"
#include "agent/runtime.h"
#include "core/verdict.h"
#include "search/proposer.h"
#include "session/services.h"
#include "session/state.h"
#include "spec/session_spec.h"

namespace hone::run {

struct Agents {
  std::unique_ptr<agent::AgentData> data;
  std::unique_ptr<agent::AgentRuntime> runtime;
  std::unique_ptr<agent::Orchestrator> orchestrator;
  std::unique_ptr<agent::Robustness> robustness;
  std::unique_ptr<agent::Critic> critic;
  agent::AgentProposer* proposer = nullptr;  // owned by the session's proposer when agents run
  search::Proposer* fallback = nullptr;      // the planner behind it
};

// The agents the spec asks for (none yet: see the file comment).
Result<Agents> BuildAgents(const spec::SessionSpec& spec);

// The evidence the critic reviews for a measured verdict (the session's real noise
// floor included).
agent::Decision CriticDecision(const session::CandidateRecord& c, Verdict measured, double noise_floor);
// The coordinator's critic hook over `critic`; `noise_floor` reads the live session's.
std::function<Result<session::CriticNote>(const session::CandidateRecord&, Verdict)> CriticHook(
    agent::Critic& critic, std::function<double()> noise_floor);

// Lets the orchestrator see the live session (call once the coordinator exists).
void AttachState(Agents& agents, const session::SessionState& state);
// What the agents did, for the report ("" without agents).
std::string AgentSummary(const Agents& agents);

}  // namespace hone::run
