#include "run/session.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "model/gguf.h"
#include "core/strings.h"
#include "kb/jsonl.h"
#include "measure/scripted_executor.h"
#include "report/report.h"
#include "run/executor.h"
#include "run/knowledge.h"
#include "run/lanes.h"
#include "run/roofline.h"
#include "run/search.h"
#include "sys/clock.h"
#include "sys/files.h"
#include "sys/signals.h"
#include "sys/term.h"

#ifndef HONE_VERSION
#define HONE_VERSION "0.0.0"
#endif

namespace hone::run {

namespace fs = std::filesystem;

namespace {

class ReportCloser final : public session::Closer {
 public:
  ReportCloser(const SessionWiring& w, sys::Clock& clock) : w_(w), clock_(clock) {}

  Status Close(session::SessionState& s) override {
    if (w_.kb || !w_.kb_error.empty()) Admit(s);
    s.agents = AgentSummary(w_.agents, s);
    report::ReportInput in;
    in.state = &s;
    in.spec = &w_.spec;
    in.trials = report::LoadTrials(s.run_dir);
    in.best_command = LaunchCommand(w_.engine, w_.spec, s.best, s.server_binary);
    in.stock_command = LaunchCommand(w_.engine, w_.spec, s.stock, "");
    in.hardware = w_.hardware;
    in.framework_version = w_.engine.provisioned.version;
    in.model = w_.engine.model_name;
    if (auto f = model::ReadGguf(w_.engine.model_path)) in.model_parameters = f->ParameterCount();
    in.precision = w_.kb_query.identity.precision;
    in.search_summary = w_.proposer ? w_.proposer->Describe() : "";
    return report::WriteReports(in, s.run_dir);
  }

 private:
  void Admit(session::SessionState& s) {
    std::string why;
    const kb::Provenance provenance{HONE_VERSION, s.session_id, sys::FormatUtc(clock_.WallMicros())};
    auto req = AdmissionFor(s, w_.spec, w_.kb_query, provenance, &why);
    if (!req) {
      s.kb_result = why;
      KeepStockRecord(s, provenance, why);
      return;
    }
    Result<kb::Admission> a = w_.kb ? w_.kb->Admit(*req) : Result<kb::Admission>(Fail(Unavailable()));
    if (!a) {
      // The rules would refuse the recipe anyway: what the session learned is the
      // stock's record, beside the run (the knowledge base is not asked again).
      std::string refused = w_.kb_rules ? kb::AdmissionRejection(*req, w_.kb_rules->admission) : "";
      if (refused.empty()) {
        s.kb_result = KeepPending(s, *req, a.error().message);
      } else {
        s.kb_result = "not admitted: " + refused + " (the knowledge base was unavailable anyway: " +
                      a.error().message + ")";
        KeepStockRecord(s, provenance, s.kb_result, &a.error());
      }
    } else if (a->admitted) {
      s.kb_result = a->reason + " in " + w_.kb->path();  // "new recipe #3", "updated recipe #1 (re-activated)"
    } else {
      s.kb_result = "not admitted: " + a->reason;
      KeepStockRecord(s, provenance, s.kb_result);
    }
  }

  // No recipe to replay (the stock won; the best was not re-validated, runs a patched
  // build or was refused): what the search learned on the way is kept all the same, as
  // the stock's record; beside the run when the knowledge base cannot take it.
  // `why` is taken by value: the caller may pass s.kb_result, which this appends to.
  // `down`: the knowledge base already failed this close with that error (not asked again).
  void KeepStockRecord(session::SessionState& s, const kb::Provenance& provenance, std::string why,
                       const Error* down = nullptr) {
    auto record = StockRecordFor(s, w_.spec, w_.kb_query, provenance);
    if (!record) return;
    auto kept = down     ? Result<kb::Admission>(Fail(*down))
                : w_.kb ? w_.kb->KeepStockRecord(*record, why)
                        : Result<kb::Admission>(Fail(Unavailable()));
    if (kept) {
      s.kb_result += "; what it learned is kept: " + kept->reason + " in " + w_.kb->path();
      return;
    }
    const std::string& error = kept.error().message;
    auto pending = KeepBesideRun(s, *record, error, "the stock's record");
    s.kb_result += pending ? "; what it learned is kept in " + *pending + " (the knowledge base was unavailable: " +
                                 error + "); add it with `hone kb import " + *pending + "`"
                           : "; what it learned could not be kept (" + error + "): " + pending.error().message;
  }

  // The knowledge base could not take the recipe (locked by another process, a full
  // disk, ...): an admissible recipe is kept beside the run, never dropped (one the
  // rules refuse goes the stock's record's way: Admit).
  std::string KeepPending(const session::SessionState& s, const kb::AdmissionRequest& req, const std::string& error) {
    auto pending = KeepBesideRun(s, req.recipe, error, "the recipe");
    if (!pending) {
      return "knowledge base write failed (" + error + ") and the recipe could not be kept: " + pending.error().message;
    }
    return "knowledge base unavailable (" + error + "): the recipe is kept in " + *pending +
           "; add it with `hone kb import " + *pending + "`";
  }

  // Writes `recipe` (`what`, for the warning) to kb-pending.jsonl beside the run, for
  // `hone kb import`; returns that path.
  Result<std::string> KeepBesideRun(const session::SessionState& s, const kb::Recipe& recipe, const std::string& error,
                                    const std::string& what) {
    const std::string pending = (fs::path(s.run_dir) / "kb-pending.jsonl").string();
    HONE_TRY(sys::WriteFileAtomic(pending, kb::RecipeToJsonLine(recipe) + "\n"));
    sys::LogWarn("knowledge base unavailable (" + error + "): " + what + " is in " + pending);
    return pending;
  }

  // Why nothing reaches a knowledge base that did not open.
  Error Unavailable() const { return Error{ErrorCode::kUnavailable, w_.kb_error, {}}; }

  const SessionWiring& w_;
  sys::Clock& clock_;
};

// What a resume found damaged and recovered from (never silent): a state.json
// replaced by the previous save, event lines that are not whole events.
void NoteDamage(const session::SessionState& state, const std::string& run_dir) {
  const std::string path = (fs::path(run_dir) / "events.jsonl").string();
  session::EventLog log(path);
  if (!state.recovered.empty()) {
    sys::LogWarn(state.recovered);
    (void)log.Append("state_recovered", 0, {{"detail", state.recovered}});
  }
  std::vector<int> damaged;
  if (auto events = session::ReadEvents(path, &damaged); events && !damaged.empty()) {
    std::vector<std::string> lines;
    for (int n : damaged) lines.push_back(std::to_string(n));
    for (auto it = events->rbegin(); it != events->rend(); ++it) {
      if (it->type == "log_damaged") {
        if (it->Get("lines") == Join(lines, ",")) return;  // noted at an earlier resume
        break;
      }
    }
    std::string what = "events.jsonl: line " + Join(lines, ", ") +
                       " not a whole event (a write cut short by a crash, or damage): skipped, the file is kept as is";
    sys::LogWarn(what);
    (void)log.Append("log_damaged", 0, {{"lines", Join(lines, ",")}});
  }
}

}  // namespace

std::string AdaptSearchState(const std::string& saved, bool agents) {
  if (saved.empty()) return saved;
  auto j = nlohmann::json::parse(saved, nullptr, false);
  const bool agent_state = j.is_object() && j.contains("agent_off") && j.contains("fallback");
  if (agent_state && !agents) return j["fallback"].is_string() ? j["fallback"].get<std::string>() : "";
  // The planner's own state cannot seed an agent proposer: the planner starts afresh
  // under it (what was measured is in the state, not in the proposer).
  if (!agent_state && agents) return "";
  return saved;
}

std::unique_ptr<session::Closer> MakeReportCloser(const SessionWiring& w, const RunContext& ctx) {
  return std::make_unique<ReportCloser>(w, *ctx.clock);
}

Result<std::unique_ptr<SessionWiring>> WireSession(const spec::SessionSpec& spec, const std::string& run_dir,
                                                   const RunContext& ctx) {
  return WireSession(spec, run_dir, ctx, sys::DescribeMachine());
}

Result<std::unique_ptr<SessionWiring>> WireSession(const spec::SessionSpec& spec, const std::string& run_dir,
                                                   const RunContext& ctx, const sys::MachineInfo& machine) {
  auto w = std::make_unique<SessionWiring>();
  w->spec = spec;
  w->run_dir = run_dir;
  w->machine = machine;
  w->hardware = HardwareName(spec, machine);
  HONE_ASSIGN_OR_RETURN(w->engine, BuildEngine(spec, ctx));
  w->kb_query = {SessionIdentity(spec, w->hardware, w->engine.model_name, w->engine.model_path,
                                 w->engine.provisioned.version, w->engine.base_precision),
                 SessionWorkload(spec)};
  HONE_ASSIGN_OR_RETURN(w->executor, BuildExecutor(spec, run_dir, w->engine, w->hardware, ctx));
  // Test runs only (docs/reliability.md): faults injected into the real executor's
  // trials, or scripted trials in its place. Without these variables nothing changes.
  if (const char* plan = std::getenv("HONE_CHAOS_PLAN"); plan && *plan) {
    HONE_ASSIGN_OR_RETURN(chaos::FaultPlan p, chaos::FaultPlan::Load(plan));
    w->chaos = std::make_unique<chaos::FaultPlan>(std::move(p));
    w->executor->SetFaultPlan(w->chaos.get());
    sys::LogWarn("test run: injecting the faults of " + std::string(plan));
  }
  if (const char* scripted = std::getenv("HONE_TEST_EXECUTOR"); scripted && *scripted) {
    HONE_ASSIGN_OR_RETURN(w->test_executor, measure::ScriptedExecutor::Load(scripted, run_dir));
    sys::LogWarn("test run: trials are scripted from " + std::string(scripted) + ", not measured");
  }
  HONE_ASSIGN_OR_RETURN(w->kb, OpenKnowledgeBase(spec, ctx, &w->kb_error, &w->kb_rules));
  if (w->kb) w->warm = std::make_unique<KbWarmStart>(*w->kb, w->spec, w->kb_query, HONE_VERSION);
  HONE_ASSIGN_OR_RETURN(w->proposer, BuildProposer(spec, w->engine, w->kb.get(), w->kb_query, ctx));
  AgentsInputs agent_inputs;
  agent_inputs.catalog = &w->engine.adapter->catalog();
  agent_inputs.exclude = PlannerOptionsFor(spec, w->engine.base_precision).domain.exclude;
  if (w->kb) {
    agent_inputs.priors = KbPriors(*w->kb, w->kb_query);
    agent_inputs.kb_notes = KbNoteLines(*w->kb, w->kb_query);
  }
  HONE_ASSIGN_OR_RETURN(w->agents, BuildAgents(spec, run_dir, ctx, agent_inputs, w->proposer));
  HONE_ASSIGN_OR_RETURN(w->enablement,
                        EnablementLadder::Load(ctx.data_dir + "/data/enablement.yaml", spec.target.adapter));
  HONE_ASSIGN_OR_RETURN(w->patches, BuildPatchLane(spec, w->engine, run_dir, ctx, &w->agents));
  HONE_ASSIGN_OR_RETURN(w->kernel, BuildKernelLane(spec, machine, run_dir, ctx));
  w->closer = MakeReportCloser(*w, ctx);

  session::SessionServices& svc = w->services;
  svc.executor = w->test_executor ? w->test_executor.get() : w->executor.get();
  svc.proposer = w->proposer.get();
  svc.clock = ctx.clock;
  svc.warm_start = w->warm.get();
  svc.closer = w->closer.get();
  svc.patches = w->patches.get();
  svc.kernel = w->kernel.get();
  svc.risky = RiskyHook(w->engine.adapter->catalog());
  svc.enablement = [ladder = &w->enablement](const std::string& kind) { return ladder->Rungs(kind); };
  HONE_ASSIGN_OR_RETURN(search::Heuristics heuristics,
                        search::Heuristics::Load(ctx.data_dir + "/data/search/heuristics.yaml"));
  svc.point_variants = [spec = &w->spec, catalog = &w->engine.adapter->catalog(),
                        h = std::make_shared<const search::Heuristics>(std::move(heuristics))](
                           const Config& config, const measure::OperatingPoint& point) {
    return PointVariants(*spec, *catalog, *h, config, point);
  };
  svc.progress = ctx.progress;
  HONE_ASSIGN_OR_RETURN(svc.roofline, BuildRoofline(spec, w->engine.model_path, machine, ctx, RealCeilingProbes(ctx)));
  svc.cpus = machine.cpus;
  svc.cores = machine.physical_cores;
  svc.gpu = spec.target.num_gpus > 0;
  return w;
}

Result<SessionOutcome> RunSession(const spec::SessionSpec& spec, const std::string& run_dir, const RunContext& ctx,
                                  bool resume) {
  SessionOutcome out;
  if (resume) {
    auto loaded = session::LoadState(run_dir);
    if (!loaded && loaded.error().code == ErrorCode::kNotFound) {
      // Killed before its first save: nothing was measured yet; the session starts.
      sys::LogWarn("no state.json in " + run_dir + ": the session was stopped before it began; starting it");
      loaded = session::Coordinator::NewState(spec, run_dir, *ctx.clock);
    }
    if (!loaded) return Fail(loaded.error());
    out.state = std::move(*loaded);
    NoteDamage(out.state, run_dir);
    if (session::Coordinator::Reopen(out.state) && ctx.progress) {
      ctx.progress("reopening " + out.state.session_id + ": an interrupt closed it in phase " +
                   std::string(session::PhaseName(out.state.phase)));
    }
    if (out.state.phase == session::Phase::kDone) {
      out.already_closed = true;
      return out;
    }
  } else {
    out.state = session::Coordinator::NewState(spec, run_dir, *ctx.clock);
  }
  HONE_ASSIGN_OR_RETURN(auto wiring, WireSession(spec, run_dir, ctx));
  if (resume) out.state.search_state = AdaptSearchState(out.state.search_state, wiring->agents.proposer != nullptr);
  // The agents see the coordinator's live state (it exists once the coordinator does).
  const session::SessionState* live = nullptr;
  if (wiring->agents.critic) {
    wiring->services.critic = CriticHook(*wiring->agents.critic, [&live] { return live ? live->noise_floor : 0.0; });
  }
  session::Coordinator coordinator(spec, wiring->services, std::move(out.state));
  live = &coordinator.state();
  AttachState(wiring->agents, coordinator.state());
  // The budget is hard (sys/signals.h): a trial, a start-up or a check still running when
  // it is spent stops there, leaving the close a few seconds to write the report and the
  // recipe. The ledger plans every trial to fit; this holds when a trial runs far past
  // its estimate (a host that got busy: 140 s trials against 7 s ones made a demo
  // session of 8 minutes run 9m18s). Armed on the real clock, from the time left.
  const double left_s = coordinator.state().deadline_unix_s - static_cast<double>(ctx.clock->WallMicros()) * 1e-6;
  const double report_margin_s = std::clamp(0.01 * spec.budget.wall_s, 2.0, 15.0);
  const double now_s = static_cast<double>(sys::DefaultClock().WallMicros()) * 1e-6;
  sys::ScopedStopDeadline hard_deadline(now_s + std::max(0.0, left_s - report_margin_s));
  HONE_ASSIGN_OR_RETURN(out.state, coordinator.Run());
  return out;
}

}  // namespace hone::run
