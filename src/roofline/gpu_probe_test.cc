#include "roofline/gpu_probe.h"

#include "sys/files.h"
#include "testing/test_util.h"

namespace hone::roofline {
namespace {

constexpr const char* kH200Line =
    R"({"device": "NVIDIA H200", "sms": 132, "cc": "9.0", "memory_gb": 150.1, "driver": 13000, "runtime": 13000, )"
    R"("read_gbs": 4412.5, "copy_gbs": 3990.0, "tflops": {"fp32": 51.2, "tf32": 370.0, "bf16": 760.5, "fp16": 772.0, "int8": 0.0}})";

TEST(GpuProbeTest, ParsesTheProbesLine) {
  ASSERT_OK_AND_ASSIGN(GpuCeilings c, ParseGpuCeilings(kH200Line));
  EXPECT_EQ(c.device, "NVIDIA H200");
  EXPECT_EQ(c.sms, 132);
  EXPECT_EQ(c.cc, "9.0");
  EXPECT_DOUBLE_EQ(c.read_bytes_per_s, 4412.5e9);
  EXPECT_DOUBLE_EQ(c.copy_bytes_per_s, 3990.0e9);
  EXPECT_DOUBLE_EQ(c.flops.at("bf16"), 760.5e12);
  EXPECT_FALSE(c.flops.contains("int8")) << "a dtype the probe could not measure (0) is left out";
}

TEST(GpuProbeTest, BrokenOutputIsAnErrorNotZeros) {
  auto c = ParseGpuCeilings(R"({"device": "x", "tflops": {}})");
  ASSERT_FALSE(c);
  EXPECT_EQ(c.error().code, ErrorCode::kDataLoss);
  EXPECT_FALSE(ParseGpuCeilings("gpu_ceilings: cudaSetDevice: no CUDA-capable device"));
}

TEST(GpuProbeTest, CeilingsReplaceTheTablesMeasuredFigures) {
  Hardware hw;
  hw.id = "h200";
  hw.peak_flops = {{"bf16", 989.4e12}, {"fp8", 1978.9e12}};
  hw.memory_bw_bytes_per_s = 4.8e12;
  hw.measured_peak_flops = {{"fp8", 1453e12}};
  ASSERT_OK_AND_ASSIGN(GpuCeilings c, ParseGpuCeilings(kH200Line));
  Hardware probed = WithGpuCeilings(hw, c, "probe");
  ASSERT_TRUE(probed.measured_memory_bw_bytes_per_s);
  EXPECT_DOUBLE_EQ(*probed.measured_memory_bw_bytes_per_s, 4412.5e9);
  EXPECT_DOUBLE_EQ(probed.measured_peak_flops.at("bf16"), 760.5e12);
  EXPECT_DOUBLE_EQ(probed.measured_peak_flops.at("fp8"), 1453e12) << "dtypes the probe does not measure stay";
  EXPECT_DOUBLE_EQ(probed.peak_flops.at("bf16"), 989.4e12) << "the datasheet figures stay beside them";
  EXPECT_EQ(probed.measured_source, "probe");
}

TEST(GpuProbeTest, MissingSourceOrGpuIsAClearError) {
  ASSERT_OK_AND_ASSIGN(auto dir, sys::TempDir::Create("hone-gpu-probe"));
  auto missing = ProbeGpuCeilings({.source = "/no/such/probe.cu", .cache_dir = dir->path(), .arch = "90"});
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, ErrorCode::kNotFound);
  // A compiler that fails: the error carries its output.
  std::string source = (testing::SourceDir() / "kernels/probe/gpu_ceilings.cu").string();
  auto bad = ProbeGpuCeilings({.source = source, .cache_dir = dir->path(), .nvcc = "false", .arch = "90"});
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code, ErrorCode::kFailedPrecondition);
  EXPECT_NE(bad.error().message.find("compiling the GPU probe failed"), std::string::npos) << bad.error().message;
}

}  // namespace
}  // namespace hone::roofline
