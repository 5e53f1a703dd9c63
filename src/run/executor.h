// The session's trial executor: ServerTrialExecutor over the engine, with the
// benchmark's view of the framework, the workload's traces (agentic sessions) and the
// text of the KL-divergence check, all prepared in the run directory.
#pragma once

#include <memory>
#include <string>

#include "bench/openai.h"
#include "core/error.h"
#include "measure/server_executor.h"
#include "run/context.h"
#include "run/engine.h"
#include "spec/session_spec.h"

namespace hone::run {

// The benchmark's view of a serving framework (exact-length request fields and the
// Prometheus names to scrape), from the framework's target adapter.
Result<bench::ServerProfile> BenchProfileFor(const std::string& framework, const std::string& data_dir);
// The same from the session's adapter.
bench::ServerProfile BenchProfileFor(const target::Adapter& adapter);

// Builds the executor; writes run_dir/accuracy/kld-text.txt (once) and, for a
// generated agentic workload, run_dir/traces.jsonl. `hardware` names the device in
// every result.
Result<std::unique_ptr<measure::ServerTrialExecutor>> BuildExecutor(const spec::SessionSpec& spec,
                                                                    const std::string& run_dir, const Engine& engine,
                                                                    const std::string& hardware,
                                                                    const RunContext& ctx);

}  // namespace hone::run
