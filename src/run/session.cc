#include "run/session.h"

#include <filesystem>
#include <nlohmann/json.hpp>

#include "model/gguf.h"
#include "report/report.h"
#include "run/executor.h"
#include "run/knowledge.h"
#include "run/lanes.h"
#include "run/roofline.h"
#include "run/search.h"
#include "sys/files.h"

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
    if (w_.kb) Admit(s);
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
    auto req = AdmissionFor(s, w_.spec, w_.kb_query,
                            {HONE_VERSION, s.session_id, sys::FormatUtc(clock_.WallMicros())}, &why);
    if (!req) {
      s.kb_result = why;
      return;
    }
    auto a = w_.kb->Admit(*req);
    if (!a) {
      s.kb_result = "knowledge base write failed: " + a.error().message;
    } else if (a->admitted) {
      s.kb_result = "recipe #" + std::to_string(a->recipe_id) + " " + a->reason + " in " + w_.kb->path();
    } else {
      s.kb_result = "not admitted: " + a->reason;
    }
  }

  const SessionWiring& w_;
  sys::Clock& clock_;
};

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
  HONE_ASSIGN_OR_RETURN(w->kb, OpenKnowledgeBase(spec, ctx));
  if (w->kb) w->warm = std::make_unique<KbWarmStart>(*w->kb, w->spec, w->kb_query, HONE_VERSION);
  HONE_ASSIGN_OR_RETURN(w->proposer, BuildProposer(spec, w->engine, w->kb.get(), w->kb_query, ctx));
  AgentsInputs agent_inputs;
  agent_inputs.catalog = &w->engine.adapter->catalog();
  agent_inputs.exclude = PlannerOptionsFor(spec, w->engine.base_precision).domain.exclude;
  if (w->kb) agent_inputs.priors = KbPriors(*w->kb, w->kb_query);
  HONE_ASSIGN_OR_RETURN(w->agents, BuildAgents(spec, run_dir, ctx, agent_inputs, w->proposer));
  HONE_ASSIGN_OR_RETURN(w->enablement,
                        EnablementLadder::Load(ctx.data_dir + "/data/enablement.yaml", spec.target.adapter));
  HONE_ASSIGN_OR_RETURN(w->patches, BuildPatchLane(spec, w->engine, run_dir, ctx));
  HONE_ASSIGN_OR_RETURN(w->kernel, BuildKernelLane(spec, machine, run_dir, ctx));
  w->closer = MakeReportCloser(*w, ctx);

  session::SessionServices& svc = w->services;
  svc.executor = w->executor.get();
  svc.proposer = w->proposer.get();
  svc.clock = ctx.clock;
  svc.warm_start = w->warm.get();
  svc.closer = w->closer.get();
  svc.patches = w->patches.get();
  svc.kernel = w->kernel.get();
  svc.risky = RiskyHook(w->engine.adapter->catalog());
  svc.enablement = [ladder = &w->enablement](const std::string& kind) { return ladder->Rungs(kind); };
  svc.progress = ctx.progress;
  HONE_ASSIGN_OR_RETURN(svc.roofline, BuildRoofline(spec, w->engine.model_path, machine, ctx, RealCeilingProbes(ctx)));
  svc.cpus = machine.cpus;
  svc.gpu = spec.target.num_gpus > 0;
  return w;
}

Result<SessionOutcome> RunSession(const spec::SessionSpec& spec, const std::string& run_dir, const RunContext& ctx,
                                  bool resume) {
  SessionOutcome out;
  if (resume) {
    HONE_ASSIGN_OR_RETURN(out.state, session::LoadState(run_dir));
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
  HONE_ASSIGN_OR_RETURN(out.state, coordinator.Run());
  return out;
}

}  // namespace hone::run
