#include "roofline/hardware.h"

#include <gtest/gtest.h>

#include "testing/test_util.h"

namespace hone::roofline {
namespace {

std::string TablePath() { return (testing::SourceDir() / "data/hardware.yaml").string(); }

TEST(HardwareTableTest, ShippedTableHasTheDevicesTheSessionNames) {
  ASSERT_OK_AND_ASSIGN(HardwareTable table, HardwareTable::Load(TablePath()));
  for (const char* id : {"h100", "h200", "b200", "mi300x", "mi325x", "mi355x", "a100-40gb", "epyc-zen3-2vcpu",
                         "xeon-emr-2vcpu"}) {
    ASSERT_OK_AND_ASSIGN(Hardware hw, table.Find(id));
    EXPECT_GT(hw.MemoryBandwidth(), 0) << id;
    EXPECT_GT(hw.memory_bytes, 0) << id;
    EXPECT_TRUE(hw.FlopsPerSecond("bf16").has_value()) << id;
  }
  ASSERT_OK_AND_ASSIGN(Hardware h100, table.Find("H100"));
  EXPECT_DOUBLE_EQ(h100.memory_bw_bytes_per_s, 3.35e12);
  EXPECT_DOUBLE_EQ(*h100.FlopsPerSecond("bfloat16"), 989.4e12);
  EXPECT_DOUBLE_EQ(*h100.FlopsPerSecond("fp8"), 1978.9e12);
  EXPECT_EQ(h100.kind, DeviceKind::kGpu);
  ASSERT_OK_AND_ASSIGN(Hardware mi300x, table.Find("AMD Instinct MI300X"));  // an alias
  EXPECT_EQ(mi300x.id, "mi300x");
  EXPECT_DOUBLE_EQ(mi300x.memory_bytes, 192e9);
}

// A CPU host that names no entry finds its family's (data/hardware.yaml).
TEST(HardwareTableTest, CpuHostsFindTheirFamilyFromTheTable) {
  ASSERT_OK_AND_ASSIGN(HardwareTable table, HardwareTable::Load(TablePath()));
  EXPECT_EQ(table.CpuFamilyDevice("AMD EPYC 7B13", 2), "epyc-zen3-2vcpu");
  EXPECT_EQ(table.CpuFamilyDevice("Intel(R) Xeon(R) Platinum 8581C CPU @ 2.30GHz", 2), "xeon-emr-2vcpu");
  EXPECT_FALSE(table.CpuFamilyDevice("AMD EPYC 7B13", 64));  // a whole socket is not a 2-vCPU slice
  EXPECT_FALSE(table.CpuFamilyDevice("Apple M3", 8));
  auto bad = HardwareTable::Parse(
      "devices:\n  - {id: c, kind: cpu, peak_tflops: {fp32: 1}, memory_bw_gbs: 1, memory_gb: 1}\n"
      "cpu_families:\n  - {cpu_contains: epyc, device: nowhere}\n",
      "t.yaml");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("t.yaml:4"), std::string::npos) << bad.error().message;
  EXPECT_NE(bad.error().message.find("unknown device 'nowhere'"), std::string::npos) << bad.error().message;
}

TEST(HardwareTableTest, MeasuredCeilingsOverrideTheDatasheet) {
  ASSERT_OK_AND_ASSIGN(HardwareTable table, HardwareTable::Load(TablePath()));
  ASSERT_OK_AND_ASSIGN(Hardware h200, table.Find("h200"));
  EXPECT_DOUBLE_EQ(h200.memory_bw_bytes_per_s, 4.8e12);
  EXPECT_TRUE(h200.HasMeasured());
  EXPECT_LT(h200.MemoryBandwidth(), h200.memory_bw_bytes_per_s);
  EXPECT_LT(*h200.FlopsPerSecond("bf16"), h200.peak_flops.at("bf16"));
  EXPECT_DOUBLE_EQ(*h200.FlopsPerSecond("fp8"), 1453e12);
  // int8 has no measurement: the datasheet value stands.
  EXPECT_DOUBLE_EQ(*h200.FlopsPerSecond("int8"), h200.peak_flops.at("int8"));
  EXPECT_FALSE(h200.measured_source.empty());
}

TEST(HardwareTableTest, MissingDtypesFallBackToAWiderRate) {
  ASSERT_OK_AND_ASSIGN(HardwareTable table, HardwareTable::Load(TablePath()));
  ASSERT_OK_AND_ASSIGN(Hardware a100, table.Find("a100-40gb"));
  // No fp8 units: fp8 weights run at the bf16 rate, fp4 at int8.
  EXPECT_DOUBLE_EQ(*a100.FlopsPerSecond("fp8"), 312e12);
  EXPECT_DOUBLE_EQ(*a100.FlopsPerSecond("fp4"), 624e12);
  ASSERT_OK_AND_ASSIGN(Hardware b200, table.Find("b200"));
  EXPECT_DOUBLE_EQ(*b200.FlopsPerSecond("nvfp4"), 9000e12);
}

TEST(HardwareTableTest, UnknownDeviceListsTheKnownOnes) {
  ASSERT_OK_AND_ASSIGN(HardwareTable table, HardwareTable::Load(TablePath()));
  auto r = table.Find("tpu-v9");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::kNotFound);
  EXPECT_NE(r.error().message.find("h200"), std::string::npos);
}

TEST(HardwareTableTest, BadEntriesNameTheirLine) {
  struct Case {
    const char* yaml;
    const char* expect;
  } cases[] = {
      {"devices:\n  - id: x\n    kind: fpga\n    peak_tflops: {bf16: 1}\n    memory_bw_gbs: 1\n    memory_gb: 1\n",
       "t.yaml:3:11: devices[0].kind: must be gpu or cpu"},
      {"devices:\n  - id: x\n    kind: gpu\n    memory_bw_gbs: 1\n    memory_gb: 1\n", "a device needs at least one"},
      {"devices:\n  - id: x\n    kind: gpu\n    peak_tflops: {bf16: fast}\n    memory_bw_gbs: 1\n    memory_gb: 1\n",
       "expected a number"},
      {"devices:\n  - id: x\n    kind: gpu\n    peak_tflops: {bf16: 1}\n    memory_bw_gbs: 1\n    memory_gb: 1\n"
       "    color: red\n",
       "unknown field"},
      {"devices:\n  - {id: x, kind: gpu, peak_tflops: {bf16: 1}, memory_bw_gbs: 1, memory_gb: 1}\n"
       "  - {id: X, kind: gpu, peak_tflops: {bf16: 1}, memory_bw_gbs: 1, memory_gb: 1}\n",
       "duplicate device id 'x'"},
      {"devices:\n  - {id: x, kind: gpu, peak_tflops: {bf16: 1}, memory_bw_gbs: 1, memory_gb: 1, measured: {memory_bw_gbs: 1}}\n",
       "measured.source: required field is missing"},
  };
  for (const auto& c : cases) {
    auto r = HardwareTable::Parse(c.yaml, "t.yaml");
    ASSERT_FALSE(r) << c.yaml;
    EXPECT_EQ(r.error().code, ErrorCode::kInvalidArgument);
    EXPECT_NE(r.error().message.find(c.expect), std::string::npos) << r.error().message;
  }
}

TEST(NormalizeDtypeTest, CommonSpellings) {
  EXPECT_EQ(NormalizeDtype("bfloat16"), "bf16");
  EXPECT_EQ(NormalizeDtype("Float16"), "fp16");
  EXPECT_EQ(NormalizeDtype("fp8_e4m3"), "fp8");
  EXPECT_EQ(NormalizeDtype("mxfp4"), "fp4");
  EXPECT_EQ(NormalizeDtype("int8"), "int8");
}

}  // namespace
}  // namespace hone::roofline
