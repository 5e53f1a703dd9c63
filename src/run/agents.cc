#include "run/agents.h"

#include "sys/term.h"

namespace hone::run {

Result<Agents> BuildAgents(const spec::SessionSpec& spec) {
  if (spec.agents.mode != "none") {
    sys::LogWarn("agents." + spec.agents.mode + " is not wired into hone run yet: the planner searches alone");
  }
  return Agents{};
}

agent::Decision CriticDecision(const session::CandidateRecord& c, Verdict measured, double noise_floor) {
  agent::Decision d;
  d.subject = c.id;
  d.idea = c.idea;
  d.incumbent = c.incumbent.ToString();
  d.config = c.config.ToString();
  d.measured_verdict = measured;
  d.gain = c.gain;
  d.ci_lo = c.ci_lo;
  d.ci_hi = c.ci_hi;
  d.threshold = c.threshold;
  d.noise_floor = noise_floor;
  d.pairs = c.pairs;
  d.incumbent_values = c.incumbent_values;
  d.candidate_values = c.candidate_values;
  d.trials = c.candidate_trials;
  d.accuracy_passed = c.accuracy_passed;
  d.accuracy = c.accuracy;
  d.claimed_gain = c.predicted_gain;
  return d;
}

std::function<Result<session::CriticNote>(const session::CandidateRecord&, Verdict)> CriticHook(
    agent::Critic& critic, std::function<double()> noise_floor) {
  return [&critic, noise_floor = std::move(noise_floor)](const session::CandidateRecord& c,
                                                         Verdict measured) -> Result<session::CriticNote> {
    HONE_ASSIGN_OR_RETURN(agent::CriticVerdict v, critic.Review(CriticDecision(c, measured, noise_floor())));
    return session::CriticNote{v.approve, v.reason, v.learning, v.signature};
  };
}

void AttachState(Agents& agents, const session::SessionState& state) {
  if (!agents.proposer) return;
  const session::SessionState* s = &state;
  search::Proposer* planner = agents.fallback;
  agents.proposer->SetSnapshotFiller([s, planner](agent::OrchestratorSnapshot& snap) {
    snap.phase = session::PhaseName(s->phase);
    snap.baseline_objective = s->baseline_objective;
    snap.stock = s->stock.ToString();
    snap.best = s->best.ToString();
    snap.best_objective = s->best_values.empty() ? 0 : s->best_values.back();
    snap.validated = s->validated;
    snap.validated_gain = s->validated_gain;
    snap.cycle = s->cycle;
    if (planner) snap.idea_tree = planner->Describe();
  });
}

std::string AgentSummary(const Agents& agents) {
  if (!agents.proposer || !agents.runtime) return "";
  std::string out = agents.runtime->meter().Summary() + "\n";
  out += agent::FormatCalibrationTable(agents.proposer->calibration());
  out += "\n" + std::to_string(agents.proposer->rejections().size()) +
         " proposed ideas rejected (invalid knobs or values)\n";
  for (const std::string& n : agents.proposer->notes()) out += "- " + n + "\n";
  return out;
}

}  // namespace hone::run
