// The SGLang target: `python -m sglang.launch_server` (or the `sglang serve` launcher)
// from a Config through the catalog in catalogs/sglang/, its health, version and
// Prometheus endpoints, launch-failure rules (data/failures.yaml, "sglang") and its
// torch-profiler endpoints.
//
// Metrics and cached-token reports are always enabled (--enable-metrics,
// --enable-cache-report): hone reads both. The version comes from /get_server_info
// (SGLang has no /version route). Profiling: SGLANG_TORCH_PROFILER_DIR at launch and a
// JSON body for POST /start_profile; SGLang writes gzipped Chrome traces, which the
// roofline layer reads. Adapters are immutable after Create; safe to share.
#pragma once

#include <memory>
#include <string>

#include "core/error.h"
#include "net/prometheus.h"
#include "target/adapter.h"
#include "target/vllm.h"

namespace hone::target {

class SglangAdapter final : public Adapter {
 public:
  static Result<std::unique_ptr<SglangAdapter>> Create(const std::string& data_dir, const std::string& version);

  std::string name() const override { return "sglang"; }
  const KnobCatalog& catalog() const override { return catalog_; }
  const std::vector<FailureRule>& failure_rules() const override { return rules_; }
  // ctx.server_binary: a Python interpreter (default launch) or the `sglang` launcher.
  Result<LaunchSpec> BuildLaunch(const Config& config, const LaunchContext& ctx) const override;
  MetricNames metric_names() const override;
  // SGLang's OpenAI adapter honours ignore_eos (min_tokens maps to min_new_tokens).
  std::map<std::string, std::string> ExactLengthFields() const override { return {{"ignore_eos", "true"}}; }

  const std::string& version() const { return version_; }
  EngineEndpoints endpoints() const;
  // Drops names the scrape lacks (num_retracted_requests_total is recent).
  MetricNames MetricNamesFor(const net::MetricSet& scraped) const;
  void EnableProfiling(LaunchSpec& spec, const std::string& trace_dir) const;
  // Body of the start_profile POST: where to write, GPU and CPU activity, and how many
  // forward steps to record (0 = until stop_profile).
  std::string StartProfileBody(const std::string& trace_dir, int num_steps = 0) const;

 private:
  SglangAdapter(KnobCatalog c, std::vector<FailureRule> r, std::string version)
      : catalog_(std::move(c)), rules_(std::move(r)), version_(std::move(version)) {}
  KnobCatalog catalog_;
  std::vector<FailureRule> rules_;
  std::string version_;
};

// `python -c "import sglang; print(sglang.__version__)"` -> "0.5.3".
Result<std::string> ProbeSglangBinaryVersion(const std::string& python);

}  // namespace hone::target
