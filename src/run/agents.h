// The session's agents (spec `agents:`, docs/agents.md): the LLM runtime, the
// orchestrator behind an AgentProposer (with the session's planner as its fallback),
// robustness, a critic reviewing every measured verdict, and the specialist writing a
// diff for each of the spec's agents.specialist_tasks (through SpecialistWriter, the
// patch lane's writer: session/patch_lane.h; the critic signs off or refuses each
// diff). Agents propose and review; they never measure, and the critic's refusal is
// only a veto (session/comparison.h's Decide).
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
#include "agent/specialist.h"
#include "agent/transport.h"
#include "core/verdict.h"
#include "run/context.h"
#include "search/planner.h"
#include "search/proposer.h"
#include "session/patch_lane.h"
#include "session/services.h"
#include "session/state.h"
#include "spec/session_spec.h"
#include "target/catalog.h"

namespace hone::run {

// The specialist and the critic as the patch lane's writer: Write() runs the
// specialist in its own worktree (under work_dir) at the accepted commit; Review()
// asks a fresh critic about the exact diff. Remembers each attempt (author, the
// summary's cut-out claims, the failure) for the report. Not thread-safe.
class SpecialistWriter final : public session::PatchWriter {
 public:
  struct Attempt {
    std::string goal_id;
    std::string author;               // "" when the specialist failed
    std::vector<std::string> claims;  // numeric claims cut from its summary (never measurements)
    std::string error;                // why no diff came back ("" when one did)
  };
  SpecialistWriter(agent::LlmClient& client, const agent::AgentData& data, agent::Critic& critic,
                   std::unique_ptr<policy::Rules> rules, std::string work_dir, std::string target, std::string context)
      : rules_(std::move(rules)), specialist_(client, data, rules_.get()), critic_(critic),
        work_dir_(std::move(work_dir)), target_(std::move(target)), context_(std::move(context)) {}
  Result<session::WrittenPatch> Write(const session::PatchGoal& goal, const std::string& repo,
                                      const std::string& base_commit) override;
  Result<policy::CriticReview> Review(const session::PatchGoal& goal, const session::WrittenPatch& patch) override;
  const std::vector<Attempt>& attempts() const { return attempts_; }

 private:
  std::unique_ptr<policy::Rules> rules_;  // before specialist_, which points at it
  agent::Specialist specialist_;
  agent::Critic& critic_;
  std::string work_dir_, target_, context_;
  std::vector<Attempt> attempts_;
};

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
  // With the specialist role: agents.specialist_tasks as the patch lane's goals, and
  // their writer (run/lanes.h's BuildPatchLane hands both to the lane).
  std::vector<session::PatchGoal> goals;
  std::unique_ptr<SpecialistWriter> writer;
  bool active() const { return runtime != nullptr; }
};

struct AgentsInputs {
  const target::KnobCatalog* catalog = nullptr;  // required
  std::vector<std::string> exclude;              // knobs the planner's domain excludes
  std::vector<search::Prior> priors;             // the knowledge base's learnings and failures
  std::vector<std::string> kb_notes;             // its critic notes (KbNoteLines)
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
// with their reasons, the specialist's diffs and their outcomes, tokens and cost,
// stops, calibration ("" when agents were not asked for).
std::string AgentSummary(const Agents& agents, const session::SessionState& state);

}  // namespace hone::run
