#include "kb/admission.h"

#include <cstdio>

namespace hone::kb {

namespace {

std::string Pct(double fraction) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%", fraction * 100);
  return buf;
}

}  // namespace

std::string AdmissionRejection(const AdmissionRequest& req, const AdmissionRules& rules) {
  if (!req.verdict_keep) return "verdict is not KEEP";
  if (!req.accuracy_passed) return "accuracy gate did not pass";
  if (!req.remeasured_at_close) return "not re-measured at close";
  const Recipe& r = req.recipe;
  if (auto shape = CheckRecipeShape(r, rules.min_objective_trials, rules.min_baseline_trials); !shape) {
    return shape.error().message;
  }
  double gain = r.GainFraction();
  if (!(gain >= rules.min_gain_fraction) || gain <= 0) {
    return "gain " + Pct(gain) + " over the baseline is below the admission minimum " + Pct(rules.min_gain_fraction);
  }
  if (rules.require_ci_clear_of_baseline) {
    const Objective& o = r.objective;
    bool clear = o.higher_is_better ? o.ci_lo > r.baseline.value : o.ci_hi < r.baseline.value;
    if (!clear) {
      char buf[200];
      std::snprintf(buf, sizeof buf, "objective CI [%g, %g] does not exclude the baseline %g", o.ci_lo, o.ci_hi,
                    r.baseline.value);
      return buf;
    }
  }
  return "";
}

ReplayVerdict JudgeReplay(const Recipe& recipe, const ReplayOutcome& outcome, const AdmissionRules& rules) {
  ReplayVerdict v;
  v.same_point = outcome.identity == recipe.identity && outcome.workload == recipe.workload;
  v.recorded_gain = recipe.GainFraction();
  v.measured_gain = GainFraction(outcome.objective_value, outcome.baseline_value, recipe.objective.higher_is_better);
  const double fraction = outcome.reproduce_fraction.value_or(rules.reproduce_min_fraction);
  v.required_gain = fraction * v.recorded_gain;
  if (!outcome.accuracy_passed) {
    v.reason = "accuracy gate failed on replay";
  } else if (outcome.verdict != Verdict::kKeep) {
    v.reason = "the replay's verdict is " + std::string(VerdictName(outcome.verdict)) + " (re-measured gain " +
               Pct(v.measured_gain) + "), not a KEEP";
  } else if (outcome.baseline_value <= 0) {
    v.reason = "replay has no positive baseline to compare with";
  } else if (v.measured_gain < v.required_gain) {
    v.reason = "re-measured gain " + Pct(v.measured_gain) + " is below " + Pct(v.required_gain) + " (" +
               Pct(fraction) + " of the recorded " + Pct(v.recorded_gain) + ")";
  } else {
    v.reproduced = true;
    v.reason = "re-measured gain " + Pct(v.measured_gain) + " reaches " + Pct(v.required_gain) + " (" +
               Pct(fraction) + " of the recorded " + Pct(v.recorded_gain) + ")";
  }
  v.demoted = !v.reproduced && v.same_point;
  if (v.demoted && outcome.accuracy_passed && outcome.verdict == Verdict::kInconclusive) {
    // Undecided pairs say the host was too noisy for them, not that the recipe is wrong.
    int before = 0;
    for (auto e = recipe.history.rbegin(); e != recipe.history.rend() && e->event == "inconclusive"; ++e) ++before;
    v.inconclusive_in_row = before + 1;
    v.demoted = v.inconclusive_in_row >= rules.inconclusive_replays_to_demote;
  }
  return v;
}

}  // namespace hone::kb
