// FakeExecutor: a TrialExecutor for coordinator tests. A configuration's objective is
// a product of per-knob factors ("speed=fast" -> 1.2) times seeded noise; knob values
// can be made to fail to launch or to fail the accuracy gate. Each trial advances a
// FakeClock by a fixed cost (and optionally sleeps for real, to be killable), writes
// a real trial directory, and records what ran.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core/rng.h"
#include "core/strings.h"
#include "measure/trial.h"
#include "search/proposer.h"
#include "sys/files.h"
#include "sys/process.h"
#include "testing/fake_clock.h"

namespace hone::session {

class FakeExecutor final : public measure::TrialExecutor {
 public:
  std::map<std::string, double> factors;         // "knob=value" -> multiplier
  std::map<std::string, std::string> crashes;    // "knob=value" -> failure kind
  std::vector<std::string> inaccurate;           // "knob=value" failing the accuracy gate
  double base = 100;
  double noise = 0.005;
  double trial_cost_s = 10;
  std::function<double(const measure::TrialRequest&)> cost_s;  // optional: a trial's own cost (slow roles)
  double accuracy_cost_s = 0;                    // clock seconds per accuracy check (probes, perplexity)
  testing::FakeClock* clock = nullptr;           // advanced per trial (optional)
  std::chrono::milliseconds real_sleep{0};       // real time per trial (kill tests)
  std::string run_dir;
  std::string pid_log;                           // kill tests: each trial's "server" pid
  std::vector<measure::TrialRequest> ran;
  int accuracy_checks = 0;
  std::vector<std::string> invalid_trials;       // trial ids that run but are invalid
  std::vector<std::string> stalls;               // "knob=value" whose runs serve no token (invalid)
  // Trials whose server misbehaves: faulted, with a bogus objective ten times the base.
  std::function<bool(const measure::TrialRequest&)> fault_if;
  // Trials that fail as infrastructure (an error, not an outcome), e.g. a full disk.
  std::function<std::optional<Error>(const measure::TrialRequest&)> error_if;
  // Optional: rewrites a trial's objective (after noise), e.g. a burst of host noise.
  std::function<double(const measure::TrialRequest&, double)> adjust;
  // Optional: a trial's requests (per-request latencies, window), which the session's
  // pooled SLO checks read (bench::LatencySamples).
  std::function<void(const measure::TrialRequest&, bench::BenchResult&)> requests;

  Result<measure::TrialOutcome> Run(const measure::TrialRequest& req) override {
    if (error_if) {
      if (auto e = error_if(req)) return Fail(*e);
    }
    ran.push_back(req);
    const double cost = cost_s ? cost_s(req) : trial_cost_s;
    if (clock) clock->AdvanceSeconds(cost);
    measure::TrialOutcome o;
    o.id = req.id;
    o.role = req.role;
    o.config = req.config;
    o.point = req.point;
    o.retry_of = req.retry_of;
    o.wall_s = cost;
    o.dir = run_dir + "/trials/" + req.id;
    HONE_TRY(sys::EnsureDir(o.dir));
    if (!pid_log.empty()) {
      // A stand-in server: a real child process, which the guard must reap if we die.
      auto child = sys::ChildProcess::Start({.argv = {"sleep", "60"}});
      if (child) {
        (void)sys::AppendLineSync(pid_log, std::to_string((*child)->pid()));
        std::this_thread::sleep_for(real_sleep);
      }
    } else if (real_sleep.count()) {
      std::this_thread::sleep_for(real_sleep);
    }
    for (const auto& [k, v] : req.config.values()) {
      auto it = crashes.find(k + "=" + v);
      if (it != crashes.end()) {
        o.failure_kind = it->second;
        o.failure_detail = "fake " + it->second;
        HONE_TRY(measure::WriteTrialOutcome(o));
        return o;
      }
    }
    o.launched = true;
    o.valid = true;
    if (fault_if && fault_if(req)) {
      o.valid = false;
      o.faults = {"connection_reset x3"};
      o.invalid_reasons = {"faulted: connection_reset x3"};
      o.objective = base * 10;  // what a stalled incumbent would make a candidate look like
      HONE_TRY(measure::WriteTrialOutcome(o));
      return o;
    }
    for (const auto& [k, v] : req.config.values()) {
      if (std::find(stalls.begin(), stalls.end(), k + "=" + v) != stalls.end()) {
        o.valid = false;
        o.invalid_reasons = {"no token arrived inside the measurement window"};
        HONE_TRY(measure::WriteTrialOutcome(o));
        return o;
      }
    }
    if (std::find(invalid_trials.begin(), invalid_trials.end(), req.id) != invalid_trials.end()) {
      o.valid = false;
      o.invalid_reasons = {"fake: a request timed out"};
      HONE_TRY(measure::WriteTrialOutcome(o));
      return o;
    }
    double value = base;
    for (const auto& [k, v] : req.config.values()) {
      auto it = factors.find(k + "=" + v);
      if (it != factors.end()) value *= it->second;
    }
    if (auto it = binary_factors.find(req.server_binary); it != binary_factors.end()) {
      value *= it->second;
    } else if (!req.server_binary.empty()) {
      // A stand-in "binary" whose content is its speed factor (patch tests).
      if (auto text = sys::ReadFile(req.server_binary)) value *= ParseDouble(Trim(*text)).value_or(1.0);
    }
    Rng rng(MixSeed(std::hash<std::string>{}(req.id), 99));
    o.objective = value * (1 + noise * rng.NextGaussian());
    if (adjust) o.objective = adjust(req, o.objective);
    o.result.total_tps = o.objective;
    o.result.intvty["p50"] = 10;
    if (requests) requests(req, o.result);
    HONE_TRY(measure::WriteTrialOutcome(o));
    return o;
  }
  measure::AccuracyGateInfo gate;                // what AccuracyGate() reports
  measure::AccuracyGateInfo AccuracyGate() const override { return gate; }
  Status PrepareAccuracy(const Config& reference) override {
    references.push_back(reference);
    gate.prepared = gate.prepared || reference_launches;
    return reference_launches ? Ok() : Unavailable("fake: the reference does not start");
  }
  std::vector<Config> references;  // every accuracy reference prepared
  bool reference_launches = true;
  std::map<std::string, double> binary_factors;  // server_binary -> multiplier (patches)
  Result<measure::AccuracyOutcome> CheckAccuracy(const Config& config, const std::string&,
                                                 const std::string& = "") override {
    ++accuracy_checks;
    if (clock) clock->AdvanceSeconds(accuracy_cost_s);
    measure::AccuracyOutcome a;
    if (!gate.prepared) {  // as the real executor: no check without a prepared reference
      a.passed = false;
      a.detail = "not checked: no accuracy reference";
      return a;
    }
    a.ran = true;
    for (const auto& [k, v] : config.values()) {
      if (std::find(inaccurate.begin(), inaccurate.end(), k + "=" + v) != inaccurate.end()) {
        a.passed = false;
        a.token_agreement = 0.5;
      }
    }
    a.detail = a.passed ? "token agreement 100%" : "token agreement 50%";
    return a;
  }
};

// A proposer over a fixed list of single-knob ideas.
class ListProposer final : public search::Proposer {
 public:
  explicit ListProposer(std::vector<std::string> ideas) : ideas_(std::move(ideas)) {}
  std::optional<search::Candidate> Next(const search::ProposalContext& ctx) override {
    while (next_ < ideas_.size()) {
      std::string idea = ideas_[next_++];
      size_t eq = idea.find('=');
      Config delta{{idea.substr(0, eq), idea.substr(eq + 1)}};
      if (ctx.tried.contains(ctx.best.Merged(delta).Hash())) continue;
      return search::Candidate{idea, idea, delta, "test idea", 0};
    }
    return std::nullopt;
  }
  void Observe(const search::Observation& obs) override {
    observed.push_back(obs.candidate.idea + ":" + std::string(VerdictName(obs.verdict)));
    observations.push_back(obs);
  }
  std::string Save() const override { return std::to_string(next_); }
  Status Load(const std::string& s) override {
    next_ = static_cast<size_t>(ParseInt(s).value_or(0));
    return Ok();
  }
  std::string Describe() const override { return "list"; }
  std::vector<std::string> observed;
  std::vector<search::Observation> observations;

 private:
  std::vector<std::string> ideas_;
  size_t next_ = 0;
};

}  // namespace hone::session
