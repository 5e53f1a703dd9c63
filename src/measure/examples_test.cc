// Every shipped example spec (examples/*.yaml) loads with the real metric names: a
// user's first command must not fail on the example itself.
#include <filesystem>

#include "bench/metrics.h"
#include "spec/session_spec.h"
#include "testing/test_util.h"

namespace hone::measure {
namespace {

TEST(ExamplesTest, EveryExampleSpecLoads) {
  int loaded = 0;
  for (const auto& e : std::filesystem::directory_iterator(testing::SourceDir() / "examples")) {
    if (e.path().extension() != ".yaml") continue;
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

}  // namespace
}  // namespace hone::measure
