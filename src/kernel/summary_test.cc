#include "kernel/summary.h"

#include <nlohmann/json.hpp>

#include "kernel/tuned_table.h"
#include "kernel/verify.h"
#include "testing/test_util.h"

namespace hone::kernel {
namespace {

using ::testing::HasSubstr;
using json = nlohmann::json;

json MakeRun(double base_ms, double cand_ms, bool ok = true) {
  return {{"candidate_check", {{"status", ok ? "ok" : "wrong"}, {"inputs_unmodified", true}}},
          {"baseline_check", {{"status", "ok"}}},
          {"candidate_graph_ok", true},
          {"baseline_graph_ok", true},
          {"baseline_ms", {{"median", base_ms}, {"p20", base_ms * 0.99}, {"p80", base_ms * 1.01}, {"n", 80}}},
          {"candidate_ms", {{"median", cand_ms}, {"p20", cand_ms * 0.99}, {"p80", cand_ms * 1.01}, {"n", 80}}}};
}

json Case(const std::string& id, int64_t tokens, double weight, std::vector<json> runs, bool held_out = false,
          int config = 8) {
  return {{"case_id", id},
          {"held_out", held_out},
          {"weight", weight},
          {"dims", {{"tokens", tokens}, {"hidden", 4096}}},
          {"params", {{"quant", "per_token"}, {"eps", 1e-6}}},
          {"bytes", 7.0 * tokens * 4096},
          {"flops", 8.0 * tokens * 4096},
          {"candidate", {{"config", config}, {"name", "threads=256,vpt=2"}, {"num_splits", 1}, {"regs", 40},
                         {"local_bytes", 0}, {"ptxas", {{"spill_stores", 0}}}}},
          {"baseline", "torch_compile"},
          {"claimed_speedup", 1.5},
          {"runs", runs}};
}

json Bench(std::vector<json> cases) {
  return {{"schema", "hone.kernel.bench/v1"},
          {"device", {{"name", "NVIDIA H200"}, {"sm_count", 132}, {"l2_bytes", 62914560}, {"torch", "2.11"}}},
          {"compiler", "Cuda compilation tools, release 13.0, V13.0.88"},
          {"ceilings", {{"bw_gbps", 4000.0}, {"bf16_matmul_tflops", 700.0}}},
          {"timing", {{"runs", 3}, {"method", "cuda_graph_replay"}}},
          {"tasks", {{{"task_id", "rms"}, {"op", "rmsnorm_fp8_quant"}, {"spec_sha256", "abc123"},
                      {"keep", {{"min_improve", 0.02}, {"confidence", 0.95}, {"max_case_regression", 0.02}}},
                      {"cases", cases}}}}};
}

BenchResult Parse(const json& j) {
  auto r = ParseBenchResult(j.dump(), "raw.json");
  EXPECT_TRUE(r) << r.error().ToString();
  return *r;
}

TEST(SummaryTest, DecisionsRooflineAndFamily) {
  // 4096 tokens: 7*4096*4096 bytes in 0.030 ms at 4000 GB/s -> 95.4% of the roofline.
  BenchResult b = Parse(Bench({Case("big", 4096, 1, {MakeRun(0.040, 0.030), MakeRun(0.041, 0.0301), MakeRun(0.0405, 0.0299)}),
                               Case("small", 64, 1, {MakeRun(0.005, 0.0051), MakeRun(0.005, 0.005), MakeRun(0.005, 0.0049)}),
                               Case("held", 1024, 1, {MakeRun(0.012, 0.010), MakeRun(0.012, 0.010), MakeRun(0.012, 0.010)}, true)}));
  std::vector<TaskSummary> s = Summarize(b);
  ASSERT_EQ(s.size(), 1u);
  ASSERT_EQ(s[0].cases.size(), 3u);
  const CaseSummary& big = s[0].cases[0];
  EXPECT_EQ(big.decision.verdict, Verdict::kKeep) << big.decision.reason;
  EXPECT_NEAR(big.roofline_candidate_pct, 100.0 * 7 * 4096 * 4096 / 0.030e-3 / 4000e9, 0.01);
  EXPECT_EQ(s[0].cases[1].decision.verdict, Verdict::kInconclusive);
  EXPECT_EQ(s[0].kept, 1);
  // Weighted over the two tuned cases only; the held-out case reports separately.
  EXPECT_NEAR(s[0].held_out_geomean, 1.2, 1e-9);
  EXPECT_NEAR(s[0].family.weighted, 2.0 / (1 / big.decision.speedup + 1 / s[0].cases[1].decision.speedup), 1e-9);
  EXPECT_NEAR(s[0].roofline_largest_pct, big.roofline_candidate_pct, 1e-9);
  std::string table = FormatTable(b, s);
  EXPECT_THAT(table, HasSubstr("big"));
  EXPECT_THAT(table, HasSubstr("held*"));
  EXPECT_THAT(table, HasSubstr("ACCEPTED"));
}

TEST(SummaryTest, FailedCheckRevertsAndSuspiciousSpeedupIsNotKept) {
  BenchResult b = Parse(Bench({Case("wrong", 4096, 1, {MakeRun(0.04, 0.02), MakeRun(0.04, 0.02, false), MakeRun(0.04, 0.02)}),
                               Case("magic", 64, 1, {MakeRun(0.05, 0.001), MakeRun(0.05, 0.001), MakeRun(0.05, 0.001)})}));
  std::vector<TaskSummary> s = Summarize(b);
  EXPECT_EQ(s[0].cases[0].decision.verdict, Verdict::kRevert);
  EXPECT_FALSE(s[0].cases[0].checks_ok);
  EXPECT_EQ(s[0].cases[1].decision.verdict, Verdict::kInconclusive);
  EXPECT_THAT(s[0].cases[1].flag, HasSubstr("> 10x"));
}

TEST(SummaryTest, RejectsMeasurementWithoutCeilings) {
  json j = Bench({Case("a", 64, 1, {MakeRun(1, 1)})});
  j["ceilings"]["bw_gbps"] = 0;
  auto r = ParseBenchResult(j.dump(), "raw.json");
  ASSERT_FALSE(r);
  EXPECT_THAT(r.error().message, HasSubstr("must be measured"));
}

TEST(TunedTableTest, KeyedLikeVllmAndLookedUpByNearestBatch) {
  auto cat = OpCatalog::Load((testing::SourceDir() / "data/kernel/ops.yaml").string());
  ASSERT_TRUE(cat);
  BenchResult b = Parse(Bench({Case("t64", 64, 1, {MakeRun(0.01, 0.008), MakeRun(0.01, 0.008), MakeRun(0.01, 0.0081)}, false, 3),
                               Case("t4096", 4096, 1, {MakeRun(0.04, 0.03), MakeRun(0.04, 0.03), MakeRun(0.04, 0.0301)}, false, 8),
                               Case("h", 1024, 1, {MakeRun(0.01, 0.01)}, true)}));
  std::vector<TaskSummary> s = Summarize(b);
  ASSERT_OK_AND_ASSIGN(auto files, BuildTunedTables(b, s, *cat, "raw.json"));
  ASSERT_EQ(files.size(), 1u);
  EXPECT_EQ(files[0].subdir, "nvcc_13.0");
  EXPECT_EQ(files[0].file_name,
            "op=rmsnorm_fp8_quant,hidden=4096,quant=per_token,device_name=NVIDIA_H200,dtype=bf16-fp8e4m3.json");
  json table = json::parse(files[0].json);
  EXPECT_FALSE(table.contains("1024")) << "held-out shapes are not table entries";
  EXPECT_EQ(table["_meta"]["spec_sha256"], "abc123");
  ASSERT_OK_AND_ASSIGN(TunedChoice c, LookupTuned(files[0].json, {100}));
  EXPECT_EQ(c.batch_key, "64");
  EXPECT_EQ(c.config.index, 3);
  EXPECT_TRUE(c.use);
  ASSERT_OK_AND_ASSIGN(c, LookupTuned(files[0].json, {3000}));
  EXPECT_EQ(c.batch_key, "4096");
  EXPECT_FALSE(LookupTuned(files[0].json, {1, 2}));
}

TEST(VerifyTest, ClassifiesClaims) {
  BenchResult b = Parse(Bench({Case("a", 4096, 1, {MakeRun(0.04, 0.03), MakeRun(0.04, 0.03), MakeRun(0.04, 0.0301)}),
                               Case("b", 64, 1, {MakeRun(0.01, 0.011), MakeRun(0.01, 0.0111), MakeRun(0.01, 0.0109)}),
                               Case("c", 64, 1, {MakeRun(0.01, 0.0099), MakeRun(0.01, 0.0101), MakeRun(0.01, 0.01)})}));
  std::vector<TaskSummary> s = Summarize(b);
  auto claim = [](const std::string& id, double x, int config = 8) {
    KernelClaim c;
    c.task_id = "rms";
    c.case_id = id;
    c.config = {config, "threads=256,vpt=2", 1};
    c.claimed_speedup = x;
    return c;
  };
  BackendResult r;
  r.accepted = {claim("a", 1.35), claim("a", 2.0), claim("b", 1.2), claim("c", 1.1), claim("zz", 1.5),
                claim("a", 1.3, 5)};
  std::vector<ClaimCheck> v = VerifyClaims(r, s, {});
  ASSERT_EQ(v.size(), 6u);
  EXPECT_EQ(v[0].status, ClaimStatus::kConfirmed);
  EXPECT_NEAR(v[0].verified_speedup, 1.33, 0.01);
  EXPECT_EQ(v[1].status, ClaimStatus::kOverclaimed);
  EXPECT_TRUE(v[1].kept());
  EXPECT_EQ(v[2].status, ClaimStatus::kRegressed);
  EXPECT_EQ(v[3].status, ClaimStatus::kNotConfirmed);
  EXPECT_EQ(v[4].status, ClaimStatus::kNotMeasured);
  EXPECT_EQ(v[5].status, ClaimStatus::kNotMeasured) << "another config was measured";
  std::vector<ClaimCheck> changed = VerifyClaims(r, s, {{"rms", "different"}});
  EXPECT_EQ(changed[0].status, ClaimStatus::kSpecChanged);
  EXPECT_THAT(FormatClaimChecks(v), HasSubstr("2 of 6 claim(s) kept"));
}

}  // namespace
}  // namespace hone::kernel
