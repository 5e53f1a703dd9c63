#include "run/executor.h"

#include <filesystem>

#include "bench/trace.h"
#include "bench/tracegen.h"
#include "sys/files.h"
#include "target/llamacpp.h"
#include "target/sglang.h"
#include "target/vllm.h"

namespace hone::run {

namespace fs = std::filesystem;

Result<bench::ServerProfile> BenchProfileFor(const std::string& framework, const std::string& data_dir) {
  std::unique_ptr<target::Adapter> adapter;
  if (framework == "llama.cpp" || framework == "llamacpp") {
    HONE_ASSIGN_OR_RETURN(adapter, target::LlamaCppAdapter::Create(data_dir, "0.4.0"));
  } else if (framework == "vllm") {
    HONE_ASSIGN_OR_RETURN(adapter, target::VllmAdapter::Create(data_dir, "0.12.0"));
  } else if (framework == "sglang") {
    HONE_ASSIGN_OR_RETURN(adapter, target::SglangAdapter::Create(data_dir, "0.5.0"));
  } else if (framework == "generic") {
    bench::ServerProfile p;
    p.framework = framework;
    p.exact_length_fields = {{"ignore_eos", "true"}};
    return p;
  } else {
    return InvalidArgument("unknown framework '" + framework + "' (llama.cpp, vllm, sglang, generic)");
  }
  bench::ServerProfile p = BenchProfileFor(*adapter);
  p.framework = framework;
  return p;
}

bench::ServerProfile BenchProfileFor(const target::Adapter& adapter) {
  bench::ServerProfile p;
  p.framework = adapter.name();
  // vLLM takes min_tokens; SGLang maps it to min_new_tokens.
  p.send_min_tokens = adapter.name() == "vllm" || adapter.name() == "sglang";
  p.exact_length_fields = adapter.ExactLengthFields();
  p.metrics = adapter.metric_names();
  return p;
}

Result<std::unique_ptr<measure::ServerTrialExecutor>> BuildExecutor(const spec::SessionSpec& spec,
                                                                    const std::string& run_dir, const Engine& engine,
                                                                    const std::string& hardware,
                                                                    const RunContext& ctx) {
  const fs::path accuracy_dir = measure::AccuracyDir(run_dir);
  HONE_TRY(sys::EnsureDir(accuracy_dir));
  // A short fixed text for the KL-divergence check (llama.cpp's own README).
  std::string ppl_text = (accuracy_dir / "kld-text.txt").string();
  if (!sys::FileExists(ppl_text)) {
    auto readme = sys::ReadFile(engine.provisioned.src_dir / "README.md");
    HONE_TRY(sys::WriteFileAtomic(ppl_text, readme ? readme->substr(0, 3000) : std::string(3000, 'a')));
  }
  measure::ExecutorSetup setup;
  setup.adapter = engine.adapter.get();
  setup.server_binary = engine.provisioned.server;
  setup.perplexity_binary = engine.provisioned.perplexity;
  setup.perplexity_text = ppl_text;
  setup.models = engine.models.get();
  setup.run_dir = run_dir;
  setup.spec = spec;
  setup.profile = BenchProfileFor(*engine.adapter);
  setup.hardware = hardware;
  setup.clock = ctx.clock;
  setup.runner = ctx.runner;
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
  return std::make_unique<measure::ServerTrialExecutor>(std::move(setup));
}

}  // namespace hone::run
