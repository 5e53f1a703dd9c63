// On a machine with an NVIDIA GPU and nvcc: the probe is compiled and measures
// ceilings of the right order. Skips cleanly without a GPU.
#include "roofline/gpu_probe.h"
#include "sys/files.h"
#include "sys/process.h"
#include "testing/test_util.h"

namespace hone::roofline {
namespace {

TEST(GpuProbeGpuTest, MeasuresBandwidthAndMatrixPeaks) {
  if (sys::FindOnPath("nvidia-smi").empty() ||
      (sys::FindOnPath("nvcc").empty() && !sys::FileExists("/usr/local/cuda/bin/nvcc"))) {
    GTEST_SKIP() << "needs an NVIDIA GPU and nvcc";
  }
  ASSERT_OK_AND_ASSIGN(auto dir, sys::TempDir::Create("hone-gpu-probe"));
  ASSERT_OK_AND_ASSIGN(
      GpuCeilings c,
      ProbeGpuCeilings({.source = (testing::SourceDir() / "kernels/probe/gpu_ceilings.cu").string(),
                        .cache_dir = dir->path()}));
  EXPECT_FALSE(c.device.empty());
  EXPECT_GT(c.sms, 0);
  EXPECT_GT(c.read_bytes_per_s, 100e9);  // any datacenter GPU streams far more than 100 GB/s
  ASSERT_TRUE(c.flops.contains("bf16"));
  EXPECT_GT(c.flops.at("bf16"), 10e12);
  // A second probe reuses the compiled binary.
  EXPECT_OK(ProbeGpuCeilings({.source = (testing::SourceDir() / "kernels/probe/gpu_ceilings.cu").string(),
                              .cache_dir = dir->path(), .nvcc = "false"}));
}

}  // namespace
}  // namespace hone::roofline
