#include "session/coordinator.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <optional>

#include "core/stats.h"
#include "core/strings.h"
#include "sys/files.h"
#include "sys/signals.h"

namespace hone::session {

using measure::TrialRole;

namespace {

// A signal stopped the session (`hone resume` goes on), as opposed to the hard
// deadline (sys::SetStopDeadline), which also makes sys::InterruptRequested() true but
// spends the budget: nothing to resume.
bool UserInterrupted() { return sys::InterruptSignal() != 0; }

// Why the session is stopping, for notes and stop reasons: a signal, the hard
// deadline, else `otherwise` (the caller's own reason).
const char* StopCause(const char* otherwise = "budget") {
  return UserInterrupted() ? "interrupted" : sys::DeadlinePassed() ? "budget" : otherwise;
}

}  // namespace

Coordinator::Coordinator(spec::SessionSpec spec, SessionServices services, SessionState state)
    : spec_(std::move(spec)),
      services_(std::move(services)),
      state_(std::move(state)),
      ledger_(spec_, services_, state_) {}
SessionState Coordinator::NewState(const spec::SessionSpec& spec, const std::string& run_dir, sys::Clock& clock) {
  SessionState s;
  s.name = spec.name;
  s.spec_path = spec.source;
  s.run_dir = run_dir;
  s.started_unix_us = clock.WallMicros();
  s.session_id = spec.name + "-" + std::to_string(s.started_unix_us / 1000000);
  s.deadline_unix_s = static_cast<double>(s.started_unix_us) * 1e-6 + spec.budget.wall_s;
  s.stock = spec.target.base_config;
  s.best = s.stock;
  return s;
}

Status Coordinator::Framework() {
  ledger_.StartPhase(Phase::kFramework);
  if (CandidateRecord* pending = state_.Pending(); pending && pending->patch.empty()) HONE_TRY(Evaluate(*pending));
  if (CandidateRecord* pending = state_.Pending(); pending && !pending->patch.empty()) {
    // Interrupted mid-patch: its worktree was reset; not retried.
    HONE_TRY(Finish(
        *pending, Decide(std::nullopt, {{VetoKind::kInterrupted, "interrupted while the patch was being measured"}})));
  }
  HONE_TRY(TryPatches());
  int misses = 0;
  const int plateau = spec_.search.plateau;  // 0: no plateau
  std::string note;
  while (true) {
    if (ledger_.Stopping()) {
      note = StopCause("trial limit reached");
      break;
    }
    // A candidate needs a screen, min_pairs pairs and maybe more: do not start one
    // that cannot finish its first look.
    int needed = 1 + 2 * spec_.measurement.min_pairs;
    int sweep_points = std::max<int>(1, static_cast<int>(spec_.workload.sweep_concurrency.size())) *
                       std::max<int>(1, static_cast<int>(spec_.workload.sweep_isl_osl.size()));
    bool has_sweep = !spec_.workload.sweep_concurrency.empty() || !spec_.workload.sweep_isl_osl.empty();
    int sweep_reserve = has_sweep ? sweep_points * 2 * spec_.measurement.min_pairs : 0;
    if (!ledger_.CanAfford(needed + sweep_reserve)) {
      note = kFrameworkBudgetNote;
      break;
    }
    if (plateau > 0 && misses >= plateau) {
      note = kFrameworkPlateauNote + std::to_string(plateau) + " candidates without a KEEP";
      break;
    }
    search::ProposalContext ctx;
    ctx.stock = state_.stock;
    ctx.best = state_.best;
    for (const auto& c : state_.candidates) ctx.tried.insert(c.config.Hash());
    ctx.tried.insert(state_.stock.Hash());
    ctx.cycle = state_.cycle;
    ctx.time_left_s = ledger_.Left();
    ctx.concurrency = spec_.workload.concurrency;
    ctx.cpus = services_.cpus;
    ctx.cores = services_.cores;
    ctx.gpu = services_.gpu;
    // Evidence for the planner: how far below the roofline the stock runs, what binds
    // it, its bench metrics and the noise one measured gain carries.
    // (A ratio above 1 means the bound's inputs are wrong: no evidence then.)
    if (state_.roofline_ratio > 0 && state_.roofline_ratio <= 1.0) ctx.headroom = state_.roofline_ratio;
    ctx.bottleneck = state_.roofline_bound;
    ctx.baseline_metrics = state_.baseline_metrics;
    ctx.baseline_metrics["concurrency"] = spec_.workload.concurrency;
    if (spec_.workload.osl > 0) ctx.baseline_metrics["osl"] = static_cast<double>(spec_.workload.osl);
    if (state_.noise_floor > 0) ctx.noise_floor = state_.noise_floor;
    auto idea = services_.proposer ? services_.proposer->Next(ctx) : std::nullopt;
    if (!idea) {
      note = "no more ideas";
      break;
    }
    CandidateRecord& c = ledger_.NewCandidate(CandidatePhase::kFramework, *idea, state_.best);
    HONE_TRY(ledger_.Save());
    HONE_TRY(Evaluate(c));
    misses = c.verdict == Verdict::kKeep ? 0 : misses + 1;
  }
  ledger_.EndPhase(PhaseStatus::kDone, note);
  return Ok();
}

Status Coordinator::Kernel() {
  ledger_.StartPhase(Phase::kKernel);
  if (!services_.kernel) {
    ledger_.EndPhase(PhaseStatus::kSkipped, "no kernel backend configured (kernel.backend in the spec)");
    return Ok();
  }
  std::string note;
  auto proposed = services_.kernel->Propose(state_, &note);
  if (!proposed) {
    state_.kernel = "kernel backend failed: " + proposed.error().message;
    ledger_.EndPhase(PhaseStatus::kFailed, state_.kernel);
    return Ok();
  }
  state_.kernel = note;
  ledger_.Event("kernel_backend", {{"note", note}});
  for (const search::Candidate& idea : *proposed) {
    if (ledger_.Stopping() || !ledger_.CanAfford(1 + 2 * spec_.measurement.min_pairs)) break;
    CandidateRecord& c = ledger_.NewCandidate(CandidatePhase::kKernel, idea, state_.best);
    HONE_TRY(Evaluate(c));
  }
  ledger_.EndPhase(PhaseStatus::kDone, proposed->empty() ? note : "");
  return Ok();
}

Status Coordinator::Sweep() {
  ledger_.StartPhase(Phase::kSweep);
  if (spec_.workload.sweep_concurrency.empty() && spec_.workload.sweep_isl_osl.empty()) {
    ledger_.EndPhase(PhaseStatus::kSkipped, "no sweep grid in the spec (workload.sweep)");
    return Ok();
  }
  // With the stock as the best there is no best to compare; the sweep still re-tunes
  // the stock per point when the engine has knobs that track the load.
  const bool stock_only = state_.BestIsStock();
  std::vector<int> concs = spec_.workload.sweep_concurrency;
  if (concs.empty()) concs.push_back(spec_.workload.concurrency);
  // With SLOs and loads to compare, a stock-only point with nothing to re-tune still
  // measures the stock alone: the highest load within the SLO needs it.
  const bool load_search = ledger_.HasSlo() && spec_.workload.sweep_slo_search > 0 && concs.size() >= 2;
  const bool retune = services_.point_variants && spec_.workload.sweep_retune > 0;
  if (stock_only && !retune && !load_search) {
    ledger_.EndPhase(PhaseStatus::kSkipped, "best is the stock configuration: nothing to sweep");
    return Ok();
  }
  if (state_.last_sweep_config == state_.best.Hash() + state_.server_binary) {
    ledger_.EndPhase(PhaseStatus::kSkipped, "nothing changed since the previous sweep");
    return Ok();
  }
  auto lens = spec_.workload.sweep_isl_osl;
  if (lens.empty()) lens.emplace_back(spec_.workload.isl, spec_.workload.osl);
  std::vector<measure::OperatingPoint> points;
  for (int conc : concs) {
    for (auto [isl, osl] : lens) points.push_back({conc, isl, osl});
  }
  state_.sweep.clear();
  for (const measure::OperatingPoint& p : points) {
    if (ledger_.Stopping() || !ledger_.CanAfford(2 * spec_.measurement.min_pairs)) break;  // the report names the rest
    SweepPointRecord rec;
    rec.concurrency = p.concurrency;
    rec.isl = p.isl;
    rec.osl = p.osl;
    if (stock_only) {  // measured by the re-tuning below: the stock is its base arm
      rec.best_config = state_.stock.ToString();
      state_.sweep.push_back(rec);
      continue;
    }
    std::vector<double> a, b;
    PairLog log(rec.stock_trials, a, rec.best_trials, b);
    HONE_ASSIGN_OR_RETURN(SweepPair pair, RunSweepPair({TrialRole::kSweep, state_.stock, ""},
                                                       {TrialRole::kSweep, state_.best, state_.server_binary}, p, log));
    const ComparisonResult& r = pair.comparison;
    switch (r.end) {
      case ComparisonEnd::kComplete: {
        rec.stock_objective = Mean(log.a());
        rec.best_objective = Mean(log.b());
        rec.stock_tps = pair.a_tps;
        rec.best_tps = pair.b_tps;
        rec.stock_intvty = pair.a_intvty;
        rec.best_intvty = pair.b_intvty;
        rec.verdict = r.judged->verdict;
        if (ledger_.HasSlo()) {  // each arm over its pooled requests at this point
          const measure::PooledSlo stock_slo = ledger_.SloOf(rec.stock_trials);
          const measure::PooledSlo best_slo = ledger_.SloOf(rec.best_trials);
          rec.stock_slo = stock_slo.Describe();
          rec.best_slo = best_slo.Describe();
          rec.stock_slo_excess = stock_slo.excess;
          rec.best_slo_excess = best_slo.excess;
          if (rec.verdict == Verdict::kKeep && !best_slo.ok) rec.verdict = Verdict::kRevert;  // no KEEP off the SLO
        }
        rec.best_config = rec.verdict == Verdict::kKeep ? state_.best.ToString() : state_.stock.ToString();
        break;
      }
      case ComparisonEnd::kBudget: rec.verdict = Verdict::kSkippedBudget; break;
      case ComparisonEnd::kFailedA:
      case ComparisonEnd::kFailedB:
      case ComparisonEnd::kSloViolated: rec.verdict = Verdict::kInvalid; break;
    }
    state_.sweep.push_back(rec);
    ledger_.Event("sweep_point", {{"point", p.Label()},
                                  {"verdict", std::string(VerdictName(*rec.verdict))},
                                  {"stock", Fmt("%.5g", rec.stock_objective)},
                                  {"best", Fmt("%.5g", rec.best_objective)}});
    HONE_TRY(ledger_.Save());
  }
  // Re-tuning comes after every point's stock-vs-best comparison (the part of the sweep
  // the search reserved budget for), in what budget is left.
  for (SweepPointRecord& rec : state_.sweep) {
    if (!stock_only && rec.verdict != Verdict::kKeep && rec.verdict != Verdict::kRevert &&
        rec.verdict != Verdict::kInconclusive) {
      continue;
    }
    HONE_TRY(RetunePoint({rec.concurrency, rec.isl, rec.osl}, rec));
    if (stock_only && load_search && rec.retune_base_trials.empty()) {
      HONE_TRY(MeasureStockAt({rec.concurrency, rec.isl, rec.osl}, rec));
    }
    HONE_TRY(ledger_.Save());
  }
  if (stock_only) {  // points with nothing to re-tune (or no budget left) measured nothing
    std::erase_if(state_.sweep, [](const SweepPointRecord& r) {
      return r.retune_base_trials.empty() && r.stock_trials.empty();
    });
  }
  HONE_TRY(SearchSloLoads());
  state_.last_sweep_config = state_.best.Hash() + state_.server_binary;
  // Points the budget left out are named, not dropped in silence (the GPU session of
  // 2026-12-04 measured one of its three).
  // A stock-only point with no variant to try measured nothing for that reason, not
  // for the budget's.
  std::vector<std::string> cut, nothing_to_retune;
  for (const measure::OperatingPoint& p : points) {
    const bool measured = std::ranges::any_of(state_.sweep, [&](const SweepPointRecord& r) {
      return r.concurrency == p.concurrency && r.isl == p.isl && r.osl == p.osl;
    });
    if (measured) continue;
    (stock_only && RetuneVariants(p).empty() ? nothing_to_retune : cut).push_back(p.Label());
  }
  std::string note = std::to_string(state_.sweep.size()) + " operating points";
  if (!cut.empty() || !nothing_to_retune.empty()) {
    std::vector<std::string> why;
    if (!cut.empty()) why.push_back(Join(cut, ", ") + " (" + std::string(StopCause()) + ")");
    if (!nothing_to_retune.empty()) {
      why.push_back(Join(nothing_to_retune, ", ") + " (nothing to re-tune: the stock is already set for the load)");
    }
    note = std::to_string(state_.sweep.size()) + " of " + std::to_string(points.size()) + " operating points; " +
           kSweepUnmeasured + Join(why, "; ");
  }
  ledger_.EndPhase(PhaseStatus::kDone, note);
  return Ok();
}

// A stock-only sweep point with nothing to re-tune, when the load at SLO is searched:
// the stock alone, min_pairs trials, its SLO on their pooled requests (the point's best
// is the stock; no verdict, since nothing was compared). A failed trial leaves the point
// unmeasured.
Status Coordinator::MeasureStockAt(const measure::OperatingPoint& p, SweepPointRecord& rec) {
  if (ledger_.Stopping() || !ledger_.CanAfford(std::max(1, spec_.measurement.min_pairs))) return Ok();
  ledger_.Progress("  sweep " + p.Label() + ": the stock alone (nothing to re-tune; for the load at SLO)");
  HONE_ASSIGN_OR_RETURN(AloneRun run, RunAlone(Arm{TrialRole::kSweep, state_.stock, ""}, p));
  if (!run.ok) return Ok();
  rec.stock_trials = run.trials;
  rec.stock_objective = rec.best_objective = run.objective;
  rec.stock_tps = rec.best_tps = run.tps;
  rec.stock_intvty = rec.best_intvty = run.intvty;
  const measure::PooledSlo slo = ledger_.SloOf(rec.stock_trials);
  rec.stock_slo = rec.best_slo = slo.Describe();
  rec.stock_slo_excess = rec.best_slo_excess = slo.excess;
  return Ok();
}

Result<Coordinator::AloneRun> Coordinator::RunAlone(const Arm& arm, const measure::OperatingPoint& p) {
  const int n = std::max(1, spec_.measurement.min_pairs);
  AloneRun run;
  for (int i = 0; i < n; ++i) {
    HONE_ASSIGN_OR_RETURN(measure::TrialOutcome o, ledger_.RunTrial(arm, p));
    run.trials.push_back(o.id);
    if (!o.launched || !o.valid) {
      run.ok = false;
      return run;
    }
    run.objective += o.objective / n;
    run.tps += o.result.total_tps / n;
    run.intvty += (o.result.intvty.count("p50") ? o.result.intvty.at("p50") : 0) / n;
  }
  return run;
}

// The highest load within the SLO (issue 18.2), refined between grid points: the grid
// says "met at c4, missed at c16"; bisection asks c10, then c7 or c13, ... until the
// two ends are adjacent, the probes (spec: sweep.slo_search) or the budget run out.
// Each probe is min_pairs trials of the arm alone at that load, the SLO judged on their
// pooled requests like a grid point's arm. The arms are the stock and the session's
// best (the configuration a user deploys), each bracketed by its own grid trials.
Status Coordinator::SearchSloLoads() {
  state_.slo_loads.clear();
  const int max_probes = spec_.workload.sweep_slo_search;
  if (!ledger_.HasSlo() || max_probes <= 0) return Ok();  // a grid of one load brackets nothing below
  const int trials_per_probe = std::max(1, spec_.measurement.min_pairs);
  struct ArmSpec {
    const char* name;
    Config config;
    std::string binary;
    bool stock;
  };
  std::vector<ArmSpec> arms{{"stock", state_.stock, "", true}};
  if (!state_.BestIsStock()) arms.push_back({"best", state_.best, state_.server_binary, false});
  std::vector<std::pair<int64_t, int64_t>> lens;
  for (const SweepPointRecord& r : state_.sweep) {
    if (std::ranges::find(lens, std::make_pair(r.isl, r.osl)) == lens.end()) lens.emplace_back(r.isl, r.osl);
  }
  for (auto [isl, osl] : lens) {
    for (const ArmSpec& arm : arms) {
      // The arm's own grid trials at each load: met or missed on their pooled requests.
      std::map<int, std::pair<bool, double>> at;  // concurrency -> (met, mean total tok/s)
      for (const SweepPointRecord& r : state_.sweep) {
        if (r.isl != isl || r.osl != osl) continue;
        const std::vector<std::string>& trials =
            arm.stock ? (r.stock_trials.empty() ? r.retune_base_trials : r.stock_trials) : r.best_trials;
        if (trials.empty()) continue;
        const measure::PooledSlo slo = ledger_.SloOf(trials);
        const double tps = arm.stock ? r.stock_tps : (r.retune_verdict == Verdict::kKeep ? 0 : r.best_tps);
        at[r.concurrency] = {slo.ok, tps};
      }
      // The bracket: the highest load met with every lower measured load met too, and
      // the next measured load (a miss).
      std::optional<int> lo, hi;
      double lo_tps = 0;
      for (const auto& [c, met_tps] : at) {
        if (!met_tps.first) {
          hi = c;
          break;
        }
        lo = c;
        lo_tps = met_tps.second;
      }
      if (!lo || !hi || *hi - *lo <= 1) continue;  // nothing between: the grid's answer stands
      // In the state from here on, so every probe is saved with it.
      SloLoadSearch& search = state_.slo_loads.emplace_back();
      search.isl = isl;
      search.osl = osl;
      search.arm = arm.name;
      search.config = arm.config.ToString();
      search.grid_lo = search.lo = *lo;
      search.grid_hi = search.hi = *hi;
      search.grid_lo_tps = lo_tps;
      ledger_.Progress("sweep: highest load within the SLO for the " + std::string(arm.name) + " at ISL " +
                       std::to_string(isl) + " / OSL " + std::to_string(osl) + ": between c" + std::to_string(*lo) +
                       " (met) and c" + std::to_string(*hi) + " (missed), bisecting");
      while (search.hi - search.lo > 1) {
        if (static_cast<int>(search.probes.size()) >= max_probes) {
          search.note = std::to_string(max_probes) + " probes (workload.sweep.slo_search)";
          break;
        }
        if (ledger_.Stopping() || !ledger_.CanAfford(trials_per_probe)) {
          search.note = StopCause();
          break;
        }
        const int mid = search.lo + (search.hi - search.lo) / 2;
        const measure::OperatingPoint point{mid, isl, osl};
        SloLoadProbe probe;
        probe.concurrency = mid;
        HONE_ASSIGN_OR_RETURN(AloneRun run, RunAlone(Arm{TrialRole::kSweep, arm.config, arm.binary}, point));
        probe.trials = run.trials;
        if (!run.ok) {  // a load the arm cannot serve is not within the SLO
          probe.met = false;
          probe.slo = "trial failed: " + probe.trials.back();
        } else {
          const measure::PooledSlo slo = ledger_.SloOf(probe.trials);
          probe.met = slo.ok;
          probe.excess = slo.excess;
          probe.slo = slo.Describe();
          probe.tps = run.tps;
        }
        (probe.met ? search.lo : search.hi) = mid;
        ledger_.Event("slo_load_probe", {{"arm", search.arm},
                                         {"point", point.Label()},
                                         {"met", probe.met ? "yes" : "no"},
                                         {"trials", Join(probe.trials, ",")}});
        ledger_.Progress("sweep: " + std::string(arm.name) + " at c" + std::to_string(mid) + ": " +
                         (probe.met ? "meets" : "misses") + " the SLO (" + probe.slo + ")");
        search.probes.push_back(std::move(probe));
        HONE_TRY(ledger_.Save());
      }
      HONE_TRY(ledger_.Save());
    }
  }
  return Ok();
}

Result<Coordinator::SweepPair> Coordinator::RunSweepPair(const Arm& a, const Arm& b,
                                                         const measure::OperatingPoint& p, PairLog& log) {
  PairPlan plan;
  plan.a = a;
  plan.b = b;
  plan.point = p;
  plan.min_pairs = plan.max_pairs = spec_.measurement.min_pairs;
  plan.judge = VerdictSettings(1);
  double a_tps = 0, b_tps = 0, a_intvty = 0, b_intvty = 0;
  plan.on_trial = [&](const measure::TrialOutcome& o, bool b_arm) {
    (b_arm ? b_tps : a_tps) += o.result.total_tps;
    (b_arm ? b_intvty : a_intvty) += o.result.intvty.count("p50") ? o.result.intvty.at("p50") : 0;
  };
  SweepPair out;
  HONE_ASSIGN_OR_RETURN(out.comparison, RunComparison(ledger_, plan, log));
  if (log.pairs() > 0) {
    const double n = static_cast<double>(log.pairs());
    out.a_tps = a_tps / n;
    out.b_tps = b_tps / n;
    out.a_intvty = a_intvty / n;
    out.b_intvty = b_intvty / n;
  }
  return out;
}

// Re-tuning at a sweep point (issue 18.3): the cycle's best was tuned at the primary
// operating point; at another load the knobs that track it (llama.cpp's slots, vLLM's
// max_num_seqs: services_.point_variants) may want other values. Each variant is
// measured paired against the point's winner (the best when it beat the stock here,
// else the stock), at most workload.sweep_retune of them; the first KEEP (within the
// SLO) becomes the point's best, so the front and the area index show the best
// configuration per point, not only the cycle's.
std::vector<Config> Coordinator::RetuneVariants(const measure::OperatingPoint& p) const {
  std::vector<Config> out;
  if (!services_.point_variants || spec_.workload.sweep_retune <= 0) return out;
  for (Config& v : services_.point_variants(state_.best, p)) {
    if (v != state_.stock && v != state_.best) out.push_back(std::move(v));  // the winner is one of them
  }
  return out;
}

Status Coordinator::RetunePoint(const measure::OperatingPoint& p, SweepPointRecord& rec) {
  const bool best_won = rec.verdict == Verdict::kKeep;
  const Config& winner = best_won ? state_.best : state_.stock;
  int tried = 0;
  for (const Config& v : RetuneVariants(p)) {
    if (tried >= spec_.workload.sweep_retune) break;
    if (ledger_.Stopping() || !ledger_.CanAfford(2 * spec_.measurement.min_pairs)) break;
    ++tried;
    ledger_.Progress("  sweep " + p.Label() + ": re-tuning " + v.ToString() + " against " +
                     (best_won ? "the best" : "the stock"));
    rec.retune_config = v.ToString();
    rec.retune_against = best_won ? state_.best.ToString() : "";
    rec.retune_base_trials.clear();
    rec.retune_trials.clear();
    std::vector<double> a, b;
    PairLog log(rec.retune_base_trials, a, rec.retune_trials, b);
    HONE_ASSIGN_OR_RETURN(SweepPair pair,
                          RunSweepPair({TrialRole::kSweep, winner, best_won ? state_.server_binary : ""},
                                       {TrialRole::kSweep, v, state_.server_binary}, p, log));
    const ComparisonResult& r = pair.comparison;
    if (rec.stock_trials.empty() && log.pairs() > 0) {
      // A stock-only sweep: the base arm is the stock, and the point's best until a
      // variant beats it.
      rec.stock_objective = rec.best_objective = Mean(log.a());
      rec.stock_tps = rec.best_tps = pair.a_tps;
      rec.stock_intvty = rec.best_intvty = pair.a_intvty;
      if (ledger_.HasSlo()) {
        const measure::PooledSlo stock_slo = ledger_.SloOf(rec.retune_base_trials);
        rec.stock_slo = rec.best_slo = stock_slo.Describe();
        rec.stock_slo_excess = rec.best_slo_excess = stock_slo.excess;
      }
    }
    if (r.end != ComparisonEnd::kComplete || !r.judged) {
      rec.retune_verdict = r.end == ComparisonEnd::kBudget ? Verdict::kSkippedBudget : Verdict::kInvalid;
      continue;
    }
    rec.retune_verdict = r.judged->verdict;
    rec.retune_gain = r.judged->gain;
    measure::PooledSlo slo;
    if (ledger_.HasSlo()) {
      slo = ledger_.SloOf(rec.retune_trials);
      if (rec.retune_verdict == Verdict::kKeep && !slo.ok) rec.retune_verdict = Verdict::kRevert;
    }
    ledger_.Event("sweep_retune", {{"point", p.Label()},
                                   {"config", rec.retune_config},
                                   {"verdict", std::string(VerdictName(*rec.retune_verdict))},
                                   {"gain", Fmt("%.4f", rec.retune_gain)}});
    if (rec.stock_trials.empty()) rec.verdict = rec.retune_verdict;  // the point's best vs the stock
    if (rec.retune_verdict != Verdict::kKeep) continue;
    rec.best_config = v.ToString();
    rec.best_objective = Mean(log.b());
    rec.best_tps = pair.b_tps;
    rec.best_intvty = pair.b_intvty;
    if (ledger_.HasSlo()) {
      rec.best_slo = slo.Describe();
      rec.best_slo_excess = slo.excess;
    }
    rec.verdict = Verdict::kKeep;  // it beat the winner, which the stock did not beat
    break;
  }
  return Ok();
}

void Coordinator::JudgeSloFeasibility() {
  if (!ledger_.HasSlo() || state_.stock_slo_excess <= 0) return;  // no SLO, unchecked, or the stock meets it
  // A configuration other than the stock that met the SLO on its own pooled requests,
  // kept, and not found violating at close.
  bool found = false;
  for (const CandidateRecord& c : state_.candidates) found |= c.verdict == Verdict::kKeep && c.slo_excess == 0;
  if (state_.best_slo_excess > 0 || state_.BestIsStock()) found = false;
  if (found) return;
  std::string closest = state_.stock.empty() ? "stock" : "stock " + state_.stock.ToString();
  std::string closest_slo = state_.stock_slo;
  double excess = state_.stock_slo_excess;
  for (const CandidateRecord& c : state_.candidates) {
    if (c.slo_excess >= 0 && c.slo_excess < excess) {
      excess = c.slo_excess;
      closest = c.id + " " + c.config.ToString();
      closest_slo = c.slo;
    }
  }
  if (state_.best_slo_excess >= 0 && state_.best_slo_excess < excess) {
    closest = "best " + state_.best.ToString();
    closest_slo = state_.best_slo;
  }
  std::string slos;
  for (const auto& s : spec_.objective.slos) slos += (slos.empty() ? "" : ", ") + s.ToString();
  state_.slo_infeasible = "the SLO (" + slos + ") is infeasible here: the stock violates it (" + state_.stock_slo +
                          ") and no configuration measured meets it; closest: " + closest + " (" + closest_slo + ")";
  ledger_.Event("slo_infeasible", {{"slo", slos}, {"closest", closest}, {"detail", closest_slo}});
  ledger_.Progress("SLO INFEASIBLE: " + state_.slo_infeasible);
}

Status Coordinator::CloseSession() {
  ledger_.StartPhase(Phase::kClose);
  if (state_.stop_reason.empty()) state_.stop_reason = StopCause("completed");
  if (UserInterrupted()) state_.interrupted = true;
  // Final end-to-end re-validation of the best configuration against the stock one:
  // sequential like a candidate's (min_pairs pairs, more while inconclusive, up to
  // max_pairs); out of budget or interrupted after the minimum, what was measured is
  // judged. Three pairs on a noisy host give intervals too wide to admit a real gain.
  if (!state_.BestIsStock() && !state_.validated && !state_.interrupted && !state_.baseline_values.empty()) {
    const auto& m = spec_.measurement;
    SessionState::ClosePairs& cp = state_.close_pairs;  // saved with every trial: a resume goes on from it
    PairPlan plan;
    plan.a = {TrialRole::kValidate, state_.stock, ""};
    plan.b = {TrialRole::kValidate, state_.best, state_.server_binary};
    plan.point = ledger_.Primary();
    plan.min_pairs = m.min_pairs;
    plan.max_pairs = m.max_pairs;
    plan.pair_step = m.pair_step;
    plan.judge = VerdictSettings(PlannedLooks());
    plan.label = "close validation";
    plan.on_trial = [&](const measure::TrialOutcome& o, bool b_arm) {
      if (!b_arm) return;
      cp.best_total_sum += o.result.total_tps;
      cp.best_output_sum += o.result.output_tps;
    };
    PairLog log(cp.a_trials, cp.a_values, cp.b_trials, cp.b_values);
    if (log.pairs() > 0 || log.half_pair()) {
      ledger_.Progress("close validation: going on from " + std::to_string(log.pairs()) + " pair(s) measured before" +
                       (log.half_pair() ? " and a half pair" : ""));
    }
    // An error (an interrupt) leaves what was measured; a full disk stops the session.
    if (auto run = RunComparison(ledger_, plan, log); !run && sys::IsNoSpace(run.error())) return Fail(run.error());
    state_.validation_trials = log.Interleaved();
    if (log.pairs() >= m.min_pairs) {
      measure::VerdictResult r = JudgePairs(plan, log);
      state_.validated = true;
      state_.validated_gain = r.gain;
      state_.validated_lo = r.ratio.lo;
      state_.validated_hi = r.ratio.hi;
      state_.validated_stock_objective = Mean(log.a());
      state_.validated_best_objective = Mean(log.b());
      state_.validation_verdict = r.verdict;
      if (ledger_.HasSlo()) {  // the best, over its pooled validation requests
        const measure::PooledSlo slo = ledger_.JudgeSlo(cp.b_trials, "config", "best (close)");
        state_.best_slo = slo.Describe();
        state_.best_slo_excess = slo.excess;
        if (!slo.ok && r.verdict == Verdict::kKeep) {
          state_.validation_verdict = Verdict::kRevert;
          ledger_.Progress("close validation: the best violates the SLO: " + state_.best_slo);
        }
      }
      ledger_.Progress("validated end to end: " + Fmt("%+.1f%%", r.gain * 100) + " [" + Fmt("%.3f", r.ratio.lo) + ", " +
                       Fmt("%.3f", r.ratio.hi) + "] " + std::string(VerdictName(r.verdict)) + " after " +
                       std::to_string(log.pairs()) + " pairs");
      if (services_.roofline) {
        double n = static_cast<double>(cp.b_trials.size());
        auto note = services_.roofline(state_.best, cp.best_total_sum / n, cp.best_output_sum / n);
        if (note) state_.roofline += (state_.roofline.empty() ? "" : "; ") + std::string("best: ") + note->summary;
      }
      if (spec_.accuracy.enabled && state_.close_accuracy.empty()) {
        if (ledger_.CanAffordAccuracy()) {
          auto acc = ledger_.RunAccuracy(state_.best, "close", state_.server_binary);
          if (acc) state_.close_accuracy = (acc->passed ? "pass: " : "FAIL: ") + acc->detail;
        } else {
          state_.close_accuracy = "not re-checked at close: no budget left";
        }
      }
    } else {
      state_.validation_verdict = Verdict::kNotValidated;
      ledger_.Progress("the best configuration could not be re-validated at close (budget or interrupt)");
    }
    HONE_TRY(ledger_.Save());
  }
  JudgeSloFeasibility();
  ledger_.Event("stop", {{"reason", state_.stop_reason}});
  ledger_.EndPhase(PhaseStatus::kDone, state_.stop_reason);
  HONE_TRY(ledger_.Save());
  // The report and the recipe come last, so that they show the closed session; the
  // session is "done" only once they are written (a crash here re-runs the close).
  if (services_.closer) {
    auto closed = services_.closer->Close(state_);
    if (!closed && sys::IsNoSpace(closed.error())) return closed;  // resumed, it writes them again
    if (!closed) ledger_.Event("close_error", {{"error", closed.error().message}});
  }
  state_.phase = Phase::kDone;
  return ledger_.Save();
}

Result<SessionState> Coordinator::Run() {
  HONE_TRY(sys::EnsureDir(state_.run_dir));
  if (services_.proposer && !state_.search_state.empty()) HONE_TRY(services_.proposer->Load(state_.search_state));
  if (state_.trials_run == 0 && state_.phases.empty()) {
    ledger_.Event("session_started", {{"session", state_.session_id},
                                      {"budget_s", Fmt("%.0f", spec_.budget.wall_s)},
                                      {"objective", spec_.objective.metric}});
  } else {
    ledger_.Event("resumed", {{"trials_run", std::to_string(state_.trials_run)}});
    ledger_.Progress("resuming " + state_.session_id + " in phase " + std::string(PhaseName(state_.phase)) + " after " +
                     std::to_string(state_.trials_run) + " trials");
    // The accuracy gate's reference is on disk (the prelude made it): load it again, or
    // every check after the resume would have nothing to compare with. (The GPU session
    // of 2026-12-04 closed with an unchecked "pass" this way.)
    if (spec_.accuracy.enabled && state_.phase != Phase::kPrelude && state_.accuracy_gate.prepared) {
      if (Status acc = services_.executor->PrepareAccuracy(state_.stock); !acc) {
        if (acc.error().code == ErrorCode::kCancelled) return Fail(acc.error());
        ledger_.Progress("accuracy reference unavailable after the resume: " + acc.error().message +
                         " (changes that can alter the outputs are not kept unchecked)");
      }
    }
  }
  HONE_TRY(ledger_.Save());
  // One wrapper per phase: a failed phase is recorded and the session moves on.
  std::optional<Error> no_space;  // the run directory is full: stop, to resume once there is room
  auto guarded = [&](Status (Coordinator::*phase)()) -> bool {
    Status s = (this->*phase)();
    if (s) return true;
    if (sys::IsNoSpace(s.error())) {
      no_space = s.error();
      return false;
    }
    if ((s.error().code == ErrorCode::kCancelled || sys::InterruptRequested()) && !UserInterrupted() &&
        sys::DeadlinePassed()) {
      // The hard deadline cut what was running (a trial, a start-up, a check): the
      // candidate in flight is not judged, and the close writes the report.
      const std::string cut(PhaseName(state_.phase));
      state_.stop_reason = "budget: the deadline came during the " + cut + " phase";
      ledger_.Event("deadline", {{"phase", cut}});
      ledger_.Progress("the session's deadline came during the " + cut + " phase: stopping what ran");
      if (CandidateRecord* pending = state_.Pending()) {
        Status finished = Finish(*pending, Decide(std::nullopt, {{VetoKind::kInterrupted,
                                                                  "not judged: the session's deadline came while it "
                                                                  "was measured"}}));
        if (!finished && sys::IsNoSpace(finished.error())) no_space = finished.error();
      }
      ledger_.EndPhase(PhaseStatus::kInterrupted, "deadline");
      return false;
    }
    if (s.error().code == ErrorCode::kCancelled || sys::InterruptRequested()) {
      state_.interrupted = true;
      state_.stop_reason = "interrupted";
      ledger_.EndPhase(PhaseStatus::kInterrupted, "");
      return false;
    }
    ledger_.EndPhase(PhaseStatus::kFailed, s.error().message);
    ledger_.Event("phase_error", {{"error", s.error().ToString()}});
    return true;
  };
  bool running = true;
  while (running && state_.stop_reason.empty() && !sys::InterruptRequested()) {
    switch (state_.phase) {
      case Phase::kPrelude:
        running = guarded(&Coordinator::Prelude) && state_.stop_reason.empty();
        if (running) state_.phase = Phase::kFramework;
        break;
      case Phase::kFramework:
        running = guarded(&Coordinator::Framework);
        if (running) state_.phase = Phase::kKernel;
        break;
      case Phase::kKernel:
        running = guarded(&Coordinator::Kernel);
        if (running) state_.phase = Phase::kSweep;
        break;
      case Phase::kSweep: {
        if (!(running = guarded(&Coordinator::Sweep))) break;
        // Cycle or close: only while budget, gains and cycles remain.
        const bool gained = KeepsThisCycle() > 0;
        const bool budget = ledger_.CanAfford(1 + 2 * spec_.measurement.min_pairs);
        if (state_.cycle < spec_.budget.max_cycles && gained && budget && !ledger_.Stopping() &&
            !state_.roofline_saturated) {
          ++state_.cycle;
          state_.phase = Phase::kFramework;
          ledger_.Event("cycle", {{"cycle", std::to_string(state_.cycle)}});
        } else {
          const std::string why = FrameworkNoteThisCycle();
          state_.stop_reason = ledger_.Stopping() ? StopCause("trial limit")
                               : !budget          ? "budget"
                               : why == kFrameworkBudgetNote
                                   ? "budget: the search's share of it ran out"
                               : state_.cycle >= spec_.budget.max_cycles ? "cycle ceiling reached"
                               : state_.roofline_saturated               ? "at the roofline: no headroom left"
                               : why.starts_with(kFrameworkPlateauNote)
                                   ? why + " (the last cycle found no gain)"
                                   : "converged: the last cycle found no gain";
          state_.phase = Phase::kClose;
        }
        break;
      }
      case Phase::kClose:
      case Phase::kDone: running = false; break;
    }
    if (running) HONE_TRY(ledger_.Save());
  }
  if (no_space) return Fail(*no_space);
  if (state_.phase != Phase::kDone) {
    if (UserInterrupted()) state_.interrupted_in = state_.phase;  // `hone resume` goes on from here
    HONE_TRY(CloseSession());
  }
  return state_;
}

bool Coordinator::Reopen(SessionState& state) {
  if (state.phase != Phase::kDone || !state.interrupted || !state.interrupted_in) return false;
  state.phase = *state.interrupted_in;
  state.interrupted_in.reset();
  state.interrupted = false;
  state.stop_reason.clear();
  return true;
}

std::string StatusText(const SessionState& s, const std::vector<Event>& events, double now_unix_s) {
  char buf[512];
  double started = static_cast<double>(s.started_unix_us) * 1e-6;
  std::string out;
  std::snprintf(buf, sizeof buf, "session %s: phase %s (cycle %d), %d trials, %.0fs elapsed, %.0fs of budget left\n",
                s.session_id.c_str(), std::string(PhaseName(s.phase)).c_str(), s.cycle, s.trials_run,
                now_unix_s - started, std::max(0.0, s.deadline_unix_s - now_unix_s));
  out += buf;
  if (!s.baseline_values.empty()) {
    std::snprintf(buf, sizeof buf, "baseline %.4g (trials %s), noise floor %.2f%%\n", s.baseline_objective,
                  Join(s.baseline_trials, ",").c_str(), s.noise_floor * 100);
    out += buf;
  }
  int keeps = 0;
  for (const auto& c : s.candidates) keeps += c.verdict == Verdict::kKeep;
  std::snprintf(buf, sizeof buf, "best %s (%d kept of %zu candidates)\n", s.best.ToString().c_str(), keeps,
                s.candidates.size());
  out += buf;
  if (s.validated) {
    std::snprintf(buf, sizeof buf, "validated gain %+.1f%% [%.3f, %.3f] (%s)\n", s.validated_gain * 100, s.validated_lo,
                  s.validated_hi, s.validation_verdict ? std::string(VerdictName(*s.validation_verdict)).c_str() : "");
    out += buf;
  }
  if (!s.stop_reason.empty()) out += "stop reason: " + s.stop_reason + "\n";
  if (!events.empty()) {
    const Event& e = events.back();
    std::snprintf(buf, sizeof buf, "last event: %s at %.0fs\n", e.type.c_str(), e.t);
    out += buf;
  }
  return out;
}

}  // namespace hone::session
