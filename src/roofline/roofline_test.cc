#include "roofline/roofline.h"

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "testing/test_util.h"

namespace hone::roofline {
namespace {

constexpr char kLlama8B[] = R"({"architectures": ["LlamaForCausalLM"], "model_type": "llama",
  "hidden_size": 4096, "intermediate_size": 14336, "num_attention_heads": 32, "num_hidden_layers": 32,
  "num_key_value_heads": 8, "tie_word_embeddings": false, "torch_dtype": "bfloat16", "vocab_size": 128256})";

// A 70B-class dense model (Llama-3.1-70B's shape): 141 GB of bf16 weights.
constexpr char kLlama70B[] = R"({"hidden_size": 8192, "intermediate_size": 28672, "num_attention_heads": 64,
  "num_hidden_layers": 80, "num_key_value_heads": 8, "vocab_size": 128256, "torch_dtype": "bfloat16"})";

// Round datasheet numbers, so the expectations below can be checked by hand.
constexpr char kTable[] = R"(devices:
  - {id: gpu80, kind: gpu, peak_tflops: {bf16: 1000, fp8: 2000}, memory_bw_gbs: 4000, memory_gb: 80}
  - {id: fp8only, kind: gpu, peak_tflops: {fp8: 2000}, memory_bw_gbs: 4000, memory_gb: 80}
)";

class RooflineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto table = HardwareTable::Parse(kTable, "table.yaml");
    ASSERT_OK(table);
    gpu_ = *table->Find("gpu80");
    auto m = ModelSpecFromHfConfigText(kLlama8B, "config.json");
    ASSERT_OK(m);
    llama_ = *m;
  }
  Hardware gpu_;
  ModelSpec llama_;
};

TEST_F(RooflineTest, SingleStreamDecodeIsBandwidthBound) {
  ASSERT_OK_AND_ASSIGN(PhaseBound d, DecodeBound(gpu_, llama_, 1, 1024));
  // Every non-embedding weight (15.009 GB) plus 1025 tokens of KV (128 KiB each).
  double bytes = 2 * (8'029'995'008.0 - 525'336'576.0) + 1025 * 131072.0;
  EXPECT_DOUBLE_EQ(d.bytes, bytes);
  EXPECT_DOUBLE_EQ(d.memory_s, bytes / 4e12);
  EXPECT_EQ(d.limiter, BoundClass::kMemoryBandwidth);
  EXPECT_NEAR(d.time_s * 1e3, 3.786, 0.001);
  EXPECT_LT(d.intensity(), 2);  // ~1 FLOP per byte: far left of the ridge (250 FLOP/B)
}

// A CPU host's probed last-level cache: a step's bytes up to its size are bounded by the
// cache's bandwidth, the rest by memory's. A model that fits is bounded by the cache
// alone; a larger one by the split; a host without a known cache (or whose cache probe
// read no faster than memory) by memory alone.
TEST_F(RooflineTest, ALastLevelCacheBoundsTheBytesThatFitInIt) {
  ASSERT_OK_AND_ASSIGN(auto table, HardwareTable::Parse(R"(devices:
  - {id: cpu2, kind: cpu, peak_tflops: {fp32: 0.3, fp16: 0.3, bf16: 0.3, int8: 0.6}, memory_bw_gbs: 20, memory_gb: 24}
)", "table.yaml"));
  ASSERT_OK_AND_ASSIGN(Hardware plain, table.Find("cpu2"));
  Hardware cpu = plain;
  cpu.llc_bytes = 300.0 * (1 << 20);
  cpu.llc_bw_bytes_per_s = 80e9;
  ASSERT_OK_AND_ASSIGN(ModelSpec small, ModelSpecFromHfConfigText(
                                            R"({"hidden_size": 512, "intermediate_size": 1536, "num_attention_heads": 8,
                                                "num_hidden_layers": 8, "num_key_value_heads": 8, "vocab_size": 32000,
                                                "torch_dtype": "float16"})",
                                            "config.json"));
  ASSERT_OK_AND_ASSIGN(PhaseBound fits, DecodeBound(cpu, small, 1, 128));
  ASSERT_LT(fits.bytes, cpu.llc_bytes);
  EXPECT_DOUBLE_EQ(fits.memory_s, fits.bytes / 80e9);
  ASSERT_OK_AND_ASSIGN(PhaseBound from_memory, DecodeBound(plain, small, 1, 128));
  EXPECT_DOUBLE_EQ(from_memory.memory_s, fits.bytes / 20e9);
  // The 8B model (15 GB a step) mostly from memory: 300 MiB of it from the cache.
  ASSERT_OK_AND_ASSIGN(PhaseBound big, DecodeBound(cpu, llama_, 1, 1024));
  EXPECT_DOUBLE_EQ(big.memory_s, cpu.llc_bytes / 80e9 + (big.bytes - cpu.llc_bytes) / 20e9);
  // A cache probe no faster than memory is ignored.
  Hardware slow = cpu;
  slow.llc_bw_bytes_per_s = 15e9;
  ASSERT_OK_AND_ASSIGN(PhaseBound ignored, DecodeBound(slow, small, 1, 128));
  EXPECT_DOUBLE_EQ(ignored.memory_s, fits.bytes / 20e9);
  // The workload bound rises with it, and says why.
  OperatingPoint point{.concurrency = 1, .isl = 64, .osl = 64};
  ASSERT_OK_AND_ASSIGN(Bounds with, Analyze(cpu, small, point));
  ASSERT_OK_AND_ASSIGN(Bounds without, Analyze(plain, small, point));
  EXPECT_GT(with.output_tok_s, 3 * without.output_tok_s);
  bool noted = false;
  for (const std::string& n : with.notes) noted = noted || n.starts_with("last-level cache 300 MiB at 80.0 GB/s");
  EXPECT_TRUE(noted);
}

TEST_F(RooflineTest, LargeBatchesAndLongPromptsAreComputeBound) {
  ASSERT_OK_AND_ASSIGN(PhaseBound d, DecodeBound(gpu_, llama_, 1024, 64));
  EXPECT_EQ(d.limiter, BoundClass::kCompute);
  ASSERT_OK_AND_ASSIGN(PhaseBound p, PrefillBound(gpu_, llama_, 8192));
  EXPECT_EQ(p.limiter, BoundClass::kCompute);
  // The LM head runs for the last prompt token only; causal attention over 8192*8193/2.
  double flops = 8192 * (2 * (8'029'995'008.0 - 525'336'576.0) - 2 * 525'336'576.0) + 2 * 525'336'576.0 +
                 524288.0 * 8192 * 8193 / 2;
  EXPECT_DOUBLE_EQ(p.flops, flops);
  ASSERT_OK_AND_ASSIGN(PhaseBound shortp, PrefillBound(gpu_, llama_, 16));
  EXPECT_EQ(shortp.limiter, BoundClass::kMemoryBandwidth);  // 16 tokens cannot hide the weight read
}

TEST_F(RooflineTest, WorkloadBoundAtModerateConcurrency) {
  OperatingPoint p{.concurrency = 64, .isl = 1024, .osl = 1024};
  ASSERT_OK_AND_ASSIGN(Bounds b, Analyze(gpu_, llama_, p));
  EXPECT_EQ(b.limiter, BoundClass::kMemoryBandwidth);
  EXPECT_EQ(b.effective_concurrency, 64);
  // (80 GB x 0.9 - 16.06 GB) / 128 KiB = 426,788 tokens -> 208 requests of 2048.
  EXPECT_NEAR(b.kv_capacity_tokens, 426788, 1);
  EXPECT_EQ(b.max_concurrency_by_kv, 208);
  // Decode at mean context 1536 dominates; the overlapped prefill adds only KV writes.
  EXPECT_LE(b.output_tok_s, b.decode_tok_s);
  EXPECT_GT(b.output_tok_s, 0.99 * b.decode_tok_s);
  EXPECT_NEAR(b.output_tok_s, 9172, 2);
  EXPECT_LT(b.output_tok_s_serial, b.output_tok_s);
  EXPECT_DOUBLE_EQ(b.total_tok_s, 2 * b.output_tok_s);
  EXPECT_DOUBLE_EQ(b.requests_per_s, b.output_tok_s / 1024);
  EXPECT_NEAR(b.ttft_min_ms, 14.57, 0.01);  // 14.57 TFLOP of prefill at 1 PFLOP/s
  EXPECT_DOUBLE_EQ(b.tpot_min_ms, b.decode.time_s * 1e3);
  EXPECT_DOUBLE_EQ(b.ridge_intensity, 250);
}

TEST_F(RooflineTest, KvCapacityCapsConcurrency) {
  OperatingPoint p{.concurrency = 512, .isl = 1024, .osl = 1024};
  ASSERT_OK_AND_ASSIGN(Bounds b, Analyze(gpu_, llama_, p));
  EXPECT_EQ(b.limiter, BoundClass::kKvCapacity);
  EXPECT_EQ(b.effective_concurrency, 208);
  ASSERT_OK_AND_ASSIGN(Bounds at208, Analyze(gpu_, llama_, {.concurrency = 208, .isl = 1024, .osl = 1024}));
  EXPECT_DOUBLE_EQ(b.output_tok_s, at208.output_tok_s);
  EXPECT_FALSE(b.notes.empty());
  // Requests larger than the whole cache cannot run at all.
  auto huge = Analyze(gpu_, llama_, {.concurrency = 1, .isl = 400000, .osl = 100000});
  ASSERT_FALSE(huge);
  EXPECT_EQ(huge.error().code, ErrorCode::kResourceExhausted);
}

TEST_F(RooflineTest, PrecisionOverridesChangeBytesAndRates) {
  ASSERT_OK_AND_ASSIGN(Bounds bf16, Analyze(gpu_, llama_, {.concurrency = 8}));
  ASSERT_OK_AND_ASSIGN(Bounds fp8, Analyze(gpu_, llama_, {.concurrency = 8, .weight_dtype = "fp8", .kv_dtype = "fp8"}));
  EXPECT_EQ(fp8.weight_dtype, "fp8");
  EXPECT_DOUBLE_EQ(fp8.peak_flops, 2000e12);
  EXPECT_DOUBLE_EQ(fp8.kv_bytes_per_token, bf16.kv_bytes_per_token / 2);
  EXPECT_LT(fp8.weight_bytes, 0.6 * bf16.weight_bytes);  // embeddings stay 16-bit
  EXPECT_GT(fp8.output_tok_s, 1.8 * bf16.output_tok_s);
  EXPECT_GT(fp8.kv_capacity_tokens, 2 * bf16.kv_capacity_tokens);
}

TEST_F(RooflineTest, TensorParallelismSplitsWeightsAndKv) {
  auto big = ModelSpecFromHfConfigText(kLlama70B, "config.json");
  ASSERT_OK(big);
  auto one = Analyze(gpu_, *big, {.concurrency = 16});
  ASSERT_FALSE(one);
  EXPECT_EQ(one.error().code, ErrorCode::kResourceExhausted);
  EXPECT_NE(one.error().message.find("do not fit"), std::string::npos);
  ASSERT_OK_AND_ASSIGN(Bounds four, Analyze(gpu_, *big, {.concurrency = 16, .num_devices = 4}));
  EXPECT_DOUBLE_EQ(four.memory_bw, 16e12);
  EXPECT_DOUBLE_EQ(four.peak_flops, 4000e12);
  // Each device holds a quarter of the weights and 2 of the 8 KV heads.
  double free_per_device = 80e9 * 0.9 - four.weight_bytes / 4;
  EXPECT_NEAR(four.kv_capacity_tokens, free_per_device / (four.kv_bytes_per_token / 4), 1);
}

TEST_F(RooflineTest, MeaninglessPointsAreRejected) {
  EXPECT_EQ(Analyze(gpu_, llama_, {.concurrency = 0}).error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(Analyze(gpu_, llama_, {.isl = 0}).error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(Analyze(gpu_, llama_, {.weight_dtype = "fp7"}).error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(Analyze(gpu_, llama_, {.memory_utilization = 1.5}).error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(DecodeBound(gpu_, llama_, 0, 10).error().code, ErrorCode::kInvalidArgument);
  auto table = HardwareTable::Parse(kTable, "table.yaml");
  ASSERT_OK(table);
  Hardware fp8only = *table->Find("fp8only");
  ModelSpec fp32 = llama_;
  fp32.weight_dtype = "fp32";
  auto r = Analyze(fp8only, fp32, {});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::kFailedPrecondition);
}

TEST_F(RooflineTest, PrefixCacheHitsRemovePrefillWork) {
  ASSERT_OK_AND_ASSIGN(Bounds cold, Analyze(gpu_, llama_, {.concurrency = 64, .isl = 4096, .osl = 128}));
  ASSERT_OK_AND_ASSIGN(Bounds warm, Analyze(gpu_, llama_, {.concurrency = 64, .isl = 4096, .osl = 128,
                                                           .cached_prefix_fraction = 0.75}));
  EXPECT_LT(warm.prefill.flops, 0.4 * cold.prefill.flops);
  EXPECT_LT(warm.ttft_min_ms, cold.ttft_min_ms);
  EXPECT_GE(warm.output_tok_s, cold.output_tok_s);
}

TEST_F(RooflineTest, ClassifyHeadroom) {
  ASSERT_OK_AND_ASSIGN(Bounds b, Analyze(gpu_, llama_, {.concurrency = 64, .isl = 1024, .osl = 1024}));
  ASSERT_OK_AND_ASSIGN(Headroom mid, Classify(b, {.output_tok_s = 0.8 * b.output_tok_s}));
  EXPECT_EQ(mid.metric, "output_tok_s");
  EXPECT_NEAR(mid.ratio, 0.8, 1e-12);
  EXPECT_NEAR(mid.headroom_x, 1.25, 1e-12);
  EXPECT_EQ(mid.bound_class, BoundClass::kMemoryBandwidth);
  EXPECT_FALSE(mid.saturated);
  EXPECT_NE(mid.summary.find("80% of the roofline"), std::string::npos) << mid.summary;

  ASSERT_OK_AND_ASSIGN(Headroom top, Classify(b, {.output_tok_s = 0.97 * b.output_tok_s}));
  EXPECT_TRUE(top.saturated);
  ASSERT_OK_AND_ASSIGN(Headroom low, Classify(b, {.output_tok_s = 0.3 * b.output_tok_s}));
  EXPECT_EQ(low.bound_class, BoundClass::kOverhead);
  ASSERT_OK_AND_ASSIGN(Headroom above, Classify(b, {.output_tok_s = 1.2 * b.output_tok_s}));
  EXPECT_TRUE(above.exceeds_bound);

  // Latencies compare the other way round: twice the minimal TPOT is 50%.
  ASSERT_OK_AND_ASSIGN(Headroom tpot, Classify(b, {.tpot_ms = 2 * b.tpot_min_ms}));
  EXPECT_EQ(tpot.metric, "tpot_ms");
  EXPECT_NEAR(tpot.ratio, 0.5, 1e-12);

  EXPECT_EQ(Classify(b, {}).error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(Classify(b, {.output_tok_s = 0.0}).error().code, ErrorCode::kInvalidArgument);
}

// The roofline against real measurements: no measurement may beat its bound, and a
// well-implemented engine lands within 60-100% of it (docs/roofline.md has the table).
class MeasuredFiguresTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto table = HardwareTable::Load((testing::SourceDir() / "data/hardware.yaml").string());
    ASSERT_OK(table);
    table_ = *table;
    auto m = ModelSpecFromHfConfigText(kLlama8B, "config.json");
    ASSERT_OK(m);
    llama_ = *m;
  }
  HardwareTable table_;
  ModelSpec llama_;
};

TEST_F(MeasuredFiguresTest, H200PlainPyTorchLlama8BStepsSitBelowTheBound) {
  // src/roofline/tools/llama_step_probe.py on this workplace's H200 (torch 2.11,
  // random bf16 weights, CUDA graphs for decode).
  std::ifstream in(testing::SourceDir() / "src/roofline/testdata/h200_llama8b_probe_results.json");
  ASSERT_TRUE(in);
  auto probe = nlohmann::json::parse(in);
  ASSERT_OK_AND_ASSIGN(Hardware h200, table_.Find("h200"));
  EXPECT_DOUBLE_EQ(probe["params"].get<double>(), llama_.ParamCount());
  for (int batch : {1, 16, 64, 256}) {
    double measured_ms = probe["decode"]["b" + std::to_string(batch) + "_ctx1024_graph_ms"].get<double>();
    ASSERT_OK_AND_ASSIGN(PhaseBound d, DecodeBound(h200, llama_, batch, 1023));
    double ratio = d.time_s * 1e3 / measured_ms;
    EXPECT_LE(ratio, 1.0) << "batch " << batch;
    EXPECT_GE(ratio, 0.6) << "batch " << batch;
  }
  for (int tokens : {1024, 8192}) {
    double measured_ms = probe["prefill"]["b1_t" + std::to_string(tokens) + "_ms"].get<double>();
    ASSERT_OK_AND_ASSIGN(PhaseBound p, PrefillBound(h200, llama_, tokens));
    double ratio = p.time_s * 1e3 / measured_ms;
    EXPECT_LE(ratio, 1.0) << tokens;
    EXPECT_GE(ratio, 0.6) << tokens;
  }
}

TEST_F(MeasuredFiguresTest, PublishedA100SingleStreamDecode) {
  // johnmusgrave.com, "vLLM throughput-latency sweep on NVIDIA A100": vLLM 0.23.0,
  // Llama-3.1-8B-Instruct bf16, A100 40GB, 1024 in / 128 out, concurrency 1:
  // "decode ... about 75 tokens/sec".
  ASSERT_OK_AND_ASSIGN(Hardware a100, table_.Find("a100-40gb"));
  ASSERT_OK_AND_ASSIGN(PhaseBound d, DecodeBound(a100, llama_, 1, 1024 + 64));
  double bound_tok_s = 1 / d.time_s;
  EXPECT_NEAR(bound_tok_s, 102.7, 0.5);
  EXPECT_LT(75.0, bound_tok_s);
  EXPECT_GT(75.0 / bound_tok_s, 0.6);
}

}  // namespace
}  // namespace hone::roofline
