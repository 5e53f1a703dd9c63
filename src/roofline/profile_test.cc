#include "roofline/profile.h"

#include <gtest/gtest.h>

#include <numeric>

#include "testing/test_util.h"

namespace hone::roofline {
namespace {

class ProfileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto c = OpClassifier::Load((testing::SourceDir() / "data/op_classes.yaml").string());
    ASSERT_OK(c);
    classifier_ = *c;
  }
  static std::string Testdata(const std::string& name) {
    return (testing::SourceDir() / "src/roofline/testdata" / name).string();
  }
  OpClassifier classifier_;
};

TEST_F(ProfileTest, KernelNamesMapToOpClasses) {
  struct Case {
    const char* name;
    const char* op_class;
    bool vendor;
  } cases[] = {
      // Seen in the H200 traces under testdata/.
      {"nvjet_sm90_tst_256x64_64x5_4x1_v_bz_NNT", "gemm", true},
      {"cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7_64x128x128_4x1x1_cga1x1", "attention", true},
      {"void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::BFloat16, float, true>(int)", "norm",
       false},
      {"void at::native::vectorized_elementwise_kernel<8, at::native::CUDAFunctor_add<c10::BFloat16>>", "elementwise",
       false},
      // vLLM / SGLang / FlashInfer / NCCL names.
      {"void flash::flash_fwd_splitkv_kernel<Flash_fwd_kernel_traits<128, 64, 128, 4>>", "attention", false},
      {"void cutlass::device_kernel<flash::enable_sm90_or_later<flash::FlashAttnFwdSm90<...>>>", "attention", false},
      {"void flashinfer::BatchDecodeWithPagedKVCacheKernel<...>", "attention", false},
      {"void vllm::reshape_and_cache_flash_kernel<__nv_bfloat16>", "attention", false},
      {"void vllm::fused_add_rms_norm_kernel<c10::BFloat16, 8>", "norm", false},
      {"triton_red_fused__to_copy_add_mean_mul_pow_rsqrt_0", "norm", false},
      {"void vllm::rotary_embedding_kernel<c10::BFloat16, true>", "rope", false},
      {"void vllm::scaled_fp8_quant_kernel<c10::BFloat16, c10::Float8_e4m3fn>", "quant", false},
      {"_w8a8_block_fp8_matmul", "gemm", false},
      {"fused_moe_kernel", "gemm", false},
      {"void cutlass::Kernel2<cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_64x4_tn_align8>", "gemm", false},
      {"Cijk_Alik_Bljk_BBS_BH_MT128x128x64_MI16x16x16x1", "gemm", true},
      {"ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)", "comm", true},
      {"void vllm::cross_device_reduce_1stage<__nv_bfloat16, 8>", "comm", false},
      {"void vllm::act_and_mul_kernel<c10::BFloat16, &vllm::silu_kernel>", "elementwise", false},
      {"Memcpy DtoD (Device -> Device)", "other", false},
      {"some_kernel_nobody_knows", "other", false},
  };
  for (const auto& c : cases) {
    OpClassifier::Match m = classifier_.Classify(c.name);
    EXPECT_EQ(m.op_class, c.op_class) << c.name;
    EXPECT_EQ(m.vendor, c.vendor) << c.name;
  }
}

TEST_F(ProfileTest, RanksARealDecodeStepByGpuTime) {
  // One eager decode step of a Llama-3.1-8B-shaped model at batch 64, 1024 tokens of
  // context, recorded with torch.profiler on an H200 (tools/llama_step_probe.py).
  ASSERT_OK_AND_ASSIGN(ProfileSummary s,
                       SummarizeTraceFile(Testdata("llama8b_decode_b64_h200.trace.json"), classifier_));
  EXPECT_EQ(s.events, 450);  // the kernels; CPU ops and metadata are skipped
  EXPECT_EQ(s.devices, 1);
  EXPECT_GT(s.busy_fraction, 0.5);
  EXPECT_LE(s.busy_fraction, 1.0);
  double sum = std::accumulate(s.kernels.begin(), s.kernels.end(), 0.0,
                               [](double a, const KernelStat& k) { return a + k.total_us; });
  EXPECT_NEAR(sum, s.gpu_time_us, 1e-6 * s.gpu_time_us);
  for (size_t i = 1; i < s.kernels.size(); ++i) EXPECT_GE(s.kernels[i - 1].total_us, s.kernels[i].total_us);
  // GEMMs first, attention over the 64 x 1024-token KV second.
  ASSERT_GE(s.classes.size(), 3u);
  EXPECT_EQ(s.classes[0].op_class, "gemm");
  EXPECT_GT(s.classes[0].share, 0.4);
  EXPECT_EQ(s.classes[1].op_class, "attention");
  EXPECT_GT(s.classes[1].share, 0.15);
  double class_share = 0;
  for (const auto& c : s.classes) class_share += c.share;
  EXPECT_NEAR(class_share, 1.0, 1e-9);
  EXPECT_EQ(s.kernels[0].op_class, "attention");  // one SDPA kernel outweighs any single GEMM shape
  EXPECT_EQ(s.kernels[0].count, 32);              // once per layer

  std::vector<KernelStat> targets = KernelTargets(s);
  ASSERT_FALSE(targets.empty());
  EXPECT_LE(targets.size(), 5u);
  for (const auto& k : targets) EXPECT_GE(k.share, 0.10);
  EXPECT_EQ(targets[0].name, s.kernels[0].name);
  // Vendor kernels (cuBLAS, cuDNN) can be left out when only editable code counts.
  EXPECT_TRUE(KernelTargets(s, {.exclude_vendor = true}).empty());
}

TEST_F(ProfileTest, PrefillTraceIsGemmDominated) {
  ASSERT_OK_AND_ASSIGN(ProfileSummary s,
                       SummarizeTraceFile(Testdata("llama8b_prefill_512_h200.trace.json"), classifier_));
  EXPECT_EQ(s.events, 354 + 65);  // kernels and memsets
  EXPECT_EQ(s.classes[0].op_class, "gemm");
  EXPECT_GT(s.classes[0].share, 0.6);
}

TEST_F(ProfileTest, GzippedTraceReadsTheSame) {
  ASSERT_OK_AND_ASSIGN(ProfileSummary plain,
                       SummarizeTraceFile(Testdata("llama_tiny_prefill_h200.trace.json"), classifier_));
  ASSERT_OK_AND_ASSIGN(ProfileSummary gz,
                       SummarizeTraceFile(Testdata("llama_tiny_prefill_h200.trace.json.gz"), classifier_));
  EXPECT_EQ(plain.events, 26);
  EXPECT_EQ(gz.events, plain.events);
  EXPECT_DOUBLE_EQ(gz.gpu_time_us, plain.gpu_time_us);
  ASSERT_EQ(gz.kernels.size(), plain.kernels.size());
  for (size_t i = 0; i < gz.kernels.size(); ++i) EXPECT_EQ(gz.kernels[i].name, plain.kernels[i].name);
}

TEST_F(ProfileTest, BareEventArrayAndIdleTimeAcrossDevices) {
  // Two GPUs (pids 0, 1) over a 100 us span: device 0 busy 0-40 (two overlapping
  // kernels), device 1 busy 50-100; a CPU op and an instant event are ignored.
  const char* trace = R"([
    {"ph": "X", "cat": "kernel", "name": "nvjet_a", "pid": 0, "tid": 7, "ts": 0, "dur": 30},
    {"ph": "X", "cat": "kernel", "name": "nvjet_a", "pid": 0, "tid": 8, "ts": 10, "dur": 30},
    {"ph": "X", "cat": "Kernel", "name": "flash_fwd_kernel", "pid": 1, "tid": 7, "ts": 50, "dur": 50},
    {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 99, "tid": 1, "ts": 0, "dur": 500},
    {"ph": "i", "cat": "kernel", "name": "marker", "pid": 0, "tid": 7, "ts": 5}
  ])";
  ASSERT_OK_AND_ASSIGN(ProfileSummary s, SummarizeTrace(trace, classifier_));
  EXPECT_EQ(s.events, 3);
  EXPECT_EQ(s.devices, 2);
  EXPECT_DOUBLE_EQ(s.gpu_time_us, 110);
  EXPECT_DOUBLE_EQ(s.span_us, 100);
  EXPECT_DOUBLE_EQ(s.busy_fraction, (40.0 + 50.0) / (100.0 * 2));
  ASSERT_EQ(s.kernels.size(), 2u);
  EXPECT_EQ(s.kernels[0].name, "nvjet_a");
  EXPECT_EQ(s.kernels[0].count, 2);
  EXPECT_DOUBLE_EQ(s.kernels[0].mean_us(), 30);
  EXPECT_DOUBLE_EQ(s.kernels[0].share, 60.0 / 110.0);
}

TEST_F(ProfileTest, BadTracesAreErrors) {
  EXPECT_EQ(SummarizeTrace("{not json", classifier_).error().code, ErrorCode::kDataLoss);
  EXPECT_EQ(SummarizeTrace(R"({"foo": 1})", classifier_).error().code, ErrorCode::kDataLoss);
  auto no_kernels = SummarizeTrace(R"({"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "a", "ts": 0,
                                      "dur": 1}]})",
                                   classifier_);
  ASSERT_FALSE(no_kernels);
  EXPECT_NE(no_kernels.error().message.find("no GPU kernel events"), std::string::npos);
  auto no_dur = SummarizeTrace(R"([{"ph": "X", "cat": "kernel", "name": "k", "ts": 0}])", classifier_);
  ASSERT_FALSE(no_dur);
  EXPECT_EQ(no_dur.error().code, ErrorCode::kDataLoss);
  EXPECT_EQ(SummarizeTraceFile("/nonexistent/trace.json", classifier_).error().code, ErrorCode::kNotFound);
}

TEST_F(ProfileTest, RulesFileErrorsNameTheirLine) {
  auto bad_class = OpClassifier::Parse("classes: [gemm, other]\nrules:\n  - class: attn\n    patterns: [x]\n", "r.yaml");
  ASSERT_FALSE(bad_class);
  EXPECT_NE(bad_class.error().message.find("r.yaml:3:12"), std::string::npos) << bad_class.error().message;
  auto no_other = OpClassifier::Parse("classes: [gemm]\nrules: []\n", "r.yaml");
  ASSERT_FALSE(no_other);
  EXPECT_NE(no_other.error().message.find("'other'"), std::string::npos);
  auto empty = OpClassifier::Parse("classes: [gemm, other]\nrules:\n  - class: gemm\n    patterns: []\n", "r.yaml");
  ASSERT_FALSE(empty);
}

TEST(ShortKernelNameTest, DropsTemplatesAndParameters) {
  EXPECT_EQ(ShortKernelName("void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::BFloat16, "
                            "float, true>(int, float, c10::BFloat16 const*)"),
            "at::native::vectorized_layer_norm_kernel");
  EXPECT_EQ(ShortKernelName("nvjet_sm90_tst_256x64_64x5_4x1_v_bz_NNT"), "nvjet_sm90_tst_256x64_64x5_4x1_v_bz_NNT");
  EXPECT_EQ(ShortKernelName("ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)"),
            "ncclDevKernel_AllReduce_Sum_bf16_RING_LL");
}

}  // namespace
}  // namespace hone::roofline
