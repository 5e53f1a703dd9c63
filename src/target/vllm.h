// The vLLM target: `vllm serve` launched from a Config through the catalog in
// catalogs/vllm/, its health, version and Prometheus endpoints, launch-failure rules
// (data/failures.yaml, "vllm"), and its torch-profiler endpoints.
//
// Also defines EngineEndpoints, the HTTP surface hone probes on the Python engines
// (SGLang's adapter uses it too). The launch is `vllm serve MODEL` or, when the given
// server binary is a Python interpreter, `python -m vllm.entrypoints.openai.api_server
// --model MODEL`; prompt-token details (cached tokens in usage) are always on and usage
// statistics are never sent home. Profiling: vLLM >= 0.13 takes --profiler-config JSON,
// older versions the VLLM_TORCH_PROFILER_DIR environment variable; traces are written
// uncompressed where the version allows, so profile ingestion reads them directly.
// Adapters are immutable after Create; safe to share.
#pragma once

#include <memory>
#include <string>

#include "core/error.h"
#include "net/prometheus.h"
#include "target/adapter.h"

namespace hone::target {

// Where a Python serving engine answers hone's probes. Paths are absolute URL paths.
struct EngineEndpoints {
  std::string health;
  std::string version;        // GET; JSON with a "version" field
  std::string metrics;
  std::string start_profile;  // POST
  std::string stop_profile;   // POST
};

// The JSON a version endpoint returned -> "0.11.0"; kDataLoss when it holds none.
Result<std::string> ParseVersionJson(std::string_view body);

// GETs `endpoints.version` on host:port and parses it.
Result<std::string> ProbeServerVersion(const std::string& host, int port, const EngineEndpoints& endpoints);
// Ok when GET `endpoints.health` answers 200; kUnavailable otherwise.
Status ProbeHealth(const std::string& host, int port, const EngineEndpoints& endpoints);

class VllmAdapter final : public Adapter {
 public:
  // Loads the catalog matching `version` ("0.11.0", "0.13.0rc2.dev3+g1234") and the
  // failure rules from the data dir.
  static Result<std::unique_ptr<VllmAdapter>> Create(const std::string& data_dir, const std::string& version);

  std::string name() const override { return "vllm"; }
  const KnobCatalog& catalog() const override { return catalog_; }
  const std::vector<FailureRule>& failure_rules() const override { return rules_; }
  // ctx.model_path: a local directory or a Hugging Face repo id; ctx.server_binary:
  // the `vllm` launcher or a Python interpreter.
  Result<LaunchSpec> BuildLaunch(const Config& config, const LaunchContext& ctx) const override;
  MetricNames metric_names() const override;
  std::map<std::string, std::string> ExactLengthFields() const override { return {{"ignore_eos", "true"}}; }

  const std::string& version() const { return version_; }
  EngineEndpoints endpoints() const;
  // The names a scrape actually carries: vLLM before 0.10 used vllm:gpu_cache_usage_perc
  // and vllm:gpu_prefix_cache_{queries,hits}_total.
  MetricNames MetricNamesFor(const net::MetricSet& scraped) const;
  // Makes `spec` start the torch profiler's endpoints, writing traces into `trace_dir`.
  void EnableProfiling(LaunchSpec& spec, const std::string& trace_dir) const;
  // Body of the start_profile POST (vLLM takes none).
  std::string StartProfileBody() const { return ""; }

 private:
  VllmAdapter(KnobCatalog c, std::vector<FailureRule> r, std::string version)
      : catalog_(std::move(c)), rules_(std::move(r)), version_(std::move(version)) {}
  KnobCatalog catalog_;
  std::vector<FailureRule> rules_;
  std::string version_;
};

// `vllm --version` -> "0.11.0" (the last line that looks like a version).
Result<std::string> ProbeVllmBinaryVersion(const std::string& binary);

}  // namespace hone::target
