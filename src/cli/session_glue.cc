#include "cli/session_glue.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "bench/tracegen.h"
#include "cli/profiles.h"
#include "core/strings.h"
#include "model/gguf.h"
#include "kb/jsonl.h"
#include "measure/scripted_executor.h"
#include "model/synth.h"
#include "report/report.h"
#include "roofline/gpu_probe.h"
#include "roofline/host_probe.h"
#include "roofline/roofline.h"
#include "search/planner.h"
#include "spec/yaml.h"
#include "sys/clock.h"
#include "sys/files.h"
#include "sys/term.h"

namespace hone::cli {

namespace fs = std::filesystem;

std::string HardwareName(const SessionWiring& w) {
  return w.spec.target.hardware.empty() ? w.machine.SlugFor(w.spec.target.num_gpus) : w.spec.target.hardware;
}

kb::Identity SessionIdentity(const SessionWiring& w) {
  kb::Identity id;
  id.model = w.model_name;
  id.hardware = HardwareName(w);
  id.framework = w.spec.target.adapter;
  id.model_type = "llama";
  if (auto f = model::ReadGguf(w.model_path)) id.model_type = f->Str("general.architecture").value_or("llama");
  id.architecture = id.model_type == "llama" ? "LlamaForCausalLM" : id.model_type;
  id.framework_version = target::NumericVersion(w.engine.version);
  id.precision = w.base_precision;
  return id;
}

kb::Workload SessionWorkload(const spec::SessionSpec& spec) {
  kb::Workload wl;
  wl.kind = spec.workload.kind;
  wl.concurrency = spec.workload.concurrency;
  wl.isl = spec.workload.isl;
  wl.osl = spec.workload.osl;
  if (spec.workload.kind == "agentic") wl.trace_id = spec.workload.trace.empty() ? spec.workload.trace_preset : spec.workload.trace;
  return wl;
}

namespace {

std::string LaunchCommand(const SessionWiring& w, const Config& config, const std::string& binary) {
  Config c = config;
  auto model = w.models->Resolve(c);
  target::LaunchContext lc{.server_binary = binary.empty() ? w.engine.server : binary,
                           .model_path = model ? *model : w.model_path, .port = 8080,
                           .extra_args = w.spec.target.server_args};
  auto spec = w.adapter->BuildLaunch(c, lc);
  return spec ? spec->ShellCommand() : "(cannot render: " + spec.error().message + ")";
}

class KbWarmStart final : public session::WarmStart {
 public:
  explicit KbWarmStart(SessionWiring& w) : w_(w) {}
  std::optional<session::WarmCandidate> Match(std::string* explanation) override {
    auto m = w_.kb->Match(kb::MatchQuery{SessionIdentity(w_), SessionWorkload(w_.spec)});
    if (!m) {
      *explanation = "knowledge base unavailable: " + m.error().message;
      return std::nullopt;
    }
    *explanation = Join(m->explanation, "; ");
    if (!m->recipe || !m->replay || m->confidence < w_.spec.kb.min_confidence) return std::nullopt;
    matched_ = *m->recipe;
    session::WarmCandidate c;
    c.config = w_.spec.target.base_config.Merged(m->recipe->config);
    c.recorded_gain = m->recipe->GainFraction();
    c.recipe_id = m->recipe->id;
    c.explanation = *explanation;
    return c;
  }
  std::string RecordReplay(const session::WarmCandidate& c, const session::ReplayResult& r) override {
    kb::ReplayOutcome o;
    o.identity = SessionIdentity(w_);
    o.workload = SessionWorkload(w_.spec);
    o.baseline_value = 1.0;
    o.objective_value = 1.0 + r.gain;
    o.accuracy_passed = r.accuracy_passed;
    o.verdict = r.verdict;
    o.reproduce_fraction = w_.spec.kb.reproduce_fraction;
    o.trial_ids = r.trial_ids;
    o.session_id = r.session_id;
    o.hone_version = HONE_VERSION;
    auto v = w_.kb->RecordReplay(c.recipe_id, o);
    if (!v) {
      sys::LogWarn("knowledge base: " + v.error().message);
      return "not recorded: " + v.error().message;
    }
    if (v->reproduced) return std::string(v->same_point ? "reproduced" : "transferred") + ": " + v->reason;
    return v->same_point ? "did not reproduce, recipe demoted: " + v->reason
                         : "did not transfer here, recipe kept active (recorded at another operating point): " + v->reason;
  }

 private:
  SessionWiring& w_;
  kb::Recipe matched_;
};

class ReportCloser final : public session::Closer {
 public:
  explicit ReportCloser(SessionWiring& w) : w_(w) {}
  Status Close(session::SessionState& s) override {
    if (w_.kb || !w_.kb_error.empty()) Admit(s);
    s.agents = AgentSummary(w_);
    report::ReportInput in;
    in.state = &s;
    in.spec = &w_.spec;
    in.trials = report::LoadTrials(s.run_dir);
    in.best_command = LaunchCommand(w_, s.best, s.server_binary);
    in.stock_command = LaunchCommand(w_, s.stock, "");
    in.hardware = HardwareName(w_);
    in.framework_version = w_.engine.version;
    in.model = w_.model_name;
    in.search_summary = w_.proposer ? w_.proposer->Describe() : "";
    return report::WriteReports(in, s.run_dir);
  }

 private:
  void Admit(session::SessionState& s) {
    if (s.BestIsStock() || !s.validated) {
      s.kb_result = s.BestIsStock() ? "nothing to record: the stock configuration won"
                                      : "not recorded: the best configuration was not re-validated at close";
      return;
    }
    kb::AdmissionRequest req;
    kb::Recipe& r = req.recipe;
    r.identity = SessionIdentity(w_);
    r.workload = SessionWorkload(w_.spec);
    r.config = s.best.DeltaFrom(s.stock);
    r.objective = {w_.spec.objective.metric, s.validated_best_objective,
                   s.validated_best_objective * s.validated_lo / (1 + s.validated_gain),
                   s.validated_best_objective * s.validated_hi / (1 + s.validated_gain), "", w_.spec.objective.maximize,
                   s.validation_trials};
    r.baseline = {s.validated_stock_objective, s.validation_trials};
    for (const auto& c : s.candidates) {
      if (c.verdict == "KEEP" && c.delta.size() == 1) {
        r.learnings.push_back({c.delta.values().begin()->first, c.delta.values().begin()->second, c.gain,
                               c.ci_lo - 1, c.ci_hi - 1, c.candidate_trials});
      } else if (c.verdict == "LAUNCH_FAILED" || c.verdict == "ACCURACY_FAILED" || c.verdict == "REVERT") {
        kb::Failure f;
        f.config_delta = c.delta;
        f.kind = c.verdict == "ACCURACY_FAILED" ? kb::FailureKind::kAccuracyFailed
                 : c.verdict == "REVERT"         ? kb::FailureKind::kRegressed
                 : c.failure_kind == "out_of_memory" ? kb::FailureKind::kOutOfMemory
                 : c.failure_kind == "bad_flag"      ? kb::FailureKind::kBadFlag
                                                     : kb::FailureKind::kCrashed;
        f.detail = c.reason.substr(0, 300);
        f.trial_ids = c.candidate_trials.empty() ? std::vector<std::string>{c.screen_trial} : c.candidate_trials;
        r.failures.push_back(f);
      }
    }
    r.provenance = {HONE_VERSION, s.session_id, sys::FormatUtc(sys::DefaultClock().WallMicros())};
    req.verdict_keep = s.validation_verdict == "KEEP";
    req.accuracy_passed = s.close_accuracy.empty() || s.close_accuracy.starts_with("pass");
    req.remeasured_at_close = true;
    Result<kb::Admission> a =
        w_.kb ? w_.kb->Admit(req) : Result<kb::Admission>(Fail(Error{ErrorCode::kUnavailable, w_.kb_error, {}}));
    if (!a) {
      s.kb_result = KeepPending(s, req, a.error().message);
    } else if (a->admitted) {
      s.kb_result = "recipe #" + std::to_string(a->recipe_id) + " " + a->reason + " in " + w_.kb->path();
    } else {
      s.kb_result = "not admitted: " + a->reason;
    }
  }

  // The knowledge base could not take the recipe (locked by another process, a full
  // disk, ...): an admissible recipe is kept beside the run, never dropped.
  std::string KeepPending(const session::SessionState& s, const kb::AdmissionRequest& req, const std::string& error) {
    if (w_.kb_rules) {
      if (std::string why = kb::AdmissionRejection(req, w_.kb_rules->admission); !why.empty()) {
        return "not admitted: " + why + " (the knowledge base was unavailable anyway: " + error + ")";
      }
    }
    const std::string pending = (fs::path(s.run_dir) / "kb-pending.jsonl").string();
    if (auto st = sys::WriteFileAtomic(pending, kb::RecipeToJsonLine(req.recipe) + "\n"); !st) {
      return "knowledge base write failed (" + error + ") and the recipe could not be kept: " + st.error().message;
    }
    sys::LogWarn("knowledge base unavailable (" + error + "): the recipe is in " + pending);
    return "knowledge base unavailable (" + error + "): the recipe is kept in " + pending +
           "; add it with `hone kb import " + pending + "`";
  }

  SessionWiring& w_;
};

// The knowledge base's experience with this identity and workload, as search priors.
std::vector<search::Prior> KbPriors(SessionWiring& w) {
  std::vector<search::Prior> out;
  kb::MatchQuery q{SessionIdentity(w), SessionWorkload(w.spec)};
  if (auto learnings = w.kb->Learnings(q)) {
    for (const kb::PriorLearning& l : *learnings) {
      out.push_back({l.learning.knob, l.learning.value, l.learning.effect, l.confidence, ""});
    }
  }
  if (auto failures = w.kb->Failures(q)) {
    for (const kb::PriorFailure& f : *failures) {
      // A failure of several knobs at once blames each of them in part.
      double share = 1.0 / static_cast<double>(std::max<size_t>(1, f.failure.config_delta.size()));
      for (const auto& [knob, value] : f.failure.config_delta.values()) {
        out.push_back({knob, value, 0, f.confidence * share, std::string(kb::FailureKindName(f.failure.kind))});
      }
    }
  }
  return out;
}

Result<std::vector<Config>> LoadEnablement(const std::string& data_dir, const std::string& framework,
                                           const std::string& kind) {
  HONE_ASSIGN_OR_RETURN(spec::Field root, spec::Field::LoadFile(data_dir + "/data/enablement.yaml"));
  std::vector<Config> out;
  for (const spec::Field& rung : root[framework][kind].Items()) {
    Config c;
    for (const auto& [k, v] : rung.Entries()) {
      HONE_ASSIGN_OR_RETURN(std::string value, v.Str());
      c.Set(k, value);
    }
    out.push_back(c);
  }
  return out;
}

}  // namespace

void AttachState(SessionWiring& w, const session::SessionState& state) {
  if (!w.agent_proposer) return;
  const session::SessionState* s = &state;
  search::Proposer* planner = w.fallback_proposer.get();
  w.agent_proposer->SetSnapshotFiller([s, planner](agent::OrchestratorSnapshot& snap) {
    snap.phase = s->phase;
    snap.baseline_objective = s->baseline_objective;
    snap.stock = s->stock.ToString();
    snap.best = s->best.ToString();
    snap.best_objective = s->best_values.empty() ? 0 : s->best_values.back();
    snap.validated = s->validated;
    snap.validated_gain = s->validated_gain;
    snap.cycle = s->cycle;
    if (planner) snap.idea_tree = planner->Describe();
  });
}

std::string AgentSummary(const SessionWiring& w) {
  if (!w.agent_proposer || !w.agent_runtime) return "";
  std::string out = w.agent_runtime->meter().Summary() + "\n";
  out += agent::FormatCalibrationTable(w.agent_proposer->calibration());
  out += "\n" + std::to_string(w.agent_proposer->rejections().size()) + " proposed ideas rejected (invalid knobs or values)\n";
  for (const std::string& n : w.agent_proposer->notes()) out += "- " + n + "\n";
  return out;
}

Result<std::unique_ptr<SessionWiring>> WireSession(const spec::SessionSpec& spec, const std::string& run_dir,
                                                   const Context& ctx) {
  auto w = std::make_unique<SessionWiring>();
  w->spec = spec;
  w->run_dir = run_dir;
  w->machine = sys::DescribeMachine();
  if (spec.target.adapter != "llama.cpp") {
    return InvalidArgument("hone run drives llama.cpp targets on this machine; the " + spec.target.adapter +
                           " adapter needs its framework installed (see docs/adapters.md)");
  }
  HONE_ASSIGN_OR_RETURN(w->engine, target::FindProvisioned(ctx.cache_dir, ctx.data_dir, spec.target.num_gpus > 0));
  HONE_ASSIGN_OR_RETURN(w->adapter, target::LlamaCppAdapter::Create(ctx.data_dir, w->engine.version));
  // The model: a file, or a synthesized preset (made once in the cache).
  if (!spec.target.model.path.empty()) {
    w->model_path = spec.target.model.path;
    if (!sys::FileExists(w->model_path)) return NotFound("model file not found: " + w->model_path);
    w->model_name = fs::path(w->model_path).stem().string();
  } else {
    HONE_ASSIGN_OR_RETURN(model::ModelShape shape,
                          model::LoadShapePreset(spec.target.model.preset, ctx.data_dir + "/data/synth_presets.yaml"));
    HONE_TRY(sys::EnsureDir(ctx.cache_dir / "models"));
    w->model_name = "hone-" + shape.name + "-s" + std::to_string(spec.target.model.seed);
    w->model_path = (ctx.cache_dir / "models" / (w->model_name + "-f16.gguf")).string();
    if (!sys::FileExists(w->model_path)) {
      sys::Progress p("synthesizing the " + shape.name + " model");
      p.Update(-1, w->model_path);
      HONE_TRY(model::SynthesizeModel({.shape = shape, .seed = spec.target.model.seed,
                                       .vocab_path = w->engine.VocabPath(shape.vocab), .out_path = w->model_path}));
      p.Done("done");
    }
  }
  w->models = std::make_unique<measure::ModelStore>(w->model_path, w->engine.quantize,
                                                    (ctx.cache_dir / "models" / "variants").string());
  HONE_ASSIGN_OR_RETURN(w->base_precision, w->models->BaseType());
  HONE_TRY(sys::EnsureDir(fs::path(run_dir) / "accuracy"));
  // A short fixed text for the KL-divergence check (llama.cpp's own README).
  std::string ppl_text = (fs::path(run_dir) / "accuracy" / "kld-text.txt").string();
  if (!sys::FileExists(ppl_text)) {
    auto readme = sys::ReadFile(w->engine.src_dir / "README.md");
    HONE_TRY(sys::WriteFileAtomic(ppl_text, readme ? readme->substr(0, 3000) : std::string(3000, 'a')));
  }
  measure::ExecutorSetup setup;
  setup.adapter = w->adapter.get();
  setup.server_binary = w->engine.server;
  setup.perplexity_binary = w->engine.perplexity;
  setup.perplexity_text = ppl_text;
  setup.models = w->models.get();
  setup.run_dir = run_dir;
  setup.spec = spec;
  HONE_ASSIGN_OR_RETURN(setup.profile, BenchProfileFor(spec.target.adapter));
  setup.hardware = HardwareName(*w);
  setup.token_cache_dir = (ctx.cache_dir / "tokens").string();
  if (spec.workload.kind == "agentic") {
    if (!spec.workload.trace.empty()) {
      HONE_ASSIGN_OR_RETURN(setup.traces, bench::LoadTraces(spec.workload.trace));
    } else {
      HONE_ASSIGN_OR_RETURN(auto opts, bench::TraceGenPreset(spec.workload.trace_preset));
      opts.sessions = spec.workload.trace_sessions;
      opts.seed = spec.workload.seed;
      setup.traces = bench::GenerateTraces(opts);
      HONE_TRY(bench::WriteTraces((fs::path(run_dir) / "traces.jsonl").string(), setup.traces));
    }
  }
  if (const char* plan = std::getenv("HONE_CHAOS_PLAN"); plan && *plan) {
    HONE_ASSIGN_OR_RETURN(chaos::FaultPlan p, chaos::FaultPlan::Load(plan));
    w->chaos = std::make_unique<chaos::FaultPlan>(std::move(p));
    setup.faults = w->chaos.get();
    sys::LogWarn("test run: injecting the faults of " + std::string(plan));
  }
  w->executor = std::make_unique<measure::ServerTrialExecutor>(setup);
  if (const char* scripted = std::getenv("HONE_TEST_EXECUTOR"); scripted && *scripted) {
    HONE_ASSIGN_OR_RETURN(w->test_executor, measure::ScriptedExecutor::Load(scripted, run_dir));
    sys::LogWarn("test run: trials are scripted from " + std::string(scripted) + ", not measured");
  }
  // Weight precision is only searchable from an unquantized base.
  search::PlannerOptions popts;
  popts.domain = {spec.search.knobs, spec.search.exclude, spec.target.num_gpus > 0, {}};
  if (w->base_precision != "f16" && w->base_precision != "f32" && w->base_precision != "bf16") {
    popts.domain.exclude.push_back("weights");
  }
  if (spec.kb.enabled) {
    std::string path = spec.kb.path.empty() ? (ctx.cache_dir / "kb.sqlite").string() : spec.kb.path;
    auto rules = kb::LoadKbRules(ctx.data_dir);
    if (rules) {
      w->kb_rules = *rules;
      auto store = kb::RecipeStore::Open(path, *rules);
      if (store) {
        w->kb = std::move(*store);
      } else {
        w->kb_error = store.error().message;
        sys::LogWarn("knowledge base disabled: " + store.error().message);
      }
    } else {
      w->kb_error = rules.error().message;
      sys::LogWarn("knowledge base disabled: " + rules.error().message);
    }
  }
  if (w->kb) w->warm = std::make_unique<KbWarmStart>(*w);
  // The search strategy (spec search.strategy); the planner starts from the knowledge
  // base's learnings and failures as priors.
  HONE_ASSIGN_OR_RETURN(search::Heuristics heuristics,
                        search::Heuristics::Load(ctx.data_dir + "/data/search/heuristics.yaml"));
  if (w->kb) popts.priors = KbPriors(*w);
  HONE_ASSIGN_OR_RETURN(w->proposer, search::MakeProposer(spec.search.strategy, w->adapter->catalog(), heuristics,
                                                          popts, spec.search.seed));
  if (!spec.patches.empty()) {
    // A patched build repeats the engine's own configure arguments (CPU or CUDA, its arch).
    std::vector<std::string> args = w->engine.cmake_args;
    if (args.empty()) {
      return FailedPrecondition("patches need a llama.cpp built by hone (this engine came from PATH: " +
                                w->engine.server + "); run hone provision llama.cpp --no-path");
    }
    session::PatchLaneOptions po;
    po.diff_files = spec.patches;
    po.repo = w->engine.src_dir.string();
    po.run_dir = run_dir;
    po.rules_path = ctx.data_dir + "/data/policy/rules.yaml";
    po.recipe = patch::CMakeRecipe("llama.cpp llama-server", args, {"llama-server"}, {"bin/llama-server"});
    HONE_ASSIGN_OR_RETURN(w->patches, session::ExecutorPatchLane::Create(po));
  }
  w->closer = std::make_unique<ReportCloser>(*w);
  if (!spec.kernel.backend.empty()) {
    session::KernelLaneOptions ko;
    ko.backend = spec.kernel.backend;
    ko.task_files = spec.kernel.tasks;
    if (ko.task_files.empty()) {
      std::error_code ec;
      for (const auto& e : fs::directory_iterator(fs::path(ctx.data_dir) / "data" / "kernel", ec)) {
        std::string name = e.path().filename().string();
        if (e.path().extension() == ".yaml" && name != "ops.yaml" && name != "integration.yaml") {
          ko.task_files.push_back(e.path().string());
        }
      }
      std::sort(ko.task_files.begin(), ko.task_files.end());
    }
    ko.ops_path = ctx.data_dir + "/data/kernel/ops.yaml";
    ko.integration_path = ctx.data_dir + "/data/kernel/integration.yaml";
    ko.framework = spec.target.adapter;
    ko.run_dir = run_dir;
    ko.workload = spec.workload.kind + " c" + std::to_string(spec.workload.concurrency) + " isl" +
                  std::to_string(spec.workload.isl) + " osl" + std::to_string(spec.workload.osl);
    ko.device = w->machine.gpus.empty() ? w->machine.cpu_model : w->machine.gpus[0];
    ko.arch = spec.kernel.arch;
    w->kernel = std::make_unique<session::BackendKernelLane>(ko);
  }
  session::SessionServices& svc = w->services;
  svc.executor = w->test_executor ? w->test_executor.get() : w->executor.get();
  svc.proposer = w->proposer.get();
  svc.clock = &sys::DefaultClock();
  svc.warm_start = w->warm.get();
  svc.closer = w->closer.get();
  svc.patches = w->patches.get();
  svc.kernel = w->kernel.get();
  const target::KnobCatalog* catalog = &w->adapter->catalog();
  svc.risky = [catalog](const Config& delta) {
    for (const auto& [k, v] : delta.values()) {
      const target::Knob* knob = catalog->Find(k);
      if (knob && (knob->accuracy_risk == "medium" || knob->accuracy_risk == "high")) return true;
    }
    return false;
  };
  std::string data_dir = ctx.data_dir;
  std::string framework = spec.target.adapter;
  svc.enablement = [data_dir, framework](const std::string& kind) {
    auto rungs = LoadEnablement(data_dir, framework, kind);
    return rungs ? *rungs : std::vector<Config>{};
  };
  svc.progress = [start = sys::DefaultClock().MonoSeconds()](const std::string& line) {
    std::fprintf(stderr, "hone [%6.0fs] %s\n", sys::DefaultClock().MonoSeconds() - start, line.c_str());
  };
  // Roofline: this machine's entry in data/hardware.yaml and the model's shape.
  auto table = roofline::HardwareTable::Load(ctx.data_dir + "/data/hardware.yaml");
  auto model_spec = roofline::ModelSpecFromGguf(w->model_path);
  if (table && model_spec) {
    // The device the engine runs on: the GPU's entry for a GPU session, the CPU's otherwise
    // (a CPU session on a GPU host is bounded by the CPU).
    const bool on_gpu = spec.target.num_gpus > 0 && !w->machine.gpus.empty();
    std::vector<std::string> names = {spec.target.hardware};
    if (on_gpu) {
      names.push_back(w->machine.gpus[0]);
    } else {
      names.push_back(w->machine.cpu_model);
    }
    names.push_back(HardwareName(*w));
    std::string cpu = ToLower(w->machine.cpu_model);
    if (!on_gpu && Contains(cpu, "epyc") && w->machine.cpus <= 2) names.push_back("epyc-zen3-2vcpu");
    if (!on_gpu && Contains(cpu, "xeon") && w->machine.cpus <= 2) names.push_back("xeon-emr-2vcpu");
    std::optional<roofline::Hardware> hw;
    for (const std::string& n : names) {
      if (n.empty()) continue;
      if (auto h = table->Find(n)) {
        hw = *h;
        break;
      }
    }
    if (hw && hw->kind == roofline::DeviceKind::kCpu) {
      // A CPU entry names a family; the host behind it may stream twice the table's
      // bandwidth and have wider vector units. Measure both (about a second) so the
      // bounds hold on this machine.
      const int threads = std::max(1, w->machine.cpus);
      auto bw = roofline::MeasureReadBandwidth({.threads = threads});
      if (bw && *bw > 0) {
        char source[96];
        std::snprintf(source, sizeof source, "read probe at session start, %.1f GB/s", *bw / 1e9);
        *hw = roofline::WithMeasuredBandwidth(*hw, *bw, source);
      }
      auto peaks = roofline::MeasureComputePeaks({.threads = threads});
      if (peaks && (peaks->fp32 > 0 || peaks->int8 > 0)) {
        char source[160];
        std::snprintf(source, sizeof source, "compute probe at session start, %.0f GFLOP/s fp32 (%s), %.0f GOP/s int8 (%s)",
                      peaks->fp32 / 1e9, peaks->fp32_isa.c_str(), peaks->int8 / 1e9, peaks->int8_isa.c_str());
        *hw = roofline::WithMeasuredCompute(*hw, *peaks, source);
      }
    } else if (hw && on_gpu) {
      // The GPU's ceilings, measured on it (compiled once with nvcc; a few seconds).
      auto c = roofline::ProbeGpuCeilings(
          {.source = ctx.data_dir + "/kernels/probe/gpu_ceilings.cu", .cache_dir = ctx.cache_dir});
      if (c) {
        char source[192];
        std::snprintf(source, sizeof source, "GPU probe at session start on %s: read %.0f GB/s, bf16 %.0f TFLOP/s",
                      c->device.c_str(), c->read_bytes_per_s / 1e9,
                      c->flops.contains("bf16") ? c->flops.at("bf16") / 1e12 : 0.0);
        *hw = roofline::WithGpuCeilings(*hw, *c, source);
      } else {
        sys::LogWarn("GPU probe: " + c.error().message + " (the roofline uses the table's figures)");
      }
    }
    if (hw) {
      roofline::ModelSpec ms = *model_spec;
      const spec::WorkloadSpec& wl = spec.workload;
      int gpus = std::max(1, spec.target.num_gpus);
      svc.roofline = [hw = *hw, ms, wl, gpus](const Config& config, double total_tps,
                                               double output_tps) -> Result<session::RooflineNote> {
        roofline::OperatingPoint p;
        p.concurrency = wl.concurrency;
        p.isl = wl.isl;
        p.osl = wl.osl;
        p.num_devices = gpus;
        if (auto wt = config.Get("weights")) p.weight_dtype = *wt;
        if (auto kv = config.Get("cache_type_k")) p.kv_dtype = *kv;
        HONE_ASSIGN_OR_RETURN(roofline::Bounds b, roofline::Analyze(hw, ms, p));
        roofline::Measured m;
        m.total_tok_s = total_tps;
        m.output_tok_s = output_tps;
        HONE_ASSIGN_OR_RETURN(roofline::Headroom h, roofline::Classify(b, m));
        std::string where = hw.id;
        if (hw.kind == roofline::DeviceKind::kGpu && hw.measured_memory_bw_bytes_per_s) {
          char bw[96];
          std::snprintf(bw, sizeof bw, " (measured %.0f GB/s", *hw.measured_memory_bw_bytes_per_s / 1e9);
          where += bw;
          if (auto f = hw.measured_peak_flops.find("bf16"); f != hw.measured_peak_flops.end()) {
            std::snprintf(bw, sizeof bw, ", %.0f TFLOP/s bf16", f->second / 1e12);
            where += bw;
          }
          where += ")";
        }
        if (hw.kind == roofline::DeviceKind::kCpu && hw.measured_memory_bw_bytes_per_s) {
          char bw[64];
          std::snprintf(bw, sizeof bw, " (probed %.1f GB/s", *hw.measured_memory_bw_bytes_per_s / 1e9);
          where += bw;
          if (auto f = hw.measured_peak_flops.find("fp32"); f != hw.measured_peak_flops.end()) {
            std::snprintf(bw, sizeof bw, ", %.0f GFLOP/s fp32", f->second / 1e9);
            where += bw;
          }
          if (auto f = hw.measured_peak_flops.find("int8"); f != hw.measured_peak_flops.end()) {
            std::snprintf(bw, sizeof bw, ", %.0f GOP/s int8", f->second / 1e9);
            where += bw;
          }
          where += ")";
        }
        return session::RooflineNote{where + ": " + h.summary, h.ratio, h.saturated,
                                     std::string(roofline::BoundClassName(h.bound_class))};
      };
    }
  }
  if (w->critic) {
    agent::Critic* critic = w->critic.get();
    double floor_hint = 0;
    svc.critic = [critic, floor_hint](const session::CandidateRecord& c) -> Result<session::CriticNote> {
      agent::Decision d;
      d.subject = c.id;
      d.idea = c.idea;
      d.incumbent = c.incumbent.ToString();
      d.config = c.config.ToString();
      d.measured_verdict = c.verdict;
      d.gain = c.gain;
      d.ci_lo = c.ci_lo;
      d.ci_hi = c.ci_hi;
      d.threshold = c.threshold;
      d.noise_floor = floor_hint;
      d.pairs = c.pairs;
      d.incumbent_values = c.incumbent_values;
      d.candidate_values = c.candidate_values;
      d.trials = c.candidate_trials;
      d.accuracy_passed = c.accuracy_passed;
      d.accuracy = c.accuracy;
      d.claimed_gain = c.predicted_gain;
      HONE_ASSIGN_OR_RETURN(agent::CriticVerdict v, critic->Review(d));
      return session::CriticNote{v.approve, v.reason, v.learning, v.signature};
    };
  }
  svc.cpus = w->machine.cpus;
  svc.gpu = spec.target.num_gpus > 0;
  return w;
}

}  // namespace hone::cli
