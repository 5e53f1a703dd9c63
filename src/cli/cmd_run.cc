// `hone run SPEC`, `hone resume DIR`, `hone status DIR`: optimization sessions. This
// file parses flags and prints; the session is composed in src/run/ (run/session.h).
#include <cstdio>
#include <filesystem>

#include "bench/metrics.h"
#include "cli/commands.h"
#include "run/session.h"
#include "core/strings.h"
#include "session/coordinator.h"
#include "sys/clock.h"
#include "sys/files.h"
#include "sys/signals.h"
#include "sys/term.h"

namespace hone::cli {

namespace fs = std::filesystem;

namespace {

void PrintOutcome(const session::SessionState& s, const spec::SessionSpec& spec, sys::Clock& clock) {
  std::printf("\nsession %s finished: %s\n", s.session_id.c_str(), s.stop_reason.c_str());
  if (!s.baseline_values.empty()) {
    std::printf("  baseline  %-22s %.4g  (trials %s)\n", spec.objective.metric.c_str(), s.baseline_objective,
                Join(s.baseline_trials, ",").c_str());
  }
  std::printf("  best      %s\n", s.BestText().c_str());
  if (s.validated) {
    std::printf("  validated %+.1f%%  (ratio %.3f, %.0f%% interval [%.3f, %.3f], %s; stock %.4g -> best %.4g)\n",
                s.validated_gain * 100, 1 + s.validated_gain, spec.measurement.confidence * 100, s.validated_lo,
                s.validated_hi, s.validation_verdict ? std::string(VerdictName(*s.validation_verdict)).c_str() : "", s.validated_stock_objective, s.validated_best_objective);
  }
  if (!s.close_accuracy.empty()) std::printf("  accuracy  %s\n", s.close_accuracy.c_str());
  if (!s.slo_infeasible.empty()) {
    std::printf("  SLO       INFEASIBLE: %s\n", s.slo_infeasible.c_str());
  } else if (!s.stock_slo.empty()) {
    std::printf("  SLO       stock: %s%s%s\n", s.stock_slo.c_str(), s.best_slo.empty() ? "" : "; best: ",
                s.best_slo.c_str());
  }
  if (!s.kb_result.empty()) std::printf("  kb        %s\n", s.kb_result.c_str());
  std::printf("  report    %s\n", (fs::path(s.run_dir) / "report.md").string().c_str());
  std::printf("  %d trials in %s\n", s.trials_run,
              HumanSeconds(static_cast<double>(clock.WallMicros() - s.started_unix_us) * 1e-6).c_str());
}

// The session's composition context: main()'s clock and runner, and progress lines on
// stderr stamped with the seconds since this command started.
run::RunContext RunContextFor(const Context& ctx) {
  run::RunContext rc;
  rc.data_dir = ctx.data_dir;
  rc.cache_dir = ctx.cache_dir;
  rc.clock = ctx.clock;
  rc.runner = ctx.runner;
  rc.progress = [clock = ctx.clock, start = ctx.clock->MonoSeconds()](const std::string& line) {
    std::fprintf(stderr, "hone [%6.0fs] %s\n", clock->MonoSeconds() - start, line.c_str());
  };
  return rc;
}

int RunSession(const spec::SessionSpec& spec, const std::string& run_dir, const Context& ctx, bool resume) {
  auto out = run::RunSession(spec, run_dir, RunContextFor(ctx), resume);
  if (!out) return ReportError(out.error());
  if (out->already_closed) {
    std::printf("session %s is already closed (%s); see %s/report.md\n", out->state.session_id.c_str(),
                out->state.stop_reason.c_str(), run_dir.c_str());
    return 0;
  }
  PrintOutcome(out->state, spec, *ctx.clock);
  return out->state.interrupted ? 130 : 0;
}

}  // namespace

Action RegisterRun(CLI::App& app, const Context& ctx) {
  auto* run = app.add_subcommand("run", "Run an optimization session from a spec (YAML)");
  auto spec_path = std::make_shared<std::string>();
  auto out_dir = std::make_shared<std::string>();
  run->add_option("spec", *spec_path, "Session spec (see docs/session-spec.md)")->required();
  run->add_option("--out", *out_dir, "Run directory (default: spec output_dir or ./hone-runs/<name>-<time>)");
  auto agents = std::make_shared<std::string>();
  run->add_option("--agents", *agents, "none: no LLM agents, the planner alone (overrides the spec's agents section)")
      ->check(CLI::IsMember({"none"}));
  auto* resume = app.add_subcommand("resume", "Continue a killed or interrupted session");
  auto resume_dir = std::make_shared<std::string>();
  resume->add_option("dir", *resume_dir, "The session's run directory")->required();
  auto resume_agents = std::make_shared<std::string>();
  resume->add_option("--agents", *resume_agents, "none: continue without LLM agents, the planner alone")
      ->check(CLI::IsMember({"none"}));
  auto* status = app.add_subcommand("status", "Show the progress of a session (running or finished)");
  auto status_dir = std::make_shared<std::string>();
  status->add_option("dir", *status_dir, "The session's run directory")->required();
  // One Action for the three subcommands (registered as three entries in main).
  return [=, &ctx]() -> int {
    if (run->parsed()) {
      auto spec = spec::LoadSessionSpec(*spec_path, bench::MetricNames());
      if (!spec) return ReportError(spec.error());
      if (!agents->empty()) spec->agents.mode = *agents;
      std::string dir = !out_dir->empty()           ? *out_dir
                        : !spec->output_dir.empty() ? spec->output_dir
                                                    : "hone-runs/" + spec->name + "-" +
                                                          ReplaceAll(sys::FormatUtc(ctx.clock->WallMicros()), ":", "");
      if (sys::FileExists(fs::path(dir) / "state.json")) {
        return ReportError(Error{ErrorCode::kAlreadyExists,
                                 dir + " already holds a session (use: hone resume " + dir + ")", {}});
      }
      if (auto s = sys::EnsureDir(dir); !s) return ReportError(s.error());
      // Keep the spec with the run: resume needs nothing else.
      auto text = sys::ReadFile(*spec_path);
      if (text) (void)sys::WriteFileAtomic(fs::path(dir) / "spec.yaml", *text);
      std::fprintf(stderr, "hone: session %s in %s\n", spec->name.c_str(), dir.c_str());
      return RunSession(*spec, fs::absolute(dir).string(), ctx, false);
    }
    if (resume->parsed()) {
      std::string dir = fs::absolute(*resume_dir).string();
      auto spec = spec::LoadSessionSpec((fs::path(dir) / "spec.yaml").string(), bench::MetricNames());
      if (!spec) return ReportError(spec.error());
      if (!resume_agents->empty()) spec->agents.mode = *resume_agents;
      return RunSession(*spec, dir, ctx, true);
    }
    if (status->parsed()) {
      auto state = session::LoadState(*status_dir);
      if (!state) return ReportError(state.error());
      std::vector<int> damaged;
      auto events = session::ReadEvents((fs::path(*status_dir) / "events.jsonl").string(), &damaged);
      if (!state->recovered.empty()) std::printf("warning: %s\n", state->recovered.c_str());
      if (!damaged.empty()) std::printf("warning: events.jsonl has %zu line(s) that are not whole events\n", damaged.size());
      std::printf("%s", session::StatusText(*state, events ? *events : std::vector<session::Event>{},
                                            static_cast<double>(ctx.clock->WallMicros()) * 1e-6)
                            .c_str());
      return 0;
    }
    return 2;
  };
}

}  // namespace hone::cli
