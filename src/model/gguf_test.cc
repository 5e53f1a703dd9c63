#include "model/gguf.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "sys/files.h"
#include "testing/test_util.h"

namespace hone::model {
namespace {

class GgufTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto d = sys::TempDir::Create("hone-gguf");
    ASSERT_TRUE(d);
    dir_ = std::move(*d);
  }
  std::string Path(const std::string& name) { return (dir_->path() / name).string(); }

  std::string WriteSample() {
    GgufWriter w;
    w.AddKv("general.architecture", GgufValue::Str("llama"));
    w.AddKv("llama.block_count", GgufValue::U32(2));
    w.AddKv("x.f", GgufValue::F32(1.5f));
    GgufValue arr;
    arr.type = GgufType::kArray;
    arr.elem_type = GgufType::kString;
    arr.arr = {GgufValue::Str("a"), GgufValue::Str("bc")};
    w.AddKv("tokenizer.ggml.tokens", arr);
    w.AddTensor("t0", {32, 2}, GgmlType::kF32, [](const GgufWriter::Sink& sink) {
      float v[64];
      for (int i = 0; i < 64; ++i) v[i] = static_cast<float>(i);
      sink(v, sizeof v);
    });
    w.AddTensor("t1", {5}, GgmlType::kF16, [](const GgufWriter::Sink& sink) {
      uint16_t v[5] = {};
      sink(v, sizeof v);
    });
    std::string p = Path("m.gguf");
    EXPECT_OK(w.Write(p));
    return p;
  }
  std::unique_ptr<sys::TempDir> dir_;
};

TEST_F(GgufTest, RoundTrip) {
  std::string p = WriteSample();
  ASSERT_OK_AND_ASSIGN(GgufFile f, ReadGguf(p));
  EXPECT_EQ(f.version, 3u);
  EXPECT_EQ(*f.Str("general.architecture"), "llama");
  EXPECT_EQ(*f.Int("llama.block_count"), 2);
  EXPECT_EQ(*f.Find("x.f")->AsDouble(), 1.5);
  EXPECT_EQ(f.Find("tokenizer.ggml.tokens")->arr[1].s, "bc");
  ASSERT_EQ(f.tensors.size(), 2u);
  EXPECT_EQ(f.tensors[0].name, "t0");
  EXPECT_EQ(f.tensors[0].dims, (std::vector<uint64_t>{32, 2}));
  EXPECT_EQ(f.tensors[0].bytes, 256u);
  EXPECT_EQ(f.tensors[1].offset, 256u);
  EXPECT_EQ(f.tensors[1].bytes, 10u);
  EXPECT_EQ(f.ParameterCount(), 69u);
  EXPECT_EQ(f.data_offset % 32, 0u);
  // Tensor data lands where the table says.
  auto bytes = sys::ReadFile(p);
  float v;
  std::memcpy(&v, bytes->data() + f.data_offset + 4 * 7, 4);
  EXPECT_EQ(v, 7.0f);
}

TEST_F(GgufTest, TruncatedFileIsDataLoss) {
  std::string p = WriteSample();
  auto bytes = *sys::ReadFile(p);
  for (size_t cut : {size_t{3}, size_t{30}, size_t{100}, bytes.size() - 25}) {
    std::string q = Path("cut.gguf");
    ASSERT_OK(sys::WriteFileAtomic(q, bytes.substr(0, cut)));
    auto f = ReadGguf(q);
    ASSERT_FALSE(f) << cut;
    EXPECT_EQ(f.error().code, ErrorCode::kDataLoss) << cut;
    EXPECT_NE(f.error().message.find("corrupt GGUF"), std::string::npos);
  }
}

TEST_F(GgufTest, GarbageIsRejectedWithoutCrashing) {
  std::string p = WriteSample();
  std::string bytes = *sys::ReadFile(p);
  std::string q = Path("bad.gguf");
  ASSERT_OK(sys::WriteFileAtomic(q, "NOTAGGUF" + std::string(100, 'x')));
  EXPECT_NE(ReadGguf(q).error().message.find("bad magic"), std::string::npos);
  // Flip bytes all over the header: every outcome must be a clean error or a parse.
  for (size_t i = 4; i < 200 && i < bytes.size(); ++i) {
    std::string m = bytes;
    m[i] = static_cast<char>(m[i] ^ 0xff);
    ASSERT_OK(sys::WriteFileAtomic(q, m));
    auto f = ReadGguf(q);
    if (!f) {
      EXPECT_EQ(f.error().code, ErrorCode::kDataLoss);
    }
  }
}

TEST_F(GgufTest, MissingFileIsNotFound) {
  auto f = ReadGguf(Path("absent.gguf"));
  ASSERT_FALSE(f);
  EXPECT_EQ(f.error().code, ErrorCode::kNotFound);
}

TEST(HalfTest, RoundTripsRepresentableValues) {
  for (float v : {0.0f, 1.0f, -2.5f, 0.000061035156f, 65504.0f, 0.1f}) {
    float back = HalfToFloat(FloatToHalf(v));
    EXPECT_NEAR(back, v, std::abs(v) * 1e-3 + 1e-7) << v;
  }
  EXPECT_EQ(FloatToHalf(1.0f), 0x3c00);
  EXPECT_EQ(FloatToHalf(-2.0f), 0xc000);
  EXPECT_EQ(FloatToHalf(1e6f), 0x7c00);  // overflow to inf
  EXPECT_TRUE(std::isnan(HalfToFloat(FloatToHalf(std::nanf("")))));
}

TEST(GgmlTypeTest, Sizes) {
  EXPECT_EQ(*GgmlTypeBytes(static_cast<uint32_t>(GgmlType::kQ8_0), 64), 68u);
  EXPECT_EQ(*GgmlTypeBytes(static_cast<uint32_t>(GgmlType::kQ4_0), 32), 18u);
  EXPECT_FALSE(GgmlTypeBytes(static_cast<uint32_t>(GgmlType::kQ4_0), 33));
  EXPECT_EQ(GgmlTypeName(8), "Q8_0");
}

}  // namespace
}  // namespace hone::model
