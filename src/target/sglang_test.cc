// SGLang adapter tests against text reconstructed from SGLang's source
// (testdata/README.md): SGLang itself cannot run on hone's CI.
#include "target/sglang.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "core/strings.h"
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

class SglangAdapterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto a = SglangAdapter::Create(testing::SourceDir().string(), "0.5.4.post1");
    ASSERT_OK(a);
    adapter_ = std::move(*a);
  }
  std::unique_ptr<SglangAdapter> adapter_;
};

TEST_F(SglangAdapterTest, CatalogFlagsAndChoicesExistInLaunchServerHelp) {
  std::string help = Testdata("sglang_launch_server_help.txt");
  std::vector<std::string> lines = Split(help, '\n');
  EXPECT_EQ(adapter_->catalog().framework(), "sglang");
  for (const Knob& k : adapter_->catalog().knobs()) {
    if (k.flag.empty()) continue;
    const std::string* line = nullptr;
    for (const std::string& l : lines) {
      std::string_view t = Trim(l);
      if (t == k.flag || t.starts_with(k.flag + " ") || t.starts_with(k.flag + ",")) line = &l;
    }
    ASSERT_NE(line, nullptr) << k.flag << " (knob " << k.name << ") is not in --help";
    if (k.type != KnobType::kEnum) continue;
    size_t open = line->find('{');
    size_t close = line->find('}');
    ASSERT_NE(open, std::string::npos) << k.flag << " lists no choices";
    std::set<std::string> choices;
    for (const std::string& c : Split(line->substr(open + 1, close - open - 1), ',')) choices.insert(std::string(c));
    for (const std::string& c : k.choices) EXPECT_TRUE(choices.contains(c)) << k.flag << " lacks '" << c << "'";
  }
}

TEST_F(SglangAdapterTest, BuildsLaunchServerCommand) {
  LaunchContext ctx{.server_binary = "/usr/bin/python3", .model_path = "/models/llama-3.1-8b", .port = 30123};
  ASSERT_OK_AND_ASSIGN(LaunchSpec spec,
                       adapter_->BuildLaunch(Config{{"mem_fraction_static", "0.85"},
                                                    {"attention_backend", "flashinfer"},
                                                    {"disable_radix_cache", "on"},
                                                    {"cuda_graph_max_bs", "128"},
                                                    {"enable_jit_deepgemm", "0"}},
                                             ctx));
  EXPECT_EQ(spec.ShellCommand(),
            "SGLANG_ENABLE_JIT_DEEPGEMM=0 /usr/bin/python3 -m sglang.launch_server --model-path /models/llama-3.1-8b "
            "--host 127.0.0.1 --port 30123 --enable-metrics --enable-cache-report --attention-backend flashinfer "
            "--cuda-graph-max-bs 128 --disable-radix-cache --mem-fraction-static 0.85");
  // Store-true flags have no negative form: "off" renders nothing.
  ASSERT_OK_AND_ASSIGN(LaunchSpec off, adapter_->BuildLaunch(Config{{"disable_radix_cache", "off"}}, ctx));
  EXPECT_EQ(std::count(off.argv.begin(), off.argv.end(), "--disable-radix-cache"), 0);
  ctx.server_binary = "/opt/bin/sglang";
  ASSERT_OK_AND_ASSIGN(LaunchSpec cli, adapter_->BuildLaunch(Config{}, ctx));
  EXPECT_EQ(cli.argv[1], "serve");
}

TEST_F(SglangAdapterTest, DependentKnobsNeedTheirParent) {
  LaunchContext ctx{.server_binary = "python3", .model_path = "m", .port = 1};
  auto steps = adapter_->BuildLaunch(Config{{"speculative_num_steps", "3"}}, ctx);
  ASSERT_FALSE(steps);
  EXPECT_NE(steps.error().message.find("requires speculative_algorithm!="), std::string::npos);
  EXPECT_OK(adapter_->BuildLaunch(Config{{"speculative_algorithm", "NGRAM"}, {"speculative_num_steps", "3"}}, ctx));
  auto splits = adapter_->BuildLaunch(Config{{"triton_attention_num_kv_splits", "16"}}, ctx);
  ASSERT_FALSE(splits);
  auto lfu = adapter_->BuildLaunch(Config{{"radix_eviction_policy", "lfu"}, {"disable_radix_cache", "on"}}, ctx);
  ASSERT_FALSE(lfu);
  EXPECT_NE(lfu.error().message.find("conflicts with disable_radix_cache=on"), std::string::npos);
}

TEST_F(SglangAdapterTest, MetricNamesMatchARecordedScrape) {
  ASSERT_OK_AND_ASSIGN(net::MetricSet scrape, net::ParsePrometheusText(Testdata("sglang_metrics.txt")));
  MetricNames m = adapter_->MetricNamesFor(scrape);
  EXPECT_EQ(*scrape.Sum(m.prompt_tokens_total), 524288);
  EXPECT_EQ(*scrape.Sum(m.generation_tokens_total), 65536);
  EXPECT_EQ(*scrape.Sum(m.cached_prompt_tokens_total), 131072);  // device + host tiers
  EXPECT_EQ(*scrape.Find(m.cached_prompt_tokens_total, {{"source", "device"}}), 120000);
  EXPECT_EQ(*scrape.Sum(m.requests_running), 64);
  EXPECT_EQ(*scrape.Sum(m.requests_waiting), 5);
  EXPECT_DOUBLE_EQ(*scrape.Sum(m.kv_usage), 0.23);
  EXPECT_EQ(*scrape.Sum(m.preemptions_total), 2);
  EXPECT_TRUE(m.cache_queries_total.empty());

  ASSERT_OK_AND_ASSIGN(net::MetricSet bare, net::ParsePrometheusText("sglang:num_running_reqs 1\n"));
  MetricNames old = adapter_->MetricNamesFor(bare);
  EXPECT_TRUE(old.preemptions_total.empty());
  EXPECT_TRUE(old.cached_prompt_tokens_total.empty());
}

TEST_F(SglangAdapterTest, RecordedLaunchFailuresClassify) {
  int seen = 0;
  for (const auto& entry : fs::directory_iterator(testing::SourceDir() / "src/target/testdata/failures")) {
    std::string file = entry.path().filename().string();
    if (!file.starts_with("sglang_")) continue;
    std::string rest = file.substr(7);
    std::string expected;
    for (const char* kind : {"bad_flag", "out_of_memory", "context_create", "unsupported", "model_load", "port_in_use",
                             "crashed", "exited"}) {
      if (rest.starts_with(std::string(kind) + "_")) expected = kind;
    }
    ASSERT_FALSE(expected.empty()) << file;
    std::ifstream in(entry.path());
    std::stringstream ss;
    ss << in.rdbuf();
    Classification c = expected == "crashed" ? Classify(adapter_->failure_rules(), ss.str(), 0, 9)
                                             : Classify(adapter_->failure_rules(), ss.str(), 1, 0);
    EXPECT_EQ(FailureKindName(c.kind), expected) << file << " matched: " << c.excerpt;
    ++seen;
  }
  EXPECT_GE(seen, 8);
}

TEST_F(SglangAdapterTest, ProfilingEnvironmentAndStartBody) {
  LaunchContext ctx{.server_binary = "python3", .model_path = "m", .port = 1};
  ASSERT_OK_AND_ASSIGN(LaunchSpec spec, adapter_->BuildLaunch(Config{}, ctx));
  adapter_->EnableProfiling(spec, "/tmp/trial-3/traces");
  EXPECT_EQ(spec.env.at("SGLANG_TORCH_PROFILER_DIR"), "/tmp/trial-3/traces");
  auto body = nlohmann::json::parse(adapter_->StartProfileBody("/tmp/trial-3/traces", 16));
  EXPECT_EQ(body["output_dir"], "/tmp/trial-3/traces");
  EXPECT_EQ(body["num_steps"], 16);
  EXPECT_EQ(body["activities"], nlohmann::json::array({"CPU", "GPU"}));
  EXPECT_FALSE(nlohmann::json::parse(adapter_->StartProfileBody("/x")).contains("num_steps"));
  EXPECT_EQ(adapter_->endpoints().version, "/get_server_info");
}

}  // namespace
}  // namespace hone::target
