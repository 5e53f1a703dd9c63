// The fleet's order: sessions arranged so the knowledge base warms up.
//
// Two sessions are related when a recipe one of them writes would match the other
// (kb/match.h's ScoreCandidate with the knowledge base's own fallback rules, at the
// priors threshold or above): same engine and architecture, differing in precision,
// model size or operating point. The plan starts each family of related sessions
// with its most central member (the one most related to the others: it runs cold),
// then repeatedly adds the unplanned session most related to one already planned —
// its parent — so every later session starts after a neighbour it can learn from.
//
// Waves: roots are wave 0, a session's wave is its parent's plus one. The executor
// starts a wave when the previous one has finished (a Slurm job array per wave,
// afterany the previous array), so sessions of one wave run side by side where the
// machine allows, each warm from the waves before. Pure function; deterministic.
#pragma once

#include <string>
#include <vector>

#include "fleet/fleet_spec.h"
#include "kb/rules.h"

namespace hone::fleet {

struct PlannedSession {
  int session = 0;       // index into FleetSpec::sessions
  int wave = 0;
  int parent = -1;       // the planned neighbour it learns from (-1: a root, cold)
  double relatedness = 0;  // the match confidence of the parent's recipe for it
};

struct FleetPlan {
  std::vector<PlannedSession> order;  // run order
  int waves = 0;
  // One line per session: "small-q8_0-fixed (wave 1) after small-f16-fixed: other_precision 0.85".
  std::vector<std::string> explanation;
};

// How well a recipe of `from` would match `to` (0 when it would not match at all).
double Relatedness(const FleetSession& to, const FleetSession& from, const kb::FallbackPolicy& policy);

FleetPlan PlanFleet(const std::vector<FleetSession>& sessions, const kb::FallbackPolicy& policy);

}  // namespace hone::fleet
