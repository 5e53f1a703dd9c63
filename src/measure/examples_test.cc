// Every shipped example spec (examples/*.yaml) loads with the real metric names: a
// user's first command must not fail on the example itself.
#include <filesystem>

#include "bench/metrics.h"
#include "spec/session_spec.h"
#include "target/command.h"
#include "target/sglang.h"
#include "target/vllm.h"
#include "testing/test_util.h"

namespace hone::measure {
namespace {

TEST(ExamplesTest, EveryExampleSpecLoads) {
  int loaded = 0;
  for (const auto& e : std::filesystem::directory_iterator(testing::SourceDir() / "examples")) {
    if (e.path().extension() != ".yaml") continue;
    // Fleet files (many sessions) load as fleets: src/fleet/fleet_spec_test.cc.
    if (e.path().filename().string().starts_with("fleet-")) continue;
    auto spec = spec::LoadSessionSpec(e.path().string(), bench::MetricNames());
    EXPECT_TRUE(spec) << e.path() << ": " << (spec ? "" : spec.error().message);
    ++loaded;
  }
  EXPECT_GE(loaded, 2);
}

TEST(ExamplesTest, TheGpuExampleMeasuresASteadyStateWindow) {
  auto spec = spec::LoadSessionSpec((testing::SourceDir() / "examples/gpu-8b.yaml").string(), bench::MetricNames());
  ASSERT_OK(spec);
  EXPECT_EQ(spec->target.num_gpus, 1);
  EXPECT_GT(spec->workload.window_s, 0);
  EXPECT_GT(spec->workload.ramp_s, 0);
  EXPECT_EQ(spec->target.model.preset, "llama-3.1-8b");
}

// The engine examples search only knobs their adapter has, and the command example's
// template renders.
TEST(ExamplesTest, TheEngineExamplesSearchTheirAdaptersKnobs) {
  const std::string data = testing::SourceDir().string();
  for (const char* name : {"vllm", "sglang", "command"}) {
    SCOPED_TRACE(name);
    auto spec = spec::LoadSessionSpec((testing::SourceDir() / "examples" / (std::string(name) + ".yaml")).string(),
                                      bench::MetricNames());
    ASSERT_OK(spec);
    EXPECT_EQ(spec->target.adapter, name);
    std::unique_ptr<target::Adapter> adapter;
    if (spec->target.adapter == "vllm") {
      ASSERT_OK_AND_ASSIGN(adapter, target::VllmAdapter::Create(data, "0.12.0"));
    } else if (spec->target.adapter == "sglang") {
      ASSERT_OK_AND_ASSIGN(adapter, target::SglangAdapter::Create(data, "0.5.0"));
    } else {
      ASSERT_OK_AND_ASSIGN(adapter, target::CommandAdapter::Create(spec->target, data));
    }
    EXPECT_FALSE(spec->search.knobs.empty());
    for (const std::string& k : spec->search.knobs) EXPECT_TRUE(adapter->catalog().Find(k)) << k;
    target::LaunchContext ctx{.server_binary = name == std::string("command") ? "" : "/usr/bin/" + std::string(name),
                              .model_path = spec->target.model.path, .port = 8080, .extra_args = spec->target.server_args};
    EXPECT_OK(adapter->BuildLaunch(spec->target.base_config, ctx));
  }
}

}  // namespace
}  // namespace hone::measure
