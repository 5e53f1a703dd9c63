#include "fleet/plan.h"

#include <cstdio>

#include "kb/match.h"

namespace hone::fleet {

double Relatedness(const FleetSession& to, const FleetSession& from, const kb::FallbackPolicy& policy) {
  auto score = kb::ScoreCandidate({to.identity, to.kb_workload}, from.identity, from.kb_workload, policy);
  if (!score || score->confidence < policy.priors_min_confidence) return 0;
  return score->confidence;
}

FleetPlan PlanFleet(const std::vector<FleetSession>& sessions, const kb::FallbackPolicy& policy) {
  const size_t n = sessions.size();
  std::vector<std::vector<double>> rel(n, std::vector<double>(n, 0));
  std::vector<double> centrality(n, 0);
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = 0; j < n; ++j) {
      if (i == j) continue;
      rel[i][j] = Relatedness(sessions[i], sessions[j], policy);  // j's recipe for i
      centrality[j] += rel[i][j];
    }
  }
  FleetPlan plan;
  std::vector<bool> planned(n, false);
  std::vector<int> wave_of(n, 0);
  for (size_t step = 0; step < n; ++step) {
    // The unplanned session most related to a planned one; ties: the more central,
    // then the earlier in the file.
    int best = -1, parent = -1;
    double best_rel = 0;
    for (size_t i = 0; i < n; ++i) {
      if (planned[i]) continue;
      for (size_t j = 0; j < n; ++j) {
        if (!planned[j] || rel[i][j] <= 0) continue;
        bool better = best < 0 || rel[i][j] > best_rel ||
                      (rel[i][j] == best_rel && centrality[i] > centrality[static_cast<size_t>(best)]);
        if (better) {
          best = static_cast<int>(i);
          parent = static_cast<int>(j);
          best_rel = rel[i][j];
        }
      }
    }
    if (best < 0) {
      // No unplanned session is related to a planned one: start a new family with
      // its most central member.
      for (size_t i = 0; i < n; ++i) {
        if (!planned[i] && (best < 0 || centrality[i] > centrality[static_cast<size_t>(best)])) {
          best = static_cast<int>(i);
        }
      }
      parent = -1;
      best_rel = 0;
    }
    planned[static_cast<size_t>(best)] = true;
    int wave = parent < 0 ? 0 : wave_of[static_cast<size_t>(parent)] + 1;
    wave_of[static_cast<size_t>(best)] = wave;
    plan.order.push_back({best, wave, parent, best_rel});
    plan.waves = std::max(plan.waves, wave + 1);
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.2f", best_rel);
    const FleetSession& s = sessions[static_cast<size_t>(best)];
    plan.explanation.push_back(s.name + " (wave " + std::to_string(wave) + ")" +
                               (parent < 0 ? std::string(": cold, starts its family")
                                           : " after " + sessions[static_cast<size_t>(parent)].name +
                                                 ": its recipe would match at " + buf));
  }
  return plan;
}

}  // namespace hone::fleet
