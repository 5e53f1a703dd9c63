// Slow tests of the vLLM and SGLang adapters against what is installed:
// - the catalogs against the installed engine's own --help (skipped cleanly when the
//   engine is not installed: hone's CI has neither);
// - launches through the stand-ins in testdata/standin (a `vllm` and a `python` that
//   check their command line against the recorded --help, then serve through the
//   provisioned llama-server): health, a completion and a /metrics scrape, and each
//   engine's startup failures (recorded logs, and a flag the engine does not have)
//   classified by the adapter's rules.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/strings.h"
#include "net/http.h"
#include "net/prometheus.h"
#include "sys/files.h"
#include "sys/process.h"
#include "target/catalog_check.h"
#include "target/server.h"
#include "target/sglang.h"
#include "target/vllm.h"
#include "testing/llama_env.h"
#include "testing/test_util.h"

namespace hone::target {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

std::string StandIn(const std::string& name) {
  return (testing::SourceDir() / "src/target/testdata/standin" / name).string();
}

// An installed launcher: on PATH and not one of the stand-ins.
std::string Installed(const std::string& program) {
  std::string found = sys::FindOnPath(program);
  return found.empty() || Contains(found, "testdata/standin") ? "" : found;
}

TEST(InstalledEngineTest, VllmCatalogMatchesTheInstalledHelp) {
  const std::string vllm = Installed("vllm");
  if (vllm.empty()) GTEST_SKIP() << "vLLM is not installed (no `vllm` on PATH)";
  ASSERT_OK_AND_ASSIGN(std::string version, ProbeVllmBinaryVersion(vllm));
  ASSERT_OK_AND_ASSIGN(auto adapter, VllmAdapter::Create(testing::SourceDir().string(), version));
  ASSERT_OK_AND_ASSIGN(auto help, sys::RunCommand({.argv = {vllm, "serve", "--help=all"}}, 300s));
  ASSERT_TRUE(help.status.success()) << LastLines(help.output, 10);
  for (const std::string& p : HelpTextProblems(adapter->catalog(), help.output)) ADD_FAILURE() << "vLLM " << version << ": " << p;
}

TEST(InstalledEngineTest, SglangCatalogMatchesTheInstalledHelp) {
  std::string python = Installed("python3");
  if (python.empty()) GTEST_SKIP() << "no python3 on PATH";
  auto version = ProbeSglangBinaryVersion(python);
  if (!version) GTEST_SKIP() << "SGLang is not installed for " << python;
  ASSERT_OK_AND_ASSIGN(auto adapter, SglangAdapter::Create(testing::SourceDir().string(), *version));
  ASSERT_OK_AND_ASSIGN(auto help, sys::RunCommand({.argv = {python, "-m", "sglang.launch_server", "--help"}}, 300s));
  ASSERT_TRUE(help.status.success()) << LastLines(help.output, 10);
  for (const std::string& p : HelpTextProblems(adapter->catalog(), help.output)) ADD_FAILURE() << "SGLang " << *version << ": " << p;
}

class StandInTest : public ::testing::Test {
 protected:
  void SetUp() override {
    HONE_REQUIRE_LLAMA();
    ASSERT_OK_AND_ASSIGN(dir_, sys::TempDir::Create("hone-standin"));
    ::setenv("HONE_STANDIN_LLAMA_SERVER", testing::Llama()->server.c_str(), 1);
    ::unsetenv("HONE_STANDIN_FAIL");
    model_ = testing::SynthModel("tiny", "q8_0");
  }
  void TearDown() override { ::unsetenv("HONE_STANDIN_FAIL"); }
  ServerOptions Options(const std::string& name) {
    return ServerOptions{.log_path = (dir_->path() / (name + ".log")).string(), .health_timeout = 120s};
  }

  // Serves a completion and a scrape through the stand-in, then fails it each way.
  void ServeThenFail(const Adapter& adapter, const std::string& launcher, const Config& config,
                     const std::string& framework) {
    LaunchContext ctx{.server_binary = launcher, .model_path = model_};
    ASSERT_OK_AND_ASSIGN(auto server, StartServer(adapter, config, ctx, Options(framework)));
    nlohmann::json body = {{"prompt", "Hello"}, {"max_tokens", 4}, {"temperature", 0}};
    ASSERT_OK_AND_ASSIGN(auto r, net::PostJson(server->host(), server->port(), "/v1/completions", body.dump(), 60s));
    EXPECT_EQ(r.status, 200) << r.body;
    ASSERT_OK_AND_ASSIGN(auto m, net::Get(server->host(), server->port(), "/metrics", 10s));
    ASSERT_EQ(m.status, 200);
    ASSERT_OK_AND_ASSIGN(net::MetricSet scraped, net::ParsePrometheusText(m.body));
    // llama-server's names, not the engine's: the adapter keeps only the names the
    // scrape carries (hone tolerates the missing ones).
    EXPECT_FALSE(scraped.samples.empty());
    server->Stop();

    // A flag the engine does not have fails as argparse fails it.
    ctx.extra_args = {"--no-such-flag", "1"};
    auto bad = StartServer(adapter, config, ctx, Options(framework + "-bad"));
    ASSERT_FALSE(bad);
    EXPECT_EQ(bad.error().Get("failure_kind"), "bad_flag") << bad.error().ToString();
    ctx.extra_args.clear();
    // The engine's recorded startup failures, each classified as its file name says.
    int seen = 0;
    for (const auto& entry : fs::directory_iterator(testing::SourceDir() / "src/target/testdata/failures")) {
      const std::string file = entry.path().filename().string();
      if (!file.starts_with(framework + "_")) continue;
      std::string kind;
      for (const char* k : {"bad_flag", "out_of_memory", "model_load", "port_in_use", "context_create",
                            "unsupported", "crashed", "exited"}) {
        if (file.starts_with(framework + "_" + k + "_")) kind = k;
      }
      if (kind == "crashed") kind = "exited";  // the stand-in exits 1; it is not killed
      SCOPED_TRACE(file);
      ::setenv("HONE_STANDIN_FAIL", file.c_str(), 1);
      auto failed = StartServer(adapter, config, ctx, Options(framework + "-" + std::to_string(seen)));
      ASSERT_FALSE(failed);
      EXPECT_EQ(failed.error().Get("failure_kind"), kind) << failed.error().ToString();
      ++seen;
    }
    ::unsetenv("HONE_STANDIN_FAIL");
    EXPECT_GE(seen, 8);
  }

  std::unique_ptr<sys::TempDir> dir_;
  std::string model_;
};

TEST_F(StandInTest, VllmServesThroughItsStandInAndFailsAsVllmFails) {
  ASSERT_OK_AND_ASSIGN(std::string version, ProbeVllmBinaryVersion(StandIn("vllm")));
  EXPECT_EQ(version, "0.12.0");
  ASSERT_OK_AND_ASSIGN(auto adapter, VllmAdapter::Create(testing::SourceDir().string(), version));
  ServeThenFail(*adapter, StandIn("vllm"), Config{{"max_num_seqs", "4"}, {"enable_prefix_caching", "on"}}, "vllm");
}

TEST_F(StandInTest, SglangServesThroughItsStandInAndFailsAsSglangFails) {
  ASSERT_OK_AND_ASSIGN(std::string version, ProbeSglangBinaryVersion(StandIn("python")));
  EXPECT_EQ(version, "0.5.4");
  ASSERT_OK_AND_ASSIGN(auto adapter, SglangAdapter::Create(testing::SourceDir().string(), version));
  ServeThenFail(*adapter, StandIn("python"), Config{{"max_running_requests", "4"}}, "sglang");
}

}  // namespace
}  // namespace hone::target
