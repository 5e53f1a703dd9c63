#include "session/ledger.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "core/strings.h"
#include "sys/signals.h"

namespace hone::session {

std::string Fmt(const char* fmt, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

Ledger::Ledger(const spec::SessionSpec& spec, const SessionServices& services, SessionState& state)
    : spec_(spec),
      services_(services),
      state_(state),
      events_((std::filesystem::path(state.run_dir) / "events.jsonl").string()) {}

measure::PooledSlo Ledger::SloOf(const std::vector<std::string>& trial_ids) {
  std::vector<const bench::BenchResult*> results;
  for (const std::string& id : trial_ids) {
    auto it = results_.find(id);
    if (it == results_.end()) {
      auto o = measure::ReadTrialOutcome((std::filesystem::path(state_.run_dir) / "trials" / id).string());
      if (!o || !o->launched || !o->valid) continue;
      it = results_.emplace(id, o->result).first;
    }
    results.push_back(&it->second);
  }
  return measure::CheckPooledSlo(results, spec_.objective);
}

measure::PooledSlo Ledger::JudgeSlo(const std::vector<std::string>& trial_ids, const std::string& subject_key,
                                    const std::string& subject) {
  measure::PooledSlo slo = SloOf(trial_ids);
  Event("slo", {{subject_key, subject},
                {"ok", slo.ok ? "true" : "false"},
                {"requests", std::to_string(slo.requests)},
                {"trials", std::to_string(slo.trials)},
                {"detail", slo.Describe()}});
  return slo;
}

double Ledger::Now() const {
  return static_cast<double>(services_.clock->WallMicros() - state_.started_unix_us) * 1e-6;
}

double Ledger::Left() const {
  return state_.deadline_unix_s - static_cast<double>(services_.clock->WallMicros()) * 1e-6;
}

double Ledger::EstTrial() const {
  if (state_.trials_run == 0) return 20.0;  // before the first measurement: a guess for CPU targets
  return state_.trial_seconds_total / state_.trials_run;
}

double Ledger::EstAccuracy() const {
  // Before the first check: a guess of two trials (a launch, the probes, a perplexity run).
  if (state_.accuracy_checks_run == 0) return 2 * EstTrial();
  return state_.accuracy_seconds_total / state_.accuracy_checks_run;
}

double Ledger::CloseReserve() const {
  // Final re-validation (min_pairs pairs) and the best's accuracy check, the report,
  // and a 2% margin. Held from the end of the prelude on, whether or not something was
  // kept yet: a candidate in flight may become the best, and with the reserve at zero
  // while the stock led, a late KEEP left the close nothing to re-validate it with.
  const bool best = !state_.BestIsStock() || state_.phase != Phase::kPrelude;
  const int pairs = best ? spec_.measurement.min_pairs : 0;
  const double accuracy = best && spec_.accuracy.enabled ? EstAccuracy() * 1.15 : 0.0;
  // Its trials are priced as the close's own check prices them (CanAfford in the close:
  // the longest valid trial). A mean of fast candidate trials under-reserved a close
  // whose stock trials were the slow ones, and a session spent its reserve searching.
  return std::max(EstTrial(), state_.longest_trial_s) * 2 * pairs * 1.15 + accuracy + 5.0 + 0.02 * spec_.budget.wall_s;
}

double Ledger::LeftBeyond(int trials) const {
  return (Left() - CloseReserve()) / 1.15 - trials * EstTrial();
}

bool Ledger::CanAffordAccuracy() const {
  if (state_.phase == Phase::kClose) return !sys::InterruptRequested() && Left() >= EstAccuracy() + 5.0;
  return Left() - CloseReserve() >= EstAccuracy() * 1.15;
}

Result<measure::AccuracyOutcome> Ledger::RunAccuracy(const Config& config, const std::string& label,
                                                     const std::string& server_binary) {
  const int64_t start = services_.clock->WallMicros();
  auto a = services_.executor->CheckAccuracy(config, label, server_binary);
  ++state_.accuracy_checks_run;
  state_.accuracy_seconds_total += static_cast<double>(services_.clock->WallMicros() - start) * 1e-6;
  return a;
}

bool Ledger::CanAfford(int trials, double extra_s) const {
  if (state_.phase == Phase::kClose) {
    // The close's own re-validation: only the report's margin is left to keep. Its
    // trials are priced at the longest valid trial so far, not the mean: the budget
    // is hard, and one slow pair in the close must not run past it.
    return !sys::InterruptRequested() &&
           Left() - extra_s >= trials * std::max(EstTrial(), state_.longest_trial_s) + 5.0;
  }
  if (spec_.budget.max_trials > 0 && state_.trials_run + trials > spec_.budget.max_trials) return false;
  return LeftBeyond(trials) >= extra_s;
}

bool Ledger::Stopping() const {
  return sys::InterruptRequested() || (spec_.budget.max_trials > 0 && state_.trials_run >= spec_.budget.max_trials);
}

measure::OperatingPoint Ledger::Primary() const {
  return {spec_.workload.concurrency, spec_.workload.isl, spec_.workload.osl};
}

std::string Ledger::NextTrialId() {
  char buf[16];
  std::snprintf(buf, sizeof buf, "t%04d", state_.next_trial++);
  return buf;
}

Status Ledger::Save() {
  if (services_.proposer) {
    state_.search_state = services_.proposer->Save();
    state_.learned_conflicts = services_.proposer->LearnedConflicts();
  }
  return SaveState(state_.run_dir, state_);
}

void Ledger::Event(const std::string& type, std::vector<std::pair<std::string, std::string>> fields) {
  fields.insert(fields.begin(), {"phase", std::string(PhaseName(state_.phase))});
  if (auto s = events_.Append(type, Now(), fields); !s && !event_error_shown_) {
    event_error_shown_ = true;  // once: a full disk fails every append
    Progress("warning: the event log lost an event: " + s.error().message);
  }
}

void Ledger::Progress(const std::string& line) {
  if (services_.progress) services_.progress(line);
}

void Ledger::StartPhase(Phase phase) {
  state_.phase = phase;
  // A resumed phase continues its open record.
  if (!state_.phases.empty() && state_.phases.back().phase == phase && state_.phases.back().cycle == state_.cycle &&
      state_.phases.back().status == PhaseStatus::kRunning) {
    return;
  }
  state_.phases.push_back({phase, state_.cycle, Now(), -1, PhaseStatus::kRunning, ""});
  Event("phase_started", {{"cycle", std::to_string(state_.cycle)}});
  Progress("phase " + std::string(PhaseName(phase)) + " (cycle " + std::to_string(state_.cycle) + ")");
}

void Ledger::EndPhase(PhaseStatus status, const std::string& note) {
  if (!state_.phases.empty() && state_.phases.back().status == PhaseStatus::kRunning) {
    state_.phases.back().finished_s = Now();
    state_.phases.back().status = status;
    state_.phases.back().note = note;
  }
  const std::string name(PhaseStatusName(status));
  Event("phase_finished", {{"status", name}, {"note", note}});
  if (!note.empty()) Progress(std::string(PhaseName(state_.phase)) + ": " + name + " (" + note + ")");
}

Result<measure::TrialOutcome> Ledger::RunTrial(const Arm& arm, const measure::OperatingPoint& p) {
  HONE_ASSIGN_OR_RETURN(measure::TrialOutcome o, RunTrialOnce(arm, p, ""));
  if (o.launched && !o.faults.empty() && arm.role != measure::TrialRole::kWarmup) {
    Event("trial_retry", {{"trial", o.id}, {"faults", Join(o.faults, ", ")}});
    Progress("  " + o.id + " faulted (" + Join(o.faults, ", ") + "): measuring it again");
    return RunTrialOnce(arm, p, o.id);
  }
  return o;
}

Result<measure::TrialOutcome> Ledger::RunTrialOnce(const Arm& arm, const measure::OperatingPoint& p,
                                                   const std::string& retry_of) {
  if (sys::InterruptRequested()) return Cancelled("interrupted");
  measure::TrialRequest req{NextTrialId(), arm.role, arm.config, p, arm.server_binary, retry_of};
  // Persist the id before the trial: a crash mid-trial never reuses it.
  HONE_TRY(Save());
  const std::string role(measure::TrialRoleName(arm.role));
  Event("trial_started", {{"trial", req.id}, {"role", role}, {"config", arm.config.ToString()}, {"point", p.Label()}});
  Progress("trial " + req.id + " " + role + " " + arm.config.ToString() + BuildNote(arm.server_binary));
  HONE_ASSIGN_OR_RETURN(measure::TrialOutcome o, services_.executor->Run(req));
  ++state_.trials_run;
  state_.trial_seconds_total += o.wall_s;
  if (o.launched && o.valid) {
    results_[o.id] = o.result;
    state_.longest_trial_s = std::max(state_.longest_trial_s, o.wall_s);
  }
  std::string status = !o.launched          ? "launch_failed:" + o.failure_kind
                       : !o.faults.empty() ? "faulted"
                       : !o.valid          ? "invalid"
                                           : "ok";
  Event("trial_finished", {{"trial", o.id},
                           {"status", status},
                           {"objective", Fmt("%.6g", o.objective)},
                           {"wall_s", Fmt("%.2f", o.wall_s)}});
  if (o.launched && o.valid) {
    Progress("  " + o.id + " " + spec_.objective.metric + " = " + Fmt("%.4g", o.objective));
  } else {
    Progress("  " + o.id + " " + status + (o.failure_detail.empty() ? "" : ": " + o.failure_detail.substr(0, 160)));
  }
  return o;
}

CandidateRecord& Ledger::NewCandidate(CandidatePhase phase, const search::Candidate& idea, const Config& incumbent) {
  CandidateRecord c;
  char buf[16];
  std::snprintf(buf, sizeof buf, "c%03d", state_.next_candidate++);
  c.id = buf;
  c.phase = phase;
  c.cycle = state_.cycle;
  c.idea = idea.idea;
  c.rationale = idea.rationale;
  c.delta = idea.delta;
  c.incumbent = incumbent;
  c.config = incumbent.Merged(idea.delta);
  c.predicted_gain = idea.expected_gain;
  c.server_binary = state_.server_binary;
  c.incumbent_binary = state_.server_binary;
  c.started_s = Now();
  state_.candidates.push_back(std::move(c));
  Event("candidate_started", {{"candidate", state_.candidates.back().id},
                              {"idea", idea.idea},
                              {"config", state_.candidates.back().config.ToString()}});
  Progress("candidate " + state_.candidates.back().id + ": " + idea.idea);
  return state_.candidates.back();
}

CandidateRecord* Ledger::FindCandidate(const std::string& id) {
  for (auto& c : state_.candidates) {
    if (c.id == id) return &c;
  }
  return nullptr;
}

}  // namespace hone::session
