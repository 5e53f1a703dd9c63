// The session report: report.md, a self-contained report.html (inline SVG plots, no
// external assets, viewable offline) and summary.json for tools.
//
// Inputs are the session's result structs (state, spec, trial outcomes); the report
// never reads JSON blobs from the core. Every number shown names the trials that
// measured it. Sections: outcome (baseline vs best, validated gain with its
// interval), stage table (baseline -> warm replay -> framework -> kernel -> cycle N ->
// validated end to end), candidates with verdicts, accuracy, sweep, failures,
// anything kept without full validation (flagged), the best configuration as a ready
// launch command, and every trial.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"
#include "measure/trial.h"
#include "session/state.h"
#include "spec/session_spec.h"

namespace hone::report {

struct ReportInput {
  const session::SessionState* state = nullptr;
  const spec::SessionSpec* spec = nullptr;
  std::vector<measure::TrialOutcome> trials;  // every trial, in id order
  std::string best_command;                   // launch command of the best config
  std::string stock_command;
  std::string hardware;
  std::string framework_version;
  std::string model;
  uint64_t model_parameters = 0;              // weights in the model file (0: unknown)
  std::string precision;                      // the stock's weight precision (knowledge-base identity)
  std::string search_summary;                 // the proposer's description
};

struct Stage {
  std::string name;
  double gain_vs_baseline = 0;  // cumulative, relative
  double stage_gain = 0;        // this stage alone
  std::string evidence;         // candidate / trial ids
};
std::vector<Stage> BuildStages(const ReportInput& in);

// "Max concurrency at SLO": per ISL/OSL pair of the sweep, the highest concurrency at
// which each arm met every SLO on its pooled requests, with its throughput there
// (unset: no point of the grid met it; 0 tok/s: not known), refined by the sweep's
// bisection between grid points where it ran (the search then points into the state).
// Empty without SLO-checked sweep points.
struct LoadAtSlo {
  int64_t isl = 0, osl = 0;
  std::optional<int> stock_concurrency, best_concurrency;
  double stock_tps = 0, best_tps = 0;
  const session::SloLoadSearch* stock_search = nullptr;
  const session::SloLoadSearch* best_search = nullptr;
};
// One arm's bisection in words: "bisected between c4 (met) and c16 (missed): c10
// missed, c7 missed, c5 met, c6 missed".
std::string SloSearchText(const session::SloLoadSearch& s);
std::vector<LoadAtSlo> MaxLoadAtSlo(const session::SessionState& state);

std::string RenderMarkdown(const ReportInput& in);
std::string RenderHtml(const ReportInput& in);
std::string RenderSummaryJson(const ReportInput& in);

// Writes report.md, report.html and summary.json into the run directory.
Status WriteReports(const ReportInput& in, const std::string& run_dir);

// Loads every trial outcome under run_dir/trials.
std::vector<measure::TrialOutcome> LoadTrials(const std::string& run_dir);

}  // namespace hone::report
