#include "report/report.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>

#include "core/html.h"
#include "core/strings.h"
#include "report/pareto.h"
#include "sys/clock.h"
#include "sys/files.h"

namespace hone::report {

namespace fs = std::filesystem;

namespace {

std::string F(const char* fmt, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

std::string Pct(double gain) { return F("%+.1f%%", gain * 100); }

// Text hone did not write (ideas, reasons quoting server logs, knob values from
// agents, critic notes) as one line of Markdown that cannot end its table cell, list
// item or code span, nor start a heading, a fence or bold: newlines become spaces and
// Markdown's active characters are backslash-escaped. HTML is escaped later, on output.
std::string Md(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '\n':
      case '\r': out += ' '; break;
      case '|':
      case '`':
      case '*':
      case '\\': out += '\\'; out += c; break;
      default: out += c;
    }
  }
  return out;
}

// A fenced block for untrusted text: the fence is longer than any backtick run that
// starts one of its lines, so the text cannot close it.
std::string Fenced(const std::string& text, const std::string& info = "") {
  size_t longest = 0;
  for (const std::string& l : Split(text, '\n')) {
    size_t n = 0;
    while (n < l.size() && l[n] == '`') ++n;
    longest = std::max(longest, n);
  }
  std::string fence(std::max<size_t>(3, longest + 1), '`');
  std::string out = fence + info + "\n" + text;
  if (!text.empty() && text.back() != '\n') out += "\n";
  return out + fence + "\n";
}

std::string V(Verdict v) { return std::string(VerdictName(v)); }
std::string V(const std::optional<Verdict>& v) { return v ? V(*v) : std::string(); }

// The sweep's fronts in tok/s/GPU (a CPU session counts as one device) against p50
// interactivity: every measured point of the stock and of the best configuration.
AreaIndex SweepAreaIndex(const ReportInput& in) {
  const double gpus = std::max(1, in.spec->target.num_gpus);
  std::vector<FrontPoint> stock, best;
  for (const auto& p : in.state->sweep) {
    if (!p.verdict && p.stock_trials.empty()) continue;  // not measured (a stock measured alone counts)
    stock.push_back({p.stock_intvty, p.stock_tps / gpus});
    best.push_back({p.best_intvty, p.best_tps / gpus});
  }
  return ComputeAreaIndex(stock, best);
}

std::string FrontText(const std::vector<FrontPoint>& front) {
  std::vector<std::string> parts;
  for (const FrontPoint& p : front) parts.push_back("(" + F("%.3g", p.x) + ", " + F("%.4g", p.y) + ")");
  return parts.empty() ? "none" : Join(parts, " ");
}

bool Flagged(const session::CandidateRecord& c) {
  return c.verdict == Verdict::kKeep && (!c.accuracy_passed || c.accuracy.empty());
}

}  // namespace

std::vector<LoadAtSlo> MaxLoadAtSlo(const session::SessionState& state) {
  std::vector<LoadAtSlo> out;
  for (const auto& p : state.sweep) {
    if (p.stock_slo_excess < 0 && p.best_slo_excess < 0) continue;  // not SLO-checked
    auto it = std::find_if(out.begin(), out.end(), [&](const LoadAtSlo& l) { return l.isl == p.isl && l.osl == p.osl; });
    if (it == out.end()) it = out.insert(out.end(), LoadAtSlo{.isl = p.isl, .osl = p.osl});
    if (p.stock_slo_excess == 0 && (!it->stock_concurrency || p.concurrency > *it->stock_concurrency)) {
      it->stock_concurrency = p.concurrency;
      it->stock_tps = p.stock_tps;
    }
    if (p.best_slo_excess == 0 && (!it->best_concurrency || p.concurrency > *it->best_concurrency)) {
      it->best_concurrency = p.concurrency;
      it->best_tps = p.best_tps;
    }
  }
  for (const session::SloLoadSearch& s : state.slo_loads) {
    auto it = std::find_if(out.begin(), out.end(), [&](const LoadAtSlo& l) { return l.isl == s.isl && l.osl == s.osl; });
    if (it == out.end()) continue;
    const bool stock = s.arm == "stock";
    std::optional<int>& c = stock ? it->stock_concurrency : it->best_concurrency;
    (stock ? it->stock_search : it->best_search) = &s;
    if (!c || s.lo > *c) {
      c = s.lo;
      (stock ? it->stock_tps : it->best_tps) = s.LoTps();
    }
  }
  return out;
}

std::string SloSearchText(const session::SloLoadSearch& s) {
  std::vector<std::string> probes;
  for (const session::SloLoadProbe& p : s.probes) {
    probes.push_back("c" + std::to_string(p.concurrency) + (p.met ? " met" : " missed"));
  }
  std::string out = "bisected between c" + std::to_string(s.grid_lo) + " (met) and c" + std::to_string(s.grid_hi) +
                    " (missed)" + (probes.empty() ? std::string("") : ": " + Join(probes, ", "));
  if (s.hi - s.lo > 1) {
    out += "; stopped at c" + std::to_string(s.lo) + "..c" + std::to_string(s.hi) + " (" +
           (s.note.empty() ? std::string("unfinished") : s.note) + ")";
  }
  return out;
}

std::vector<Stage> BuildStages(const ReportInput& in) {
  const session::SessionState& s = *in.state;
  std::vector<Stage> stages;
  stages.push_back({"baseline (stock)", 0, 0, "trials " + Join(s.baseline_trials, ", ")});
  // KEEPs in order, grouped by phase and cycle; gains multiply (each was measured
  // against the incumbent it replaced).
  double cumulative = 1.0;
  std::string current;
  for (const auto& c : s.candidates) {
    if (c.verdict != Verdict::kKeep) continue;
    std::string name;
    switch (c.phase) {
      case session::CandidatePhase::kEnablement: continue;  // it became the stock
      case session::CandidatePhase::kPrelude: name = "warm replay (knowledge base)"; break;
      case session::CandidatePhase::kKernel: name = "kernel (cycle " + std::to_string(c.cycle) + ")"; break;
      case session::CandidatePhase::kFramework: name = "framework (cycle " + std::to_string(c.cycle) + ")"; break;
    }
    if (stages.back().name != name) stages.push_back({name, 0, 0, ""});
    Stage& st = stages.back();
    double before = cumulative;
    cumulative *= 1.0 + c.gain;
    st.stage_gain = (1.0 + st.stage_gain) * (cumulative / before) - 1.0;
    st.gain_vs_baseline = cumulative - 1.0;
    st.evidence += (st.evidence.empty() ? "" : "; ") + c.id + " " + c.Change();
  }
  if (s.validated) {
    stages.push_back({"validated end to end (close)", s.validated_gain, 0,
                      "paired re-measurement, trials " + Join(s.validation_trials, ", ")});
  }
  return stages;
}

std::string RenderMarkdown(const ReportInput& in) {
  const session::SessionState& s = *in.state;
  const spec::SessionSpec& spec = *in.spec;
  std::string o;
  auto line = [&](const std::string& t) { o += t + "\n"; };
  line("# hone report: " + Md(s.name));
  line("");
  line("Session `" + Md(s.session_id) + "`, started " + sys::FormatUtc(s.started_unix_us) + ". Stop reason: **" +
       Md(s.stop_reason) + "**.");
  line("");
  line("- Target: " + Md(spec.target.adapter) + (in.framework_version.empty() ? "" : " " + Md(in.framework_version)) +
       ", model " + Md(in.model) + ", hardware " + Md(in.hardware));
  line("- Workload: " + spec.workload.kind + ", " + spec.workload.endpoint + ", concurrency " +
       std::to_string(spec.workload.concurrency) +
       (spec.workload.kind == "fixed"
            ? ", ISL " + std::to_string(spec.workload.isl) + " / OSL " + std::to_string(spec.workload.osl) + ", " +
                  std::to_string(spec.workload.num_prompts) + " prompts per trial"
            : ", " + F("%.0f", spec.workload.duration_s) + " s replay window"));
  std::string slos;
  for (const auto& c : spec.objective.slos) slos += (slos.empty() ? "" : ", ") + c.ToString();
  line("- Objective: " + std::string(spec.objective.maximize ? "maximize " : "minimize ") + spec.objective.metric +
       (slos.empty() ? "" : " subject to " + slos));
  line("- Budget: " + HumanSeconds(spec.budget.wall_s) + "; " + std::to_string(s.trials_run) + " trials run in " +
       HumanSeconds(s.trial_seconds_total) + " of trial time");
  line("");
  line("## Outcome");
  line("");
  if (s.baseline_values.empty()) {
    line("No baseline could be measured: " + Md(s.stop_reason));
  } else {
    line("| | " + spec.objective.metric + " | trials |");
    line("|---|---|---|");
    line("| stock | " + F("%.4g", s.baseline_objective) + " | " + Join(s.baseline_trials, ", ") + " (+A/A " +
         Join(s.aa_trials, ", ") + ") |");
    if (s.validated) {
      line("| stock, re-measured at close | " + F("%.4g", s.validated_stock_objective) + " | " +
           Join(s.validation_trials, ", ") + " |");
      line("| best, re-measured at close | " + F("%.4g", s.validated_best_objective) + " | " +
           Join(s.validation_trials, ", ") + " |");
      line("");
      line("**Validated gain: " + Pct(s.validated_gain) + "** (ratio " + F("%.3f", 1 + s.validated_gain) + ", " +
           F("%.0f", spec.measurement.confidence * 100) + "% interval [" + F("%.3f", s.validated_lo) + ", " +
           F("%.3f", s.validated_hi) + "], verdict " + V(s.validation_verdict) + ", " +
           std::to_string(s.validation_trials.size() / 2) + " interleaved pairs).");  // what ran
    } else if (!s.BestIsStock()) {
      line("");
      line("**The best configuration was not re-validated at close** (" + V(s.validation_verdict) +
           "): its gain below is from its own paired verdict only.");
    } else {
      line("");
      line("No configuration beat the stock one with a validated verdict.");
    }
    line("");
    line("A/A noise floor (stock vs itself): " + F("%.2f%%", s.noise_floor * 100) + ".");
    if (!s.stock_note.empty()) line("Stock configuration: " + Md(s.stock_note) + ".");
    if (!s.close_accuracy.empty()) line("Accuracy of the best configuration: " + Md(s.close_accuracy) + ".");
  }
  if (!spec.objective.slos.empty()) {
    line("");
    line("## SLO");
    line("");
    if (!s.slo_infeasible.empty()) {
      line("**SLO INFEASIBLE**: " + Md(s.slo_infeasible) + ".");
      line("");
    }
    line("Each configuration is judged on the requests pooled over all its trials in a comparison.");
    line("");
    line("| configuration | SLO status |");
    line("|---|---|");
    if (!s.stock_slo.empty()) line("| stock | " + Md(s.stock_slo) + " |");
    if (!s.best_slo.empty()) line("| best, at close | " + Md(s.best_slo) + " |");
    for (const auto& c : s.candidates) {
      if (!c.slo.empty()) line("| " + Md(c.id) + " " + Md(c.Change()) + " | " + Md(c.slo) + " |");
    }
    for (const auto& p : s.sweep) {
      const std::string at = "c" + std::to_string(p.concurrency) + " isl" + std::to_string(p.isl) + " osl" +
                             std::to_string(p.osl);
      if (!p.stock_slo.empty()) line("| stock at " + at + " | " + Md(p.stock_slo) + " |");
      if (!p.best_slo.empty()) line("| best at " + at + " | " + Md(p.best_slo) + " |");
    }
  }
  if (const auto& g = s.accuracy_gate; g.prepared) {
    line("");
    line("## Accuracy gate");
    line("");
    line("- Probes: " + Md(g.probes) + "; " + std::to_string(g.positions) +
         " teacher-forced positions compared per check" + (g.method.empty() ? "" : " (" + Md(g.method) + ")") + ".");
    line("- Thresholds: top-1 agreement >= " + F("%.1f%%", g.min_agreement * 100) + "; KL divergence <= " +
         F("%g", g.max_kld) + (g.kld_tool ? " (llama-perplexity over the whole vocabulary, else the top-k estimate)"
                                          : " (estimated from the server's top-k logprobs)") +
         (g.kld_tool ? "; |PPL ratio - 1| <= " + F("%g", g.max_ppl_delta) : std::string()) +
         "; KL and PPL gate only changes of medium or high accuracy risk and patched builds.");
    if (g.aa_ran) {
      line("- A/A (the stock against its own reference after a restart): agreement " +
           F("%.1f%%", g.aa_agreement * 100) + " over " + std::to_string(g.aa_positions) + " positions" +
           (g.aa_kl ? ", KL estimate " + F("%.3g", *g.aa_kl) : std::string()) + ": " +
           (g.nondeterministic ? "**nondeterministic** — " + Md(g.note) : std::string("deterministic")) + ".");
    } else {
      line("- A/A: " + Md(g.note.empty() ? "not measured" : g.note) + ".");
    }
    bool any = false;
    for (const auto& c : s.candidates) {
      if (c.accuracy.empty()) continue;
      if (!any) {
        line("");
        line("| id | change | result | measured |");
        line("|---|---|---|---|");
        any = true;
      }
      line("| " + Md(c.id) + " | `" + Md(c.Change()) + "` | " + (c.accuracy_passed ? "pass" : "**FAIL**") +
           " | " + Md(c.accuracy) + " |");
    }
    if (!s.close_accuracy.empty()) {
      if (!any) {
        line("");
        line("| id | change | result | measured |");
        line("|---|---|---|---|");
      }
      line("| close | best `" + Md(s.BestText()) + "` | | " + Md(s.close_accuracy) + " |");
    }
  }
  line("");
  line("## Stages");
  line("");
  line("| stage | gain vs baseline | stage gain | evidence |");
  line("|---|---|---|---|");
  for (const Stage& st : BuildStages(in)) {
    line("| " + Md(st.name) + " | " + Pct(st.gain_vs_baseline) + " | " + Pct(st.stage_gain) + " | " + Md(st.evidence) +
         " |");
  }
  line("");
  line("## Best configuration");
  line("");
  line("Knobs: `" + Md(s.best.ToString()) + "`" +
       (s.server_binary.empty() ? "" : "; server build: `" + Md(s.server_binary) + "` (a kept source patch)"));
  line("");
  o += Fenced(in.best_command.empty() ? "(stock)" : in.best_command, "sh");
  line("");
  line("## Candidates");
  line("");
  line("| id | phase | idea | verdict | gain | interval | pairs | accuracy | trials | reason | critic |");
  line("|---|---|---|---|---|---|---|---|---|---|---|");
  for (const auto& c : s.candidates) {
    std::string trials = Join(c.candidate_trials, ",");
    if (!c.screen_trial.empty()) trials = "screen " + c.screen_trial + (trials.empty() ? "" : "; " + trials);
    if (!c.recheck_trial.empty()) trials += "; incumbent re-checked " + c.recheck_trial;
    line("| " + Md(c.id) + " | " + std::string(session::CandidatePhaseName(c.phase)) + " c" + std::to_string(c.cycle) +
         " | `" + Md(c.Change()) + "` | **" + V(c.verdict) + "**" + (Flagged(c) ? " (flagged)" : "") + " | " +
         (c.pairs ? Pct(c.gain) : "") + " | " + (c.pairs ? "[" + F("%.3f", c.ci_lo) + ", " + F("%.3f", c.ci_hi) + "]" : "") +
         " | " + std::to_string(c.pairs) + " | " + Md(c.accuracy) + " | " + Md(trials) + " | " + Md(c.reason) + " | " +
         Md(c.critic) + " |");
  }
  std::vector<const session::CandidateRecord*> flagged;
  for (const auto& c : s.candidates) {
    if (Flagged(c)) flagged.push_back(&c);
  }
  line("");
  line("## Kept without full validation");
  line("");
  if (s.BestIsStock() && flagged.empty()) {
    line("Nothing was kept: the stock configuration stands.");
  } else if (flagged.empty() && s.validated) {
    line("Nothing: every kept change passed its paired verdict and the accuracy gate, and the final best was "
         "re-validated at close.");
  }
  for (const auto* c : flagged) line("- " + c->id + " `" + Md(c->Change()) + "`: kept without an accuracy check");
  if (!s.validated && !s.BestIsStock()) line("- the final configuration was not re-validated at close");
  line("");
  line("## What failed and why");
  line("");
  int failures = 0;
  for (const auto& c : s.candidates) {
    if (c.verdict == Verdict::kLaunchFailed || c.verdict == Verdict::kAccuracyFailed || c.verdict == Verdict::kInvalid) {
      line("- " + c.id + " `" + Md(c.Change()) + "`: " + V(c.verdict) + " — " + Md(c.reason));
      ++failures;
    }
  }
  if (failures == 0) line("No candidate failed to launch or failed accuracy.");
  line("");
  line("## Faults");
  line("");
  // Trials where the server or the transport misbehaved, and failed launches: a
  // faulted trial is never a measurement; it is measured once more.
  std::vector<const measure::TrialOutcome*> faulted;
  for (const auto& t : in.trials) {
    if (t.cut()) continue;  // stopped by the session, not a fault of the server
    if (!t.faults.empty() || !t.launched || !t.injected.empty() || !t.relaunches.empty()) faulted.push_back(&t);
  }
  if (faulted.empty()) {
    line("No trial met a fault: every server launched and answered every request cleanly.");
  } else {
    line("A faulted trial (the server or the transport misbehaved) is never a measurement: it is measured once "
         "more, and a second fault leaves its candidate INVALID (its comparison ends there).");
    line("");
    line("| trial | role | what happened | measured again as | injected (test run) |");
    line("|---|---|---|---|---|");
    for (const auto* t : faulted) {
      std::string what = !t->launched ? "launch failed: " + t->failure_kind + " — " + t->failure_detail.substr(0, 160)
                         : !t->faults.empty()     ? Join(t->faults, ", ")
                         : !t->relaunches.empty() ? "relaunched: " + Join(t->relaunches, "; ").substr(0, 200)
                                                  : "no fault seen";
      std::string again;
      for (const auto& u : in.trials) {
        if (u.retry_of == t->id) again = u.id + (u.valid ? " (ok)" : u.faults.empty() ? " (invalid)" : " (faulted)");
      }
      line("| " + Md(t->id) + " | " + std::string(measure::TrialRoleName(t->role)) + " | " + Md(what) + " | " + Md(again) + " | " + Md(t->injected) +
           " |");
    }
  }
  std::vector<const session::CandidateRecord*> patches;
  for (const auto& c : s.candidates) {
    if (!c.patch.empty()) patches.push_back(&c);
  }
  if (!patches.empty()) {
    line("");
    line("## Source patches");
    line("");
    line("Every patch went through the policy gate (rules in data/policy/rules.yaml) and an isolated worktree; "
         "only a KEEP from paired trials, with a sign-off, is committed onto the accepted line.");
    line("");
    line("| candidate | patch | verdict | gain | diff / rule | reason |");
    line("|---|---|---|---|---|---|");
    for (const auto* c : patches) {
      line("| " + c->id + " | " + Md(c->patch) + " | **" + V(c->verdict) + "** | " + (c->pairs ? Pct(c->gain) : "") +
           " | " + Md(c->rationale) + " | " + Md(c->reason) + " |");
    }
  }
  if (!s.sweep.empty()) {
    line("");
    line("## Sweep (best vs stock per operating point)");
    line("");
    line("The point's best is the session's best, or a variant re-tuned for the point (its load-tracking knobs set "
         "for it) that beat the point's winner paired; its figures are then the variant's.");
    line("");
    const session::PhaseRecord* last_sweep = nullptr;  // the sweep these points come from
    for (const auto& ph : s.phases) {
      if (ph.phase == session::Phase::kSweep && ph.status == session::PhaseStatus::kDone) last_sweep = &ph;
    }
    if (last_sweep) {
      if (size_t at = last_sweep->note.find(session::kSweepUnmeasured); at != std::string::npos) {
        line("Operating points " + last_sweep->note.substr(at) + ".");
        line("");
      }
    }
    line("| concurrency | ISL | OSL | stock " + spec.objective.metric + " | best | verdict | point's best | "
         "re-tuned | stock tok/s | best tok/s | stock p50 tok/s/user | best | trials |");
    line("|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    for (const auto& p : s.sweep) {
      std::string retune = p.retune_config.empty() ? "" : Md(p.retune_config) + ": " + V(p.retune_verdict);
      if (p.retune_verdict && (*p.retune_verdict == Verdict::kKeep || *p.retune_verdict == Verdict::kRevert ||
                               *p.retune_verdict == Verdict::kInconclusive)) {
        retune += " " + Pct(p.retune_gain) + " vs " + (p.retune_against.empty() ? "stock" : Md(p.retune_against));
      }
      std::string trials = p.stock_trials.empty() ? "" : Join(p.stock_trials, ",") + " / " + Join(p.best_trials, ",");
      if (!p.retune_trials.empty()) {
        trials += (trials.empty() ? "re-tune " : "; re-tune ") + Join(p.retune_base_trials, ",") + " / " +
                  Join(p.retune_trials, ",");
      }
      line("| " + std::to_string(p.concurrency) + " | " + std::to_string(p.isl) + " | " + std::to_string(p.osl) +
           " | " + F("%.4g", p.stock_objective) + " | " + F("%.4g", p.best_objective) + " | " + V(p.verdict) + " | " +
           Md(p.best_config.empty() ? "(stock)" : p.best_config) + " | " + retune + " | " + F("%.1f", p.stock_tps) +
           " | " + F("%.1f", p.best_tps) + " | " + F("%.2f", p.stock_intvty) + " | " + F("%.2f", p.best_intvty) +
           " | " + Md(trials) + " |");
    }
    AreaIndex area = SweepAreaIndex(in);
    line("");
    line("Pareto front of throughput per " + std::string(spec.target.num_gpus > 0 ? "GPU" : "device (CPU)") +
         " (tok/s) against p50 interactivity (tok/s/user), as (interactivity, throughput):");
    line("");
    line("- stock: " + FrontText(area.stock_front) + "; polygon area " + F("%.4g", area.stock_area));
    line("- best: " + FrontText(area.best_front) + "; polygon area " + F("%.4g", area.best_area));
    line("- **polygon-area index (best / stock): " + (area.index ? F("%.3f", *area.index) : std::string("n/a")) +
         "** (polygon: the origin, the axes and the front joined by straight segments; reference point (0, 0))");
    const auto loads = MaxLoadAtSlo(s);
    if (!loads.empty()) {
      line("");
      line("Max concurrency at SLO (the highest load of the grid at which each configuration met every SLO on its "
           "pooled requests; between grid points bisected by the sweep, `workload.sweep.slo_search` probes of " +
           std::to_string(std::max(1, spec.measurement.min_pairs)) + " trials each):");
      line("");
      auto at = [&](const std::optional<int>& c, double tps, const session::SloLoadSearch* search) {
        if (!c) return std::string("no grid point");
        std::string detail;
        if (tps > 0) detail = F("%.1f", tps) + " tok/s";
        if (search) detail += (detail.empty() ? "" : "; ") + SloSearchText(*search);
        return "c" + std::to_string(*c) + (detail.empty() ? "" : " (" + Md(detail) + ")");
      };
      for (const LoadAtSlo& l : loads) {
        line("- ISL " + std::to_string(l.isl) + " / OSL " + std::to_string(l.osl) + ": stock " +
             at(l.stock_concurrency, l.stock_tps, l.stock_search) + ", best " +
             at(l.best_concurrency, l.best_tps, l.best_search));
      }
    }
  }
  line("");
  line("## Phases");
  line("");
  line("| phase | cycle | start (s) | end (s) | status | note |");
  line("|---|---|---|---|---|---|");
  for (const auto& p : s.phases) {
    line("| " + std::string(session::PhaseName(p.phase)) + " | " + std::to_string(p.cycle) + " | " +
         F("%.0f", p.started_s) + " | " + F("%.0f", p.finished_s) + " | " +
         std::string(session::PhaseStatusName(p.status)) + " | " + Md(p.note) + " |");
  }
  if (!s.warm_replay.empty() || !s.kb_result.empty() || !s.roofline.empty() || !s.kernel.empty()) {
    line("");
    line("## Knowledge base, roofline and kernels");
    line("");
    if (!s.warm_replay.empty()) line("- Warm start: " + Md(s.warm_replay));
    if (!s.kb_result.empty()) line("- Recipe: " + Md(s.kb_result));
    if (!s.roofline.empty()) line("- Roofline: " + Md(s.roofline));
    if (!s.kernel.empty()) line("- Kernel phase: " + Md(s.kernel));
  }
  if (!s.agents.empty()) {
    line("");
    line("## Agents");
    line("");
    line("Agents propose and review; every number above was measured by hone. Predicted gains are claims, "
         "shown next to the measured ones.");
    line("");
    o += Fenced(s.agents);
  }
  if (!in.search_summary.empty()) {
    line("");
    line("## Search");
    line("");
    o += Fenced(in.search_summary);
  }
  line("");
  line("## Trials");
  line("");
  line("| trial | role | config | point | status | " + spec.objective.metric + " | TTFT p50 ms | TPOT p50 ms | wall s |");
  line("|---|---|---|---|---|---|---|---|---|");
  for (const auto& t : in.trials) {
    const bool measured = t.launched && !t.cut();  // a cut trial's latencies are not a result
    std::string status = t.cut()       ? "cut: " + t.failure_detail
                         : !t.launched ? "launch failed: " + t.failure_kind
                         : !t.valid    ? "invalid"
                                       : "ok";
    line("| " + Md(t.id) + " | " + std::string(measure::TrialRoleName(t.role)) + " | `" + Md(t.config.ToString()) +
         "` | " + t.point.Label() + " | " + Md(status) +
         " | " + (t.valid ? F("%.4g", t.objective) : "") + " | " +
         (measured ? F("%.1f", t.result.ttft.p50 * 1e3) : "") + " | " +
         (measured ? F("%.2f", t.result.tpot.p50 * 1e3) : "") + " | " + F("%.1f", t.wall_s) + " |");
  }
  return o;
}

namespace {

// Objective over time: one dot per valid trial (x = trial order), colored by role,
// with the stock baseline and the final validated best as reference lines.
std::string ObjectivePlot(const ReportInput& in) {
  const int w = 760, h = 300, ml = 60, mr = 20, mt = 20, mb = 40;
  std::vector<const measure::TrialOutcome*> pts;
  double lo = 1e300, hi = -1e300;
  for (const auto& t : in.trials) {
    if (!t.valid) continue;
    pts.push_back(&t);
    lo = std::min(lo, t.objective);
    hi = std::max(hi, t.objective);
  }
  std::string svg = "<svg xmlns='http://www.w3.org/2000/svg' width='" + std::to_string(w) + "' height='" +
                    std::to_string(h) + "' role='img' aria-label='objective over trials'>";
  svg += "<rect width='100%' height='100%' fill='white'/>";
  if (pts.empty()) return svg + "<text x='20' y='40'>no valid trials</text></svg>";
  if (hi - lo < 1e-9) hi = lo + 1;
  double pad = (hi - lo) * 0.1;
  lo = std::max(0.0, lo - pad);
  hi += pad;
  auto X = [&](size_t i) { return ml + (w - ml - mr) * (pts.size() == 1 ? 0.5 : static_cast<double>(i) / (pts.size() - 1)); };
  auto Y = [&](double v) { return mt + (h - mt - mb) * (1 - (v - lo) / (hi - lo)); };
  svg += "<line x1='" + std::to_string(ml) + "' y1='" + std::to_string(h - mb) + "' x2='" + std::to_string(w - mr) +
         "' y2='" + std::to_string(h - mb) + "' stroke='#444'/>";
  svg += "<line x1='" + std::to_string(ml) + "' y1='" + std::to_string(mt) + "' x2='" + std::to_string(ml) + "' y2='" +
         std::to_string(h - mb) + "' stroke='#444'/>";
  for (int k = 0; k <= 4; ++k) {
    double v = lo + (hi - lo) * k / 4;
    svg += "<text x='" + std::to_string(ml - 6) + "' y='" + F("%.1f", Y(v) + 4) +
           "' font-size='11' text-anchor='end' fill='#444'>" + F("%.3g", v) + "</text>";
  }
  svg += "<text x='" + std::to_string((w + ml) / 2) + "' y='" + std::to_string(h - 8) +
         "' font-size='12' text-anchor='middle' fill='#222'>trial (in order)</text>";
  const auto& s = *in.state;
  auto hline = [&](double v, const char* color, const std::string& label) {
    if (v <= 0) return;
    svg += "<line x1='" + std::to_string(ml) + "' x2='" + std::to_string(w - mr) + "' y1='" + F("%.1f", Y(v)) +
           "' y2='" + F("%.1f", Y(v)) + "' stroke='" + color + "' stroke-dasharray='5,4'/>";
    svg += "<text x='" + std::to_string(w - mr - 4) + "' y='" + F("%.1f", Y(v) - 4) +
           "' font-size='11' text-anchor='end' fill='" + color + "'>" + HtmlEscape(label) + "</text>";
  };
  hline(s.baseline_objective, "#888", "stock baseline");
  if (s.validated) hline(s.validated_best_objective, "#0a7", "validated best");
  std::map<std::string, const char*> colors = {{"baseline", "#666"}, {"aa", "#999"},       {"screen", "#f90"},
                                               {"incumbent", "#36c"}, {"candidate", "#c33"}, {"validate", "#0a7"},
                                               {"sweep", "#a3c"},     {"enablement", "#000"}};
  for (size_t i = 0; i < pts.size(); ++i) {
    const std::string role(measure::TrialRoleName(pts[i]->role));
    const char* c = colors.count(role) ? colors[role] : "#333";
    svg += "<circle cx='" + F("%.1f", X(i)) + "' cy='" + F("%.1f", Y(pts[i]->objective)) + "' r='4' fill='" + c +
           "'><title>" + HtmlEscape(pts[i]->id + " " + role + " " + pts[i]->config.ToString() + ": " +
                                    F("%.4g", pts[i]->objective)) +
           "</title></circle>";
  }
  int lx = ml + 10;
  for (const auto& [role, color] : colors) {
    svg += "<circle cx='" + std::to_string(lx) + "' cy='" + std::to_string(mt + 6) + "' r='4' fill='" + color + "'/>";
    svg += "<text x='" + std::to_string(lx + 8) + "' y='" + std::to_string(mt + 10) + "' font-size='11' fill='#222'>" +
           role + "</text>";
    lx += 18 + static_cast<int>(role.size()) * 7;
  }
  return svg + "</svg>";
}

// Throughput vs interactivity: stock and best per sweep point, joined by an arrow.
std::string SweepPlot(const ReportInput& in) {
  const auto& sweep = in.state->sweep;
  const int w = 760, h = 320, ml = 60, mr = 20, mt = 20, mb = 44;
  std::string svg = "<svg xmlns='http://www.w3.org/2000/svg' width='" + std::to_string(w) + "' height='" +
                    std::to_string(h) + "' role='img' aria-label='throughput vs interactivity'>";
  svg += "<rect width='100%' height='100%' fill='white'/>";
  double xmax = 0, ymax = 0;
  for (const auto& p : sweep) {
    xmax = std::max({xmax, p.stock_intvty, p.best_intvty});
    ymax = std::max({ymax, p.stock_tps, p.best_tps});
  }
  if (sweep.empty() || xmax <= 0 || ymax <= 0) return svg + "<text x='20' y='40'>no sweep points</text></svg>";
  xmax *= 1.1;
  ymax *= 1.1;
  auto X = [&](double v) { return ml + (w - ml - mr) * v / xmax; };
  auto Y = [&](double v) { return mt + (h - mt - mb) * (1 - v / ymax); };
  svg += "<line x1='" + std::to_string(ml) + "' y1='" + std::to_string(h - mb) + "' x2='" + std::to_string(w - mr) +
         "' y2='" + std::to_string(h - mb) + "' stroke='#444'/><line x1='" + std::to_string(ml) + "' y1='" +
         std::to_string(mt) + "' x2='" + std::to_string(ml) + "' y2='" + std::to_string(h - mb) + "' stroke='#444'/>";
  svg += "<text x='" + std::to_string((w + ml) / 2) + "' y='" + std::to_string(h - 10) +
         "' font-size='12' text-anchor='middle'>interactivity p50 (tok/s/user)</text>";
  svg += "<text x='14' y='" + std::to_string(h / 2) + "' font-size='12' transform='rotate(-90 14 " +
         std::to_string(h / 2) + ")' text-anchor='middle'>total tok/s</text>";
  for (int k = 0; k <= 4; ++k) {
    svg += "<text x='" + std::to_string(ml - 6) + "' y='" + F("%.1f", Y(ymax * k / 4) + 4) +
           "' font-size='11' text-anchor='end'>" + F("%.3g", ymax * k / 4) + "</text>";
    svg += "<text x='" + F("%.1f", X(xmax * k / 4)) + "' y='" + std::to_string(h - mb + 14) +
           "' font-size='11' text-anchor='middle'>" + F("%.3g", xmax * k / 4) + "</text>";
  }
  // The fronts, in total tok/s like the points (the index divides both by the GPUs).
  AreaIndex area = SweepAreaIndex(in);
  const double gpus = std::max(1, in.spec->target.num_gpus);
  auto polyline = [&](const std::vector<FrontPoint>& front, const char* color) {
    std::string pts;
    for (const FrontPoint& f : front) pts += F("%.1f", X(f.x)) + "," + F("%.1f", Y(f.y * gpus)) + " ";
    return "<polyline points='" + pts + "' fill='none' stroke='" + color + "' stroke-dasharray='4 3'/>";
  };
  svg += polyline(area.stock_front, "#888") + polyline(area.best_front, "#0a7");
  for (const auto& p : sweep) {
    std::string label = "c" + std::to_string(p.concurrency) + " " + std::to_string(p.isl) + "/" + std::to_string(p.osl);
    svg += "<line x1='" + F("%.1f", X(p.stock_intvty)) + "' y1='" + F("%.1f", Y(p.stock_tps)) + "' x2='" +
           F("%.1f", X(p.best_intvty)) + "' y2='" + F("%.1f", Y(p.best_tps)) + "' stroke='#bbb'/>";
    svg += "<circle cx='" + F("%.1f", X(p.stock_intvty)) + "' cy='" + F("%.1f", Y(p.stock_tps)) +
           "' r='5' fill='#888'><title>stock " + label + "</title></circle>";
    svg += "<circle cx='" + F("%.1f", X(p.best_intvty)) + "' cy='" + F("%.1f", Y(p.best_tps)) +
           "' r='5' fill='#0a7'><title>best " + label + "</title></circle>";
    svg += "<text x='" + F("%.1f", X(p.best_intvty) + 7) + "' y='" + F("%.1f", Y(p.best_tps) - 6) +
           "' font-size='11'>" + label + "</text>";
  }
  return svg + "</svg>";
}

// A table row's cells: split at '|' that is not escaped.
std::vector<std::string> SplitCells(const std::string& row) {
  std::vector<std::string> cells(1);
  for (size_t i = 0; i < row.size(); ++i) {
    if (row[i] == '\\' && i + 1 < row.size()) {
      cells.back() += row.substr(i, 2);
      ++i;
    } else if (row[i] == '|') {
      cells.emplace_back();
    } else {
      cells.back() += row[i];
    }
  }
  return cells;
}

// Minimal Markdown-to-HTML for the report's own subset (headings, tables, code,
// paragraphs, bullet lists, **bold**, `code`).
std::string Inline(const std::string& s) {
  std::string out;
  bool bold = false, code = false;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 1 < s.size()) {
      out += HtmlEscape(std::string(1, s[++i]));  // an escaped character is text
    } else if (s.compare(i, 2, "**") == 0 && !code) {
      out += bold ? "</b>" : "<b>";
      bold = !bold;
      ++i;
    } else if (s[i] == '`') {
      out += code ? "</code>" : "<code>";
      code = !code;
    } else {
      out += HtmlEscape(std::string(1, s[i]));
    }
  }
  if (bold) out += "</b>";
  if (code) out += "</code>";
  return out;
}

std::string MarkdownToHtml(const std::string& md) {
  std::string out;
  bool in_table = false, in_list = false;
  std::string fence;  // the open code block's fence ("" outside one)
  for (const std::string& raw : Split(md, '\n')) {
    std::string line = raw;
    const bool in_code = !fence.empty();
    if (!in_code && line.starts_with("```")) {
      fence = line.substr(0, line.find_first_not_of('`'));
      out += "<pre>";
      continue;
    }
    if (in_code && Trim(line) == fence) {
      out += "</pre>\n";
      fence.clear();
      continue;
    }
    if (in_code) {
      out += HtmlEscape(line) + "\n";
      continue;
    }
    bool table_row = line.starts_with("|");
    if (in_table && !table_row) {
      out += "</table>\n";
      in_table = false;
    }
    bool list_item = line.starts_with("- ");
    if (in_list && !list_item) {
      out += "</ul>\n";
      in_list = false;
    }
    if (table_row) {
      if (line.find("|---") == 0) continue;
      auto cells = SplitCells(line.substr(1, line.size() - 2));
      std::string tag = in_table ? "td" : "th";
      if (!in_table) {
        out += "<table>\n";
        in_table = true;
      }
      out += "<tr>";
      for (const auto& c : cells) out += "<" + tag + ">" + Inline(std::string(Trim(c))) + "</" + tag + ">";
      out += "</tr>\n";
    } else if (line.starts_with("## ")) {
      out += "<h2>" + Inline(line.substr(3)) + "</h2>\n";
    } else if (line.starts_with("# ")) {
      out += "<h1>" + Inline(line.substr(2)) + "</h1>\n";
    } else if (list_item) {
      if (!in_list) {
        out += "<ul>\n";
        in_list = true;
      }
      out += "<li>" + Inline(line.substr(2)) + "</li>\n";
    } else if (!Trim(line).empty()) {
      out += "<p>" + Inline(line) + "</p>\n";
    }
  }
  if (in_table) out += "</table>\n";
  if (in_list) out += "</ul>\n";
  return out;
}

}  // namespace

std::string RenderHtml(const ReportInput& in) {
  std::string md = RenderMarkdown(in);
  std::string body = MarkdownToHtml(md);
  // The plots go right after the outcome section.
  std::string plots = "<h2>Objective over the session</h2>\n" + ObjectivePlot(in) + "\n";
  if (!in.state->sweep.empty()) plots += "<h2>Throughput vs interactivity (sweep)</h2>\n" + SweepPlot(in) + "\n";
  size_t at = body.find("<h2>Stages</h2>");
  if (at == std::string::npos) at = body.size();
  body.insert(at, plots);
  return "<!doctype html>\n<html lang='en'><head><meta charset='utf-8'><title>hone report: " +
         HtmlEscape(in.state->name) +
         "</title>\n<style>body{font-family:system-ui,sans-serif;max-width:1100px;margin:24px auto;padding:0 16px;"
         "color:#222}table{border-collapse:collapse;margin:8px 0;font-size:13px}td,th{border:1px solid #ccc;"
         "padding:3px 6px;vertical-align:top}th{background:#f3f3f3}pre{background:#f6f6f6;padding:8px;overflow-x:auto}"
         "code{background:#f3f3f3;padding:0 3px}h2{border-bottom:1px solid #ddd;margin-top:28px}</style>\n"
         "</head><body>\n" +
         body + "</body></html>\n";
}

std::string RenderSummaryJson(const ReportInput& in) {
  using json = nlohmann::ordered_json;
  const session::SessionState& s = *in.state;
  auto cfg = [](const Config& c) {
    json j = json::object();
    for (const auto& [k, v] : c.values()) j[k] = v;
    return j;
  };
  json stages = json::array();
  for (const Stage& st : BuildStages(in)) {
    stages.push_back({{"name", st.name}, {"gain_vs_baseline", st.gain_vs_baseline}, {"stage_gain", st.stage_gain},
                      {"evidence", st.evidence}});
  }
  json cands = json::array();
  for (const auto& c : s.candidates) {
    cands.push_back({{"id", c.id}, {"phase", session::CandidatePhaseName(c.phase)}, {"cycle", c.cycle}, {"delta", cfg(c.delta)},
                     {"verdict", V(c.verdict)}, {"gain", c.gain}, {"ci", {c.ci_lo, c.ci_hi}}, {"pairs", c.pairs},
                     {"accuracy", c.accuracy}, {"flagged", Flagged(c)}, {"trials", c.candidate_trials},
                     {"slo", c.slo}, {"reason", c.reason}});
    if (!c.patch.empty()) cands.back()["patch"] = c.patch;
  }
  json j = {{"schema", "hone-summary/1"},
            {"session_id", s.session_id},
            {"name", s.name},
            {"stop_reason", s.stop_reason},
            {"objective", {{"metric", in.spec->objective.metric}, {"maximize", in.spec->objective.maximize}}},
            {"baseline", {{"config", cfg(s.stock)}, {"value", s.baseline_objective}, {"trials", s.baseline_trials},
                          {"noise_floor", s.noise_floor}}},
            {"best", {{"config", cfg(s.best)}, {"launch_command", in.best_command}, {"server_binary", s.server_binary}}},
            {"validated", s.validated
                              ? json{{"gain", s.validated_gain}, {"ci", {s.validated_lo, s.validated_hi}},
                                     {"verdict", V(s.validation_verdict)}, {"best_value", s.validated_best_objective},
                                     {"stock_value", s.validated_stock_objective}, {"trials", s.validation_trials},
                                     {"accuracy", s.close_accuracy}}
                              : json(nullptr)},
            {"slo", in.spec->objective.slos.empty()
                        ? json(nullptr)
                        : json{{"feasible", s.slo_infeasible.empty()},
                               {"infeasible", s.slo_infeasible},
                               {"stock", s.stock_slo},
                               {"best", s.best_slo}}},
            {"accuracy_gate", json::parse(session::AccuracyGateJson(s.accuracy_gate))},
            {"stages", stages},
            {"candidates", cands},
            {"trials_run", s.trials_run},
            {"hardware", in.hardware},
            {"framework_version", in.framework_version},
            {"model", in.model},
            {"model_parameters", in.model_parameters},
            {"precision", in.precision},
            {"warm_replay", s.warm_replay},
            {"kb_result", s.kb_result}};
  if (!s.sweep.empty()) {
    json points = json::array();
    for (const auto& p : s.sweep) {
      points.push_back({{"concurrency", p.concurrency}, {"isl", p.isl}, {"osl", p.osl}, {"verdict", V(p.verdict)},
                        {"best_config", p.best_config}, {"stock_tps", p.stock_tps}, {"best_tps", p.best_tps},
                        {"stock_intvty_p50", p.stock_intvty}, {"best_intvty_p50", p.best_intvty}});
      if (!p.retune_config.empty()) {
        points.back()["retune"] = {{"config", p.retune_config}, {"against", p.retune_against},
                                   {"verdict", V(p.retune_verdict)}, {"gain", p.retune_gain},
                                   {"base_trials", p.retune_base_trials}, {"trials", p.retune_trials}};
      }
    }
    AreaIndex area = SweepAreaIndex(in);
    auto front = [](const std::vector<FrontPoint>& f) {
      json a = json::array();
      for (const FrontPoint& p : f) a.push_back({{"intvty", p.x}, {"tps_per_device", p.y}});
      return a;
    };
    j["sweep"] = {{"points", points},
                  {"stock_front", front(area.stock_front)},
                  {"best_front", front(area.best_front)},
                  {"stock_area", area.stock_area},
                  {"best_area", area.best_area},
                  {"area_index", area.index ? json(*area.index) : json(nullptr)},
                  {"area_reference", "origin (0, 0)"}};
    json loads = json::array();
    for (const LoadAtSlo& l : MaxLoadAtSlo(s)) {
      auto arm = [](const std::optional<int>& c, double tps, const session::SloLoadSearch* search) {
        if (!c) return json(nullptr);
        json a = {{"concurrency", *c}, {"total_tps", tps}};
        if (search) {
          json probes = json::array();
          for (const session::SloLoadProbe& p : search->probes) {
            probes.push_back({{"concurrency", p.concurrency}, {"met", p.met}, {"total_tps", p.tps},
                              {"slo", p.slo}, {"trials", p.trials}});
          }
          a["bisection"] = {{"config", search->config}, {"grid_met", search->grid_lo},
                            {"grid_missed", search->grid_hi}, {"met", search->lo}, {"missed", search->hi},
                            {"probes", probes}, {"stopped", search->note}};
        }
        return a;
      };
      loads.push_back({{"isl", l.isl}, {"osl", l.osl}, {"stock", arm(l.stock_concurrency, l.stock_tps, l.stock_search)},
                       {"best", arm(l.best_concurrency, l.best_tps, l.best_search)}});
    }
    if (!loads.empty()) j["sweep"]["max_concurrency_at_slo"] = loads;
  }
  return j.dump(2) + "\n";
}

Status WriteReports(const ReportInput& in, const std::string& run_dir) {
  HONE_TRY(sys::WriteFileAtomic(fs::path(run_dir) / "report.md", RenderMarkdown(in)));
  HONE_TRY(sys::WriteFileAtomic(fs::path(run_dir) / "report.html", RenderHtml(in)));
  return sys::WriteFileAtomic(fs::path(run_dir) / "summary.json", RenderSummaryJson(in));
}

std::vector<measure::TrialOutcome> LoadTrials(const std::string& run_dir) {
  std::vector<measure::TrialOutcome> out;
  std::error_code ec;
  std::vector<std::string> dirs;
  for (const auto& e : fs::directory_iterator(fs::path(run_dir) / "trials", ec)) dirs.push_back(e.path().string());
  std::sort(dirs.begin(), dirs.end());
  for (const std::string& d : dirs) {
    if (auto t = measure::ReadTrialOutcome(d)) out.push_back(std::move(*t));
  }
  return out;
}

}  // namespace hone::report
