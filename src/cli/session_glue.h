// The session's real collaborators, wired for `hone run` and `hone resume`: the
// knowledge base as a WarmStart and at close, the report writer, the enablement
// ladder from data/enablement.yaml, and the objects a session needs (adapter,
// provisioned engine, model store, executor, proposer). Lives in cli/ because this
// is composition: it only connects layers.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "cli/context.h"
#include "core/error.h"
#include "agent/agent_proposer.h"
#include "agent/critic.h"
#include "agent/orchestrator.h"
#include "agent/robustness.h"
#include "agent/runtime.h"
#include "chaos/plan.h"
#include "kb/store.h"
#include "measure/model_store.h"
#include "measure/server_executor.h"
#include "search/proposer.h"
#include "session/coordinator.h"
#include "session/kernel_lane.h"
#include "session/patch_lane.h"
#include "spec/session_spec.h"
#include "sys/machine.h"
#include "target/llamacpp.h"

namespace hone::cli {

struct SessionWiring {
  spec::SessionSpec spec;
  std::string run_dir;
  sys::MachineInfo machine;
  target::Provisioned engine;
  std::unique_ptr<target::Adapter> adapter;
  std::string model_path;
  std::string model_name;
  std::string base_precision;
  std::unique_ptr<measure::ModelStore> models;
  std::unique_ptr<measure::ServerTrialExecutor> executor;
  // Test runs only (docs/reliability.md): HONE_CHAOS_PLAN's faults for the real
  // executor, and HONE_TEST_EXECUTOR's scripted executor in its place.
  std::unique_ptr<chaos::FaultPlan> chaos;
  std::unique_ptr<measure::TrialExecutor> test_executor;
  std::unique_ptr<search::Proposer> proposer;
  std::unique_ptr<kb::RecipeStore> kb;
  std::string kb_error;                // why the knowledge base could not be opened ("" = fine)
  std::optional<kb::KbRules> kb_rules;
  std::unique_ptr<session::WarmStart> warm;
  std::unique_ptr<session::Closer> closer;
  std::unique_ptr<session::PatchLane> patches;
  std::unique_ptr<session::KernelLane> kernel;
  // Agents (spec agents.mode != none): the orchestrator behind an AgentProposer (with
  // the deterministic proposer as its fallback) and a critic reviewing every verdict.
  std::unique_ptr<agent::AgentData> agent_data;
  std::unique_ptr<agent::AgentRuntime> agent_runtime;
  std::unique_ptr<agent::Orchestrator> orchestrator;
  std::unique_ptr<agent::Robustness> robustness;
  std::unique_ptr<agent::Critic> critic;
  std::unique_ptr<search::Proposer> fallback_proposer;
  agent::AgentProposer* agent_proposer = nullptr;  // owned by `proposer` when agents run
  session::SessionServices services;
};

// Builds everything for a session in `run_dir` (created if needed).
Result<std::unique_ptr<SessionWiring>> WireSession(const spec::SessionSpec& spec, const std::string& run_dir,
                                                   const Context& ctx);

// Lets the agents see the live session (call once the coordinator exists).
void AttachState(SessionWiring& w, const session::SessionState& state);
// What the agents did, for the report ("" without agents).
std::string AgentSummary(const SessionWiring& w);

// The hardware a session's engine runs on (spec override, else the GPU for a GPU
// session, the CPU otherwise): names recipes, the report and the roofline entry.
std::string HardwareName(const SessionWiring& w);
// The knowledge-base identity and workload of a session.
kb::Identity SessionIdentity(const SessionWiring& w);
kb::Workload SessionWorkload(const spec::SessionSpec& spec);

}  // namespace hone::cli
