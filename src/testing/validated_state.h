// Test-only: a session state whose close re-validated its best as a KEEP (+20%, 95%
// interval [1.1, 1.3], best 120 vs stock 100 over trials t20 and t21), for tests of what
// follows a validated close (knowledge-base admission) without running one.
#pragma once

#include "session/state.h"

namespace hone::session::testing {

inline void MarkValidatedKeep(SessionState& s) {
  s.validated = true;
  s.validated_gain = 0.2;
  s.validated_lo = 1.1;
  s.validated_hi = 1.3;
  s.validated_best_objective = 120;
  s.validated_stock_objective = 100;
  s.validation_verdict = Verdict::kKeep;
  s.validation_trials = {"t20", "t21"};
}

}  // namespace hone::session::testing
