// vLLM adapter tests against text reconstructed from vLLM's source (testdata/README.md):
// vLLM itself cannot run on hone's CI.
#include "target/vllm.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "core/strings.h"
#include "net/raw_server.h"
#include "target/catalog_check.h"
#include "target/sglang.h"
#include "testing/test_util.h"

namespace hone::target {
namespace {

namespace fs = std::filesystem;

std::string Testdata(const std::string& name) {
  std::ifstream in(testing::SourceDir() / "src/target/testdata" / name);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Every flag of `catalog` must appear in the --help text, and every enum value must be
// one of the choices the help lists for that flag.
void ExpectCatalogMatchesHelp(const KnobCatalog& catalog, const std::string& help) {
  for (const std::string& problem : HelpTextProblems(catalog, help)) ADD_FAILURE() << problem;
}

// Each log under testdata/failures/<framework>_<kind>_*.log classifies as <kind>.
void ExpectRecordedFailuresClassify(const std::string& framework, const std::vector<FailureRule>& rules) {
  int seen = 0;
  for (const auto& entry : fs::directory_iterator(testing::SourceDir() / "src/target/testdata/failures")) {
    std::string file = entry.path().filename().string();
    if (!file.starts_with(framework + "_")) continue;
    std::string rest = file.substr(framework.size() + 1);
    std::string expected;
    for (const char* kind : {"bad_flag", "out_of_memory", "context_create", "unsupported", "model_load", "port_in_use",
                             "crashed", "exited"}) {
      if (rest.starts_with(std::string(kind) + "_")) expected = kind;
    }
    ASSERT_FALSE(expected.empty()) << file << " does not name a failure kind";
    std::ifstream in(entry.path());
    std::stringstream ss;
    ss << in.rdbuf();
    // A crash is a signal; every other failure is a non-zero exit.
    Classification c = expected == "crashed" ? Classify(rules, ss.str(), 0, 9) : Classify(rules, ss.str(), 1, 0);
    EXPECT_EQ(FailureKindName(c.kind), expected) << file << " matched: " << c.excerpt;
    if (expected != "crashed" && expected != "exited") {
      EXPECT_FALSE(c.hint.empty()) << file;
    }
    ++seen;
  }
  EXPECT_GE(seen, 8) << "recorded " << framework << " failure logs";
}

class VllmAdapterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto a = VllmAdapter::Create(testing::SourceDir().string(), "0.13.0rc2.dev35+g1a2b3c4");
    ASSERT_OK(a);
    adapter_ = std::move(*a);
  }
  std::unique_ptr<VllmAdapter> adapter_;
};

TEST_F(VllmAdapterTest, CatalogFlagsExistInServeHelp) {
  EXPECT_EQ(adapter_->catalog().framework(), "vllm");
  EXPECT_GE(adapter_->catalog().knobs().size(), 20u);
  ExpectCatalogMatchesHelp(adapter_->catalog(), Testdata("vllm_serve_help.txt"));
}

TEST_F(VllmAdapterTest, BuildsServeCommandFromConfig) {
  LaunchContext ctx{.server_binary = "/opt/venv/bin/vllm", .model_path = "meta-llama/Llama-3.1-8B-Instruct",
                    .port = 18000, .extra_args = {"--max-model-len", "2304"}};
  ASSERT_OK_AND_ASSIGN(LaunchSpec spec,
                       adapter_->BuildLaunch(Config{{"max_num_seqs", "128"},
                                                    {"enable_prefix_caching", "off"},
                                                    {"kv_cache_dtype", "fp8"},
                                                    {"async_scheduling", "on"},
                                                    {"use_flashinfer_sampler", "1"}},
                                             ctx));
  EXPECT_EQ(spec.ShellCommand(),
            "DO_NOT_TRACK=1 VLLM_NO_USAGE_STATS=1 VLLM_USE_FLASHINFER_SAMPLER=1 /opt/venv/bin/vllm serve "
            "meta-llama/Llama-3.1-8B-Instruct --host 127.0.0.1 --port 18000 --enable-prompt-tokens-details "
            "--disable-uvicorn-access-log --max-model-len 2304 --async-scheduling --no-enable-prefix-caching "
            "--kv-cache-dtype fp8 --max-num-seqs 128");
  EXPECT_EQ(spec.health_path, "/health");

  // A Python interpreter runs the API server module instead.
  ctx.server_binary = "/usr/bin/python3";
  ASSERT_OK_AND_ASSIGN(LaunchSpec py, adapter_->BuildLaunch(Config{}, ctx));
  EXPECT_EQ(std::vector<std::string>(py.argv.begin(), py.argv.begin() + 5),
            (std::vector<std::string>{"/usr/bin/python3", "-m", "vllm.entrypoints.openai.api_server", "--model",
                                      "meta-llama/Llama-3.1-8B-Instruct"}));
}

TEST_F(VllmAdapterTest, RejectsWhatVllmWouldRefuse) {
  LaunchContext ctx{.server_binary = "vllm", .model_path = "m", .port = 1};
  auto bad_value = adapter_->BuildLaunch(Config{{"kv_cache_dtype", "fp9"}}, ctx);
  ASSERT_FALSE(bad_value);
  EXPECT_EQ(bad_value.error().code, ErrorCode::kInvalidArgument);
  auto unknown = adapter_->BuildLaunch(Config{{"max_num_seq", "4"}}, ctx);
  ASSERT_FALSE(unknown);
  EXPECT_NE(unknown.error().message.find("unknown knob 'max_num_seq'"), std::string::npos);
  // fp8 KV scales make no sense without an fp8 KV cache.
  auto scales = adapter_->BuildLaunch(Config{{"calculate_kv_scales", "on"}}, ctx);
  ASSERT_FALSE(scales);
  EXPECT_NE(scales.error().message.find("requires kv_cache_dtype!=auto"), std::string::npos);
  EXPECT_FALSE(adapter_->BuildLaunch(Config{}, LaunchContext{.server_binary = "vllm"}));
}

TEST_F(VllmAdapterTest, MetricNamesMatchARecordedScrape) {
  ASSERT_OK_AND_ASSIGN(net::MetricSet scrape, net::ParsePrometheusText(Testdata("vllm_metrics.txt")));
  MetricNames m = adapter_->MetricNamesFor(scrape);
  EXPECT_EQ(*scrape.Sum(m.prompt_tokens_total), 524288);
  EXPECT_EQ(*scrape.Sum(m.generation_tokens_total), 65536);
  EXPECT_EQ(*scrape.Sum(m.requests_running), 64);
  EXPECT_EQ(*scrape.Sum(m.requests_waiting), 7);
  EXPECT_DOUBLE_EQ(*scrape.Sum(m.kv_usage), 0.4132);
  EXPECT_DOUBLE_EQ(*scrape.Sum(m.cache_hits_total) / *scrape.Sum(m.cache_queries_total), 0.25);
  EXPECT_EQ(*scrape.Sum(m.preemptions_total), 3);
  EXPECT_TRUE(m.cached_prompt_tokens_total.empty());  // vLLM reports hits/queries instead

  // Before 0.10 the KV gauge and prefix-cache counters carried a gpu_ prefix.
  ASSERT_OK_AND_ASSIGN(net::MetricSet legacy, net::ParsePrometheusText(Testdata("vllm_metrics_legacy.txt")));
  MetricNames old = adapter_->MetricNamesFor(legacy);
  EXPECT_EQ(old.kv_usage, "vllm:gpu_cache_usage_perc");
  EXPECT_DOUBLE_EQ(*legacy.Sum(old.cache_hits_total) / *legacy.Sum(old.cache_queries_total), 0.25);
  EXPECT_TRUE(old.preemptions_total.empty());
}

TEST_F(VllmAdapterTest, RecordedLaunchFailuresClassify) {
  ExpectRecordedFailuresClassify("vllm", adapter_->failure_rules());
}

TEST_F(VllmAdapterTest, ProfilingByFlagOrEnvironmentByVersion) {
  LaunchContext ctx{.server_binary = "vllm", .model_path = "m", .port = 1};
  ASSERT_OK_AND_ASSIGN(LaunchSpec spec, adapter_->BuildLaunch(Config{}, ctx));
  adapter_->EnableProfiling(spec, "/tmp/trial-7/traces");
  ASSERT_GE(spec.argv.size(), 2u);
  EXPECT_EQ(spec.argv[spec.argv.size() - 2], "--profiler-config");
  EXPECT_EQ(spec.argv.back(),
            R"({"profiler":"torch","torch_profiler_dir":"/tmp/trial-7/traces","torch_profiler_use_gzip":false,)"
            R"("torch_profiler_with_stack":false})");
  EXPECT_EQ(adapter_->endpoints().start_profile, "/start_profile");
  EXPECT_EQ(adapter_->endpoints().stop_profile, "/stop_profile");

  ASSERT_OK_AND_ASSIGN(auto older, VllmAdapter::Create(testing::SourceDir().string(), "0.12.0"));
  ASSERT_OK_AND_ASSIGN(LaunchSpec old_spec, older->BuildLaunch(Config{}, ctx));
  older->EnableProfiling(old_spec, "/tmp/t");
  EXPECT_EQ(old_spec.env.at("VLLM_TORCH_PROFILER_DIR"), "/tmp/t");
  EXPECT_EQ(std::count(old_spec.argv.begin(), old_spec.argv.end(), "--profiler-config"), 0);
}

TEST(EngineProbeTest, HealthAndVersionOverLoopback) {
  // A stand-in server answering the way vLLM (/version) and SGLang (/get_server_info) do.
  auto server = net::RawServer::Start([](const net::RawRequest& req, net::RawWriter& w) {
    auto reply = [&](int status, const std::string& body) {
      w.Write("HTTP/1.1 " + std::to_string(status) + " X\r\nContent-Type: application/json\r\nContent-Length: " +
              std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body);
    };
    if (req.path == "/health") return reply(200, "");
    if (req.path == "/version") return reply(200, R"({"version":"0.13.0"})");
    if (req.path == "/get_server_info") {
      return reply(200, R"({"model_path":"m","mem_fraction_static":0.88,"version":"0.5.4.post1"})");
    }
    reply(404, R"({"detail":"Not Found"})");
  });
  ASSERT_OK(server);
  int port = (*server)->port();
  ASSERT_OK_AND_ASSIGN(auto vllm, VllmAdapter::Create(testing::SourceDir().string(), "0.13.0"));
  ASSERT_OK_AND_ASSIGN(auto sglang, SglangAdapter::Create(testing::SourceDir().string(), "0.5.4"));
  EXPECT_OK(ProbeHealth("127.0.0.1", port, vllm->endpoints()));
  ASSERT_OK_AND_ASSIGN(std::string v, ProbeServerVersion("127.0.0.1", port, vllm->endpoints()));
  EXPECT_EQ(v, "0.13.0");
  ASSERT_OK_AND_ASSIGN(std::string s, ProbeServerVersion("127.0.0.1", port, sglang->endpoints()));
  EXPECT_EQ(s, "0.5.4.post1");

  EngineEndpoints missing = vllm->endpoints();
  missing.version = "/nope";
  missing.health = "/nope";
  EXPECT_EQ(ProbeServerVersion("127.0.0.1", port, missing).error().code, ErrorCode::kUnavailable);
  EXPECT_EQ(ProbeHealth("127.0.0.1", port, missing).error().code, ErrorCode::kUnavailable);
  (*server)->Stop();
  EXPECT_FALSE(ProbeHealth("127.0.0.1", port, vllm->endpoints()));
}

TEST(EngineProbeTest, VersionJsonWithoutVersionIsDataLoss) {
  EXPECT_EQ(*ParseVersionJson(R"({"version": "0.11.1"})"), "0.11.1");
  EXPECT_EQ(ParseVersionJson(R"({"detail": "Not Found"})").error().code, ErrorCode::kDataLoss);
  EXPECT_EQ(ParseVersionJson("<html>").error().code, ErrorCode::kDataLoss);
}

TEST(EngineProbeTest, BinaryVersionOfAMissingLauncherFails) {
  auto r = ProbeVllmBinaryVersion("/nonexistent/vllm");
  ASSERT_FALSE(r);
  auto s = ProbeSglangBinaryVersion("/nonexistent/python3");
  ASSERT_FALSE(s);
}

}  // namespace
}  // namespace hone::target
