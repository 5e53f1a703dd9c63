#include "lab/record.h"

#include "bench/metrics.h"
#include "core/strings.h"
#include "session/comparison.h"

namespace hone::lab {

Result<measure::TrialOutcome> MeasurePoint(measure::TrialExecutor& executor, search::SurfacePoint& p,
                                           const PointTrialOptions& options) {
  measure::TrialRequest req;
  req.role = measure::TrialRole::kSurface;
  req.config = p.config;
  req.point = options.point;
  measure::TrialOutcome o;
  for (int attempt = 0; attempt < 2; ++attempt) {
    req.retry_of = attempt == 0 ? "" : req.id;
    req.id = options.next_id();
    if (options.before) options.before();
    HONE_ASSIGN_OR_RETURN(o, executor.Run(req));
    if (!o.launched || o.faults.empty()) break;
    if (options.on_fault) options.on_fault(o, attempt == 0);
  }
  p.trial_ids.push_back(o.id);
  p.seconds.push_back(o.wall_s);
  if (!o.launched || !o.valid) {
    // The kind a session gives the candidate; a trial that faulted twice, the faulted
    // prefix (the replay vetoes it as a session does, teaching the search nothing).
    std::string kind = session::CandidateFailureKind(o);
    if (kind.empty() && !o.launched) kind = "launch_failed";
    if (kind.empty()) kind = std::string(search::SurfacePoint::kFaultedPrefix) + Join(o.faults, ", ");
    p.failure_kind = kind;
    return o;
  }
  p.samples.push_back(o.objective);
  if (p.metrics.empty()) {
    std::vector<std::string> names = bench::MetricNames();
    for (std::string& m : bench::ServerMetricNames()) names.push_back(std::move(m));
    for (const std::string& m : names) {
      if (auto v = bench::Metric(o.result, m)) p.metrics[m] = *v;
    }
    p.metrics["concurrency"] = options.concurrency;
    p.metrics["osl"] = options.osl;
  }
  return o;
}

}  // namespace hone::lab
