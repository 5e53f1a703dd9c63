// ScriptedExecutor: a deterministic stand-in for real trials, for hone's own fault
// tests only. `hone run` uses it when HONE_TEST_EXECUTOR names a measurements file
// (docs/reliability.md); nothing else ever selects it, and the real executor stays
// the default.
//
// A trial's objective is base x the factors of its knob values ("threads=1": 0.6) x
// (1 + noise * z), with z drawn from (seed, configuration, role, k), where k counts the
// trials of the same configuration and role already finished in the run directory.
// A session killed and resumed any number of times therefore measures exactly what an
// uninterrupted one does. Each trial holds a stand-in server (`sleep`, a child in its
// own process group under the guard) for `trial_ms` of real time and logs its pid to
// <run_dir>/scripted-servers.pids, so a test can count orphans after a kill -9.
// Measurements file (JSON):
//   {"base": 100, "noise": 0.02, "seed": 7, "trial_ms": 300,
//    "factors": {"threads=1": 0.6}, "launch_failures": {"ubatch_size=8": "bad_flag"},
//    "inaccurate": ["cache_type_k=q4_0"], "point_factors": {"4": {"parallel=4": 1.25}}}
// (point_factors: extra factors at one concurrency, for the sweep's operating points;
// optional "itl_ms": {"(stock)": 10, "poll=0": 3}: 8 requests per trial whose
// inter-token gaps are that many ms per unit of load (the first listed knob=value the
// configuration has, else "(stock)"), for the session's SLO checks)
// Not thread-safe (one trial at a time, like the real executor).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "measure/trial.h"

namespace hone::measure {

class ScriptedExecutor final : public TrialExecutor {
 public:
  static Result<std::unique_ptr<ScriptedExecutor>> Load(const std::string& path, const std::string& run_dir);
  Result<TrialOutcome> Run(const TrialRequest& request) override;
  Status PrepareAccuracy(const Config&) override { return Ok(); }
  Result<AccuracyOutcome> CheckAccuracy(const Config& config, const std::string& label,
                                        const std::string& server_binary = "") override;

 private:
  ScriptedExecutor() = default;
  int FinishedLike(const TrialRequest& request) const;

  std::string run_dir_;
  double base_ = 100;
  double noise_ = 0.02;
  uint64_t seed_ = 7;
  int trial_ms_ = 300;
  std::map<std::string, double> factors_;
  std::map<std::string, std::map<std::string, double>> point_factors_;  // concurrency -> factors
  std::map<std::string, std::string> launch_failures_;
  std::vector<std::string> inaccurate_;
  std::map<std::string, double> itl_ms_;  // per unit of concurrency
};

}  // namespace hone::measure
