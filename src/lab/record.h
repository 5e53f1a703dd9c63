// One trial of a response surface's point, as `hone search record` takes it: the point's
// configuration measured through a trial executor, a faulted trial measured once more
// (as a session measures a faulted candidate again), and the outcome written into the
// point: a sample and its bench metrics, or the failure kind a session would give the
// candidate (session::CandidateFailureKind), so that a replay on the surface
// (lab::SurfaceSession) ends the point's comparison as the session did.
#pragma once

#include <functional>
#include <string>

#include "core/error.h"
#include "measure/trial.h"
#include "search/surface.h"

namespace hone::lab {

struct PointTrialOptions {
  measure::OperatingPoint point;
  double concurrency = 0;  // the workload's, kept in the point's metrics (diagnosis)
  double osl = 0;
  // The next trial id ("s0001", ...): called once per trial.
  std::function<std::string()> next_id;
  // Before each trial (a quiet moment, the host's load).
  std::function<void()> before;
  // A trial that faulted; `again`: it is measured once more.
  std::function<void(const measure::TrialOutcome&, bool again)> on_fault;
};

// Measures `p` once (twice when the first trial faulted) and records the outcome in it.
// Errors are the executor's (infrastructure); a failed launch, an invalid run or a
// second fault are outcomes: `p` is then failed (failure_kind set).
Result<measure::TrialOutcome> MeasurePoint(measure::TrialExecutor& executor, search::SurfacePoint& p,
                                           const PointTrialOptions& options);

}  // namespace hone::lab
