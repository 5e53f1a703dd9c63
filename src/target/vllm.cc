#include "target/vllm.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <regex>

#include "core/strings.h"
#include "net/http.h"
#include "sys/process.h"
#include "target/llamacpp.h"

namespace hone::target {

using json = nlohmann::json;
using namespace std::chrono_literals;

namespace {

bool IsPython(const std::string& binary) {
  return std::filesystem::path(binary).filename().string().starts_with("python");
}

}  // namespace

Result<std::string> ParseVersionJson(std::string_view body) {
  json j = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_object()) {
    auto v = j.find("version");
    if (v != j.end() && v->is_string() && !v->get<std::string>().empty()) return v->get<std::string>();
  }
  return DataLoss("the version endpoint answered without a version: " + std::string(body.substr(0, 120)));
}

Result<std::string> ProbeServerVersion(const std::string& host, int port, const EngineEndpoints& endpoints) {
  HONE_ASSIGN_OR_RETURN(net::HttpResponse r, net::Get(host, port, endpoints.version, 10s));
  if (r.status != 200) {
    return Unavailable("GET " + endpoints.version + " answered HTTP " + std::to_string(r.status));
  }
  return ParseVersionJson(r.body);
}

Status ProbeHealth(const std::string& host, int port, const EngineEndpoints& endpoints) {
  HONE_ASSIGN_OR_RETURN(net::HttpResponse r, net::Get(host, port, endpoints.health, 10s));
  if (r.status != 200) return Unavailable("GET " + endpoints.health + " answered HTTP " + std::to_string(r.status));
  return Ok();
}

Result<std::string> ProbeVllmBinaryVersion(const std::string& binary) {
  std::vector<std::string> argv = IsPython(binary)
                                      ? std::vector<std::string>{binary, "-c", "import vllm; print(vllm.__version__)"}
                                      : std::vector<std::string>{binary, "--version"};
  HONE_ASSIGN_OR_RETURN(auto out, sys::RunCommand({.argv = argv}, 120s));
  static const std::regex version_re(R"(^\s*v?(\d+\.\d+(\.\d+)?\S*)\s*$)");
  std::string found;
  for (const std::string& line : Split(out.output, '\n')) {
    std::smatch m;
    if (std::regex_match(line, m, version_re)) found = m[1];
  }
  if (!out.status.success() || found.empty()) {
    return Fail(Error{ErrorCode::kFailedPrecondition, ShellJoin(argv) + " printed no version (is vLLM installed?)",
                      {{"output_tail", LastLines(out.output, 5)}}});
  }
  return found;
}

Result<std::unique_ptr<VllmAdapter>> VllmAdapter::Create(const std::string& data_dir, const std::string& version) {
  HONE_ASSIGN_OR_RETURN(KnobCatalog cat, LoadCatalogFor(data_dir + "/catalogs", "vllm", NumericVersion(version)));
  HONE_ASSIGN_OR_RETURN(auto rules, LoadFailureRules(data_dir + "/data/failures.yaml", "vllm"));
  return std::unique_ptr<VllmAdapter>(new VllmAdapter(std::move(cat), std::move(rules), version));
}

Result<LaunchSpec> VllmAdapter::BuildLaunch(const Config& config, const LaunchContext& ctx) const {
  if (ctx.model_path.empty()) return InvalidArgument("no model given for vllm serve");
  if (ctx.server_binary.empty()) return InvalidArgument("no vllm launcher given (the `vllm` command or a python)");
  LaunchSpec spec;
  spec.host = ctx.host;
  spec.port = ctx.port;
  spec.health_path = endpoints().health;
  if (IsPython(ctx.server_binary)) {
    spec.argv = {ctx.server_binary, "-m", "vllm.entrypoints.openai.api_server", "--model", ctx.model_path};
  } else {
    spec.argv = {ctx.server_binary, "serve", ctx.model_path};
  }
  for (const std::string& a : {std::string("--host"), ctx.host, std::string("--port"), std::to_string(ctx.port),
                               // Cached-token counts in usage; no per-request access log lines.
                               std::string("--enable-prompt-tokens-details"),
                               std::string("--disable-uvicorn-access-log")}) {
    spec.argv.push_back(a);
  }
  for (const auto& a : ctx.extra_args) spec.argv.push_back(a);
  spec.env["VLLM_NO_USAGE_STATS"] = "1";
  spec.env["DO_NOT_TRACK"] = "1";
  HONE_TRY(AppendKnobs(catalog_, config, spec));
  return spec;
}

EngineEndpoints VllmAdapter::endpoints() const {
  return EngineEndpoints{.health = "/health",
                         .version = "/version",
                         .metrics = "/metrics",
                         .start_profile = "/start_profile",
                         .stop_profile = "/stop_profile"};
}

MetricNames VllmAdapter::metric_names() const {
  MetricNames m;
  m.prompt_tokens_total = "vllm:prompt_tokens_total";
  m.generation_tokens_total = "vllm:generation_tokens_total";
  m.cache_queries_total = "vllm:prefix_cache_queries_total";
  m.cache_hits_total = "vllm:prefix_cache_hits_total";
  m.requests_running = "vllm:num_requests_running";
  m.requests_waiting = "vllm:num_requests_waiting";
  m.kv_usage = "vllm:kv_cache_usage_perc";
  m.preemptions_total = "vllm:num_preemptions_total";
  return m;
}

MetricNames VllmAdapter::MetricNamesFor(const net::MetricSet& scraped) const {
  MetricNames m = metric_names();
  auto present = [&](const std::string& name) { return scraped.Sum(name).has_value(); };
  if (!present(m.kv_usage) && present("vllm:gpu_cache_usage_perc")) m.kv_usage = "vllm:gpu_cache_usage_perc";
  if (!present(m.cache_queries_total) && present("vllm:gpu_prefix_cache_queries_total")) {
    m.cache_queries_total = "vllm:gpu_prefix_cache_queries_total";
    m.cache_hits_total = "vllm:gpu_prefix_cache_hits_total";
  }
  if (!present(m.preemptions_total)) m.preemptions_total.clear();
  return m;
}

void VllmAdapter::EnableProfiling(LaunchSpec& spec, const std::string& trace_dir) const {
  // --profiler-config arrived in 0.13; older versions read the environment.
  if (CompareVersions(NumericVersion(version_), "0.13") >= 0) {
    json cfg = {{"profiler", "torch"},
                {"torch_profiler_dir", trace_dir},
                {"torch_profiler_use_gzip", false},
                {"torch_profiler_with_stack", false}};
    spec.argv.push_back("--profiler-config");
    spec.argv.push_back(cfg.dump());
  } else {
    spec.env["VLLM_TORCH_PROFILER_DIR"] = trace_dir;
  }
}

}  // namespace hone::target
