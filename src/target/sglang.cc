#include "target/sglang.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <regex>

#include "core/strings.h"
#include "sys/process.h"
#include "target/llamacpp.h"

namespace hone::target {

using json = nlohmann::json;
using namespace std::chrono_literals;

Result<std::unique_ptr<SglangAdapter>> SglangAdapter::Create(const std::string& data_dir, const std::string& version) {
  HONE_ASSIGN_OR_RETURN(KnobCatalog cat, LoadCatalogFor(data_dir + "/catalogs", "sglang", NumericVersion(version)));
  HONE_ASSIGN_OR_RETURN(auto rules, LoadFailureRules(data_dir + "/data/failures.yaml", "sglang"));
  return std::unique_ptr<SglangAdapter>(new SglangAdapter(std::move(cat), std::move(rules), version));
}

Result<LaunchSpec> SglangAdapter::BuildLaunch(const Config& config, const LaunchContext& ctx) const {
  if (ctx.model_path.empty()) return InvalidArgument("no model given for sglang");
  if (ctx.server_binary.empty()) return InvalidArgument("no sglang launcher given (a python or the `sglang` command)");
  LaunchSpec spec;
  spec.host = ctx.host;
  spec.port = ctx.port;
  spec.health_path = endpoints().health;
  std::string exe = std::filesystem::path(ctx.server_binary).filename().string();
  if (exe.starts_with("python")) {
    spec.argv = {ctx.server_binary, "-m", "sglang.launch_server"};
  } else {
    spec.argv = {ctx.server_binary, "serve"};
  }
  for (const std::string& a : {std::string("--model-path"), ctx.model_path, std::string("--host"), ctx.host,
                               std::string("--port"), std::to_string(ctx.port), std::string("--enable-metrics"),
                               std::string("--enable-cache-report")}) {
    spec.argv.push_back(a);
  }
  for (const auto& a : ctx.extra_args) spec.argv.push_back(a);
  HONE_TRY(AppendKnobs(catalog_, config, spec));
  return spec;
}

EngineEndpoints SglangAdapter::endpoints() const {
  return EngineEndpoints{.health = "/health",
                         .version = "/get_server_info",
                         .metrics = "/metrics",
                         .start_profile = "/start_profile",
                         .stop_profile = "/stop_profile"};
}

MetricNames SglangAdapter::metric_names() const {
  MetricNames m;
  m.prompt_tokens_total = "sglang:prompt_tokens_total";
  m.generation_tokens_total = "sglang:generation_tokens_total";
  m.cached_prompt_tokens_total = "sglang:cached_tokens_total";
  m.requests_running = "sglang:num_running_reqs";
  m.requests_waiting = "sglang:num_queue_reqs";
  m.kv_usage = "sglang:token_usage";
  m.preemptions_total = "sglang:num_retracted_requests_total";
  return m;
}

MetricNames SglangAdapter::MetricNamesFor(const net::MetricSet& scraped) const {
  MetricNames m = metric_names();
  for (std::string* name : {&m.cached_prompt_tokens_total, &m.preemptions_total}) {
    if (!scraped.Sum(*name)) name->clear();
  }
  return m;
}

void SglangAdapter::EnableProfiling(LaunchSpec& spec, const std::string& trace_dir) const {
  spec.env["SGLANG_TORCH_PROFILER_DIR"] = trace_dir;
}

std::string SglangAdapter::StartProfileBody(const std::string& trace_dir, int num_steps) const {
  json body = {{"output_dir", trace_dir}, {"activities", {"CPU", "GPU"}}};
  if (num_steps > 0) body["num_steps"] = num_steps;
  return body.dump();
}

Result<std::string> ProbeSglangBinaryVersion(const std::string& python) {
  std::vector<std::string> argv = {python, "-c", "import sglang; print(sglang.__version__)"};
  HONE_ASSIGN_OR_RETURN(auto out, sys::RunCommand({.argv = argv}, 120s));
  static const std::regex version_re(R"(^\s*v?(\d+\.\d+(\.\d+)?\S*)\s*$)");
  std::string found;
  for (const std::string& line : Split(out.output, '\n')) {
    std::smatch m;
    if (std::regex_match(line, m, version_re)) found = m[1];
  }
  if (!out.status.success() || found.empty()) {
    return Fail(Error{ErrorCode::kFailedPrecondition, ShellJoin(argv) + " printed no version (is SGLang installed?)",
                      {{"output_tail", LastLines(out.output, 5)}}});
  }
  return found;
}

}  // namespace hone::target
