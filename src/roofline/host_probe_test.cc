#include "roofline/host_probe.h"

#include <gtest/gtest.h>

#include "testing/test_util.h"

namespace hone::roofline {
namespace {

TEST(HostProbeTest, MeasuresAPositiveReadBandwidth) {
  // A small array: the figure may come from a cache, but it must be a real rate.
  ASSERT_OK_AND_ASSIGN(double bw, MeasureReadBandwidth({.threads = 2, .bytes = size_t{16} << 20, .passes = 2}));
  EXPECT_GT(bw, 100e6);   // any machine reads 16 MiB faster than 100 MB/s
  EXPECT_LT(bw, 100e12);  // and slower than 100 TB/s
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

}  // namespace
}  // namespace hone::roofline
