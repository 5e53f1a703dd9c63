#include "session/comparison.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/check.h"
#include "core/stats.h"
#include "core/strings.h"
#include "search/proposer.h"

namespace hone::session {

int PairLog::pairs() const { return static_cast<int>(std::min(a_values_.size(), b_values_.size())); }

bool PairLog::half_pair() const { return a_values_.size() > b_values_.size(); }

std::vector<double> PairLog::a() const { return {a_values_.begin(), a_values_.begin() + pairs()}; }

std::vector<double> PairLog::b() const { return {b_values_.begin(), b_values_.begin() + pairs()}; }

std::vector<double> PairLog::Ratios() const {
  std::vector<double> out;
  for (size_t i = 0; i < static_cast<size_t>(pairs()); ++i) {
    if (a_values_[i] > 0) out.push_back(b_values_[i] / a_values_[i]);
  }
  return out;
}

std::vector<std::string> PairLog::Interleaved() const {
  std::vector<std::string> out;
  for (size_t i = 0; i < static_cast<size_t>(pairs()); ++i) {
    out.push_back(a_trials_[i]);
    out.push_back(b_trials_[i]);
  }
  return out;
}

void PairLog::AddA(const measure::TrialOutcome& o) {
  a_trials_.push_back(o.id);
  a_values_.push_back(o.objective);
}

void PairLog::AddB(const measure::TrialOutcome& o) {
  b_trials_.push_back(o.id);
  b_values_.push_back(o.objective);
}

int PlannedLooks(int min_pairs, int max_pairs, int pair_step) {
  return (max_pairs - min_pairs) / std::max(1, pair_step) + 1;
}

double RelativeGain(double value, double reference, bool maximize) {
  if (reference <= 0 || value <= 0) return 0;
  return maximize ? value / reference - 1 : reference / value - 1;
}

void AddToScreenReference(std::vector<double>& values, std::vector<std::string>* ids, double fresh,
                          const std::string& id, size_t keep, double tolerance, bool maximize) {
  if (!values.empty() && std::abs(RelativeGain(fresh, Mean(values), maximize)) > tolerance) {
    values.clear();
    if (ids) ids->clear();
  }
  values.push_back(fresh);
  if (ids) ids->push_back(id);
  while (values.size() > std::max<size_t>(keep, 1)) {
    values.erase(values.begin());
    if (ids && !ids->empty()) ids->erase(ids->begin());
  }
}

measure::VerdictResult JudgePairs(const PairPlan& plan, const PairLog& log) {
  HONE_CHECK(plan.judge.has_value());
  HONE_CHECK(plan.prior_a.size() == plan.prior_b.size());
  measure::VerdictInput in = *plan.judge;
  in.a = plan.prior_a;
  in.b = plan.prior_b;
  const std::vector<double> a = log.a(), b = log.b();
  in.a.insert(in.a.end(), a.begin(), a.end());
  in.b.insert(in.b.end(), b.begin(), b.end());
  in.looks += plan.prior_looks;
  return measure::Judge(in);
}

Result<ComparisonResult> RunComparison(TrialRunner& runner, const PairPlan& plan, PairLog& log) {
  const int min_pairs = plan.min_pairs;
  const int max_pairs = std::max(plan.max_pairs, min_pairs);
  const int step = std::max(1, plan.pair_step);
  // A resumed comparison continues at its next planned look.
  int target = min_pairs;
  if (log.pairs() > min_pairs)
    target = std::min(max_pairs, min_pairs + (log.pairs() - min_pairs + step - 1) / step * step);
  ComparisonResult r;
  auto end = [&](ComparisonEnd e, std::optional<measure::TrialOutcome> failed = std::nullopt) {
    r.end = e;
    r.pairs = log.pairs();
    r.failed = std::move(failed);
    return r;
  };
  auto failed = [](const measure::TrialOutcome& o) { return !o.launched || !o.valid; };
  while (true) {
    while (log.pairs() < target) {
      if (!runner.CanAfford(2)) {
        // Out of budget after the minimum: judge what was measured.
        if (plan.judge && log.pairs() >= min_pairs) r.judged = JudgePairs(plan, log);
        return end(ComparisonEnd::kBudget);
      }
      if (!log.half_pair()) {  // an A whose B is missing (a kill between them) is reused
        HONE_ASSIGN_OR_RETURN(measure::TrialOutcome a, runner.RunTrial(plan.a, plan.point));
        if (failed(a)) {
          if (plan.retry && plan.retry(a)) continue;
          return end(ComparisonEnd::kFailedA, std::move(a));
        }
        log.AddA(a);
        if (plan.on_trial) plan.on_trial(a, false);
        HONE_TRY(runner.Save());
      }
      if (plan.between) HONE_TRY(plan.between());
      HONE_ASSIGN_OR_RETURN(measure::TrialOutcome b, runner.RunTrial(plan.b, plan.point));
      if (failed(b)) {
        if (plan.retry && plan.retry(b)) continue;
        return end(ComparisonEnd::kFailedB, std::move(b));
      }
      log.AddB(b);
      if (plan.slo_veto && !b.slo_ok) return end(ComparisonEnd::kSloViolated, std::move(b));
      if (plan.on_trial) plan.on_trial(b, true);
      HONE_TRY(runner.Save());
    }
    if (!plan.judge) return end(ComparisonEnd::kComplete);
    r.judged = JudgePairs(plan, log);
    if (r.judged->verdict != Verdict::kInconclusive || target >= max_pairs) return end(ComparisonEnd::kComplete);
    const int more = std::min(step, max_pairs - target);
    if (!plan.label.empty()) {
      char buf[64];
      std::snprintf(buf, sizeof buf, "%+.1f%%", r.judged->gain * 100);
      runner.Progress("  " + plan.label + " inconclusive after " + std::to_string(log.pairs()) + " pairs (" + buf +
                      "): " + std::to_string(more) + " more");
    }
    target += more;
    HONE_TRY(runner.Save());
  }
}

Veto TrialVeto(const measure::TrialOutcome& o) {
  if (!o.launched) return {VetoKind::kLaunchFailed, o.failure_kind + ": " + o.failure_detail.substr(0, 200)};
  if (!o.faults.empty()) {
    return {VetoKind::kFaulted, o.id + (o.retry_of.empty() ? "" : " (measured again after " + o.retry_of + ")") +
                                    ": " + Join(o.faults, ", ")};
  }
  if (!o.valid) return {VetoKind::kInvalidRun, o.invalid_reasons.empty() ? "invalid run" : o.invalid_reasons[0]};
  HONE_CHECK(!o.slo_ok);
  return {VetoKind::kSloViolated, o.slo_violations.empty() ? "" : o.slo_violations[0]};
}

std::string CandidateFailureKind(const measure::TrialOutcome& o) {
  const Veto v = TrialVeto(o);
  switch (v.kind) {
    case VetoKind::kLaunchFailed: return o.failure_kind;
    case VetoKind::kInvalidRun: return std::string(search::kNoValidRunPrefix) + v.reason;
    default: return "";  // a fault or an SLO violation says nothing about the configuration
  }
}

namespace {

// What the comparison measured, before any veto.
Decision Measured(const ComparisonResult& c) {
  switch (c.end) {
    case ComparisonEnd::kComplete: HONE_CHECK(c.judged.has_value()); return {c.judged->verdict, c.judged->reason};
    case ComparisonEnd::kBudget:
      if (c.judged) return {c.judged->verdict, c.judged->reason + " (budget: no more pairs)"};
      return {Verdict::kSkippedBudget, "not enough budget left for paired trials"};
    case ComparisonEnd::kFailedA: {
      // The incumbent failed: the pair says nothing about the candidate.
      HONE_CHECK(c.failed.has_value());
      const measure::TrialOutcome& a = *c.failed;
      return {Verdict::kInvalid, "the incumbent's trial " + a.id + " failed (" +
                                     (!a.launched        ? a.failure_kind
                                      : !a.faults.empty() ? "faulted: " + Join(a.faults, ", ")
                                                          : std::string("invalid run")) +
                                     ")"};
    }
    case ComparisonEnd::kFailedB:
    case ComparisonEnd::kSloViolated: {
      HONE_CHECK(c.failed.has_value());
      Veto v = TrialVeto(*c.failed);
      return Decide(std::nullopt, {v});
    }
  }
  return {};
}

}  // namespace

Decision Decide(const std::optional<ComparisonResult>& comparison, const std::vector<Veto>& vetoes) {
  const std::optional<Decision> measured = comparison ? std::optional<Decision>(Measured(*comparison)) : std::nullopt;
  const bool keep = measured && measured->verdict == Verdict::kKeep;
  for (const Veto& v : vetoes) {
    switch (v.kind) {
      case VetoKind::kBudget: return {Verdict::kSkippedBudget, v.reason};
      case VetoKind::kScreenDrop: return {Verdict::kScreenedOut, v.reason};
      case VetoKind::kLaunchFailed: return {Verdict::kLaunchFailed, v.reason};
      case VetoKind::kInvalidRun: return {Verdict::kInvalid, v.reason};
      case VetoKind::kFaulted: return {Verdict::kInvalid, "faulted: " + v.reason};
      case VetoKind::kSloViolated: return {Verdict::kRevert, "SLO violated: " + v.reason};
      case VetoKind::kAccuracy:
        return {Verdict::kAccuracyFailed,
                (keep ? "faster but the accuracy gate failed: " : "accuracy gate: ") + v.reason};
      case VetoKind::kCritic:
        // A refusal can only turn a KEEP down; an approval never creates one.
        if (keep)
          return {Verdict::kRevert, "measured KEEP (" + measured->reason + ") but the critic refused: " + v.reason};
        break;
      case VetoKind::kNotCommitted:
        if (keep) return {Verdict::kRevert, "patch not committed: " + v.reason};
        break;
      case VetoKind::kPatchFailed: return {Verdict::kPatchFailed, v.reason};
      case VetoKind::kBuildFailed: return {Verdict::kBuildFailed, v.reason};
      case VetoKind::kPatchRejected: return {Verdict::kPatchRejected, v.reason};
      case VetoKind::kInterrupted: return {Verdict::kInconclusive, v.reason};
    }
  }
  HONE_CHECK(measured.has_value());  // nothing to decide from: a caller bug
  return *measured;
}

}  // namespace hone::session
