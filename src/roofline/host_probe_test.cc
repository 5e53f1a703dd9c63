#include "roofline/host_probe.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "sys/files.h"
#include "testing/test_util.h"

namespace hone::roofline {
namespace {

TEST(HostProbeTest, MeasuresAPositiveReadBandwidth) {
  // A small array: the figure may come from a cache, but it must be a real rate.
  ASSERT_OK_AND_ASSIGN(double bw, MeasureReadBandwidth({.threads = 2, .bytes = size_t{16} << 20, .passes = 2}));
  EXPECT_GT(bw, 100e6);   // any machine reads 16 MiB faster than 100 MB/s
  EXPECT_LT(bw, 100e12);  // and slower than 100 TB/s
}

TEST(HostProbeTest, TheProbesKernelReadsEveryWord) {
  // Lengths around the vector kernels' rounds (32 and 16 words) and the prefetch
  // distance, from an unaligned start: every word counts once.
  std::vector<uint64_t> words(5000);
  uint64_t x = 0x9e3779b97f4a7c15;
  for (uint64_t& w : words) w = (x = x * 6364136223846793005 + 1442695040888963407);
  for (size_t start : {size_t{0}, size_t{1}, size_t{3}}) {
    for (size_t n : {size_t{0}, size_t{1}, size_t{15}, size_t{16}, size_t{31}, size_t{32}, size_t{33}, size_t{511},
                     size_t{512}, size_t{513}, size_t{4093}}) {
      uint64_t expected = 0;
      for (size_t i = 0; i < n; ++i) expected += words[start + i];
      EXPECT_EQ(ProbeSum(words.data() + start, n), expected) << "start " << start << ", " << n << " words";
    }
  }
}

TEST(HostProbeTest, RejectsBadParameters) {
  EXPECT_EQ(MeasureReadBandwidth({.threads = 0}).error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(MeasureReadBandwidth({.threads = 1, .bytes = 1024}).error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(MeasureReadBandwidth({.threads = 1, .bytes = size_t{1} << 20, .passes = 0}).error().code,
            ErrorCode::kInvalidArgument);
}

TEST(HostProbeTest, TheMeasuredFigureOverridesTheTable) {
  Hardware hw;
  hw.kind = DeviceKind::kCpu;
  hw.memory_bw_bytes_per_s = 20e9;
  hw.measured_source = "fma microbenchmark";
  Hardware probed = WithMeasuredBandwidth(hw, 40e9, "read probe");
  EXPECT_DOUBLE_EQ(probed.MemoryBandwidth(), 40e9);
  EXPECT_DOUBLE_EQ(hw.MemoryBandwidth(), 20e9);
  EXPECT_NE(probed.measured_source.find("read probe"), std::string::npos);
  EXPECT_NE(probed.measured_source.find("fma microbenchmark"), std::string::npos);
}

// The last-level cache is the highest-level data or unified cache sysfs lists
// (instruction caches are not); sizes in K, M or bytes.
TEST(HostProbeTest, TheLastLevelCacheIsTheHighestDataCache) {
  ASSERT_OK_AND_ASSIGN(auto dir, sys::TempDir::Create("hone-llc"));
  auto index = [&](int i, const std::string& type, int level, const std::string& size) {
    const auto d = dir->path() / ("index" + std::to_string(i));
    ASSERT_OK(sys::EnsureDir(d.string()));
    ASSERT_OK(sys::WriteFileAtomic(d / "type", type + "\n"));
    ASSERT_OK(sys::WriteFileAtomic(d / "level", std::to_string(level) + "\n"));
    ASSERT_OK(sys::WriteFileAtomic(d / "size", size + "\n"));
  };
  index(0, "Data", 1, "48K");
  index(1, "Instruction", 1, "32K");
  index(2, "Unified", 2, "2048K");
  index(3, "Unified", 3, "307200K");
  EXPECT_DOUBLE_EQ(LastLevelCacheBytes(dir->path().string()), 307200.0 * 1024);
  index(4, "Instruction", 4, "512M");  // not a data cache
  EXPECT_DOUBLE_EQ(LastLevelCacheBytes(dir->path().string()), 307200.0 * 1024);
  EXPECT_EQ(LastLevelCacheBytes((dir->path() / "missing").string()), 0);
  // This host's, when it says: a cache large enough to probe reads at a positive rate.
  const double llc = LastLevelCacheBytes();
  if (llc >= 4.0 * (1 << 20)) {
    ASSERT_OK_AND_ASSIGN(double bw, MeasureCacheBandwidth(llc, 1));
    EXPECT_GT(bw, 0);
  }
  EXPECT_EQ(MeasureCacheBandwidth(1 << 20, 1).error().code, ErrorCode::kFailedPrecondition);
}

TEST(HostProbeTest, MeasuresComputePeaksWithTheWidestInstructions) {
  ASSERT_OK_AND_ASSIGN(ComputePeaks p, MeasureComputePeaks({.threads = 1, .seconds = 0.02, .passes = 1}));
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx2")) {
    // A real rate: any AVX2 core does more than 1 GFLOP/s and less than 10 TFLOP/s.
    EXPECT_GT(p.fp32, 1e9);
    EXPECT_LT(p.fp32, 10e12);
    EXPECT_GT(p.int8, 1e9);
    EXPECT_LT(p.int8, 40e12);
    EXPECT_EQ(p.fp32_isa, __builtin_cpu_supports("avx512f") ? "avx512f" : "avx2+fma");
    EXPECT_NE(p.int8_isa, "none");
    return;
  }
#endif
  EXPECT_EQ(p.fp32, 0);
  EXPECT_EQ(p.fp32_isa, "none");
}

TEST(HostProbeTest, ComputeProbeRejectsBadParameters) {
  EXPECT_EQ(MeasureComputePeaks({.threads = 0}).error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(MeasureComputePeaks({.threads = 1, .seconds = 0}).error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(MeasureComputePeaks({.threads = 1, .seconds = 0.01, .passes = 0}).error().code,
            ErrorCode::kInvalidArgument);
}

TEST(HostProbeTest, MeasuredComputeOverridesFp32Fp16AndInt8Only) {
  Hardware hw;
  hw.kind = DeviceKind::kCpu;
  hw.peak_flops = {{"fp32", 192e9}, {"fp16", 192e9}, {"bf16", 192e9}, {"int8", 384e9}};
  Hardware probed = WithMeasuredCompute(hw, {.fp32 = 400e9, .int8 = 1500e9, .fp32_isa = "avx512f"}, "compute probe");
  EXPECT_DOUBLE_EQ(*probed.FlopsPerSecond("fp32"), 400e9);
  EXPECT_DOUBLE_EQ(*probed.FlopsPerSecond("fp16"), 400e9);
  EXPECT_DOUBLE_EQ(*probed.FlopsPerSecond("int8"), 1500e9);
  EXPECT_DOUBLE_EQ(*probed.FlopsPerSecond("bf16"), 192e9);  // ggml may have a faster bf16 path
  EXPECT_NE(probed.measured_source.find("compute probe"), std::string::npos);
  // Nothing measured (another ISA): the table stands.
  Hardware same = WithMeasuredCompute(hw, {}, "compute probe");
  EXPECT_DOUBLE_EQ(*same.FlopsPerSecond("fp32"), 192e9);
  EXPECT_TRUE(same.measured_peak_flops.empty());
}

}  // namespace
}  // namespace hone::roofline
