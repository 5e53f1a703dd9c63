// On a machine with an NVIDIA GPU and PyTorch: the built-in lane, run through the real
// backend protocol on a one-case task, then re-verified by the harness in fresh
// processes. Skips cleanly without a GPU.
#include <cstdlib>

#include "kernel/bench_result.h"
#include "kernel/protocol.h"
#include "kernel/summary.h"
#include "kernel/verify.h"
#include "sys/files.h"
#include "sys/process.h"
#include "testing/test_util.h"

namespace hone::kernel {
namespace {

bool HaveGpuAndTorch() {
  if (sys::FindOnPath("nvidia-smi").empty() || sys::FindOnPath("nvcc").empty()) return false;
  sys::ProcessSpec spec{.argv = {"python3", "-c", "import torch,sys; sys.exit(0 if torch.cuda.is_available() else 1)"}};
  auto r = sys::RunCommand(spec, std::chrono::seconds(120));
  return r && r->status.success();
}

TEST(KernelGpuTest, BuiltinLaneClaimsAreReverified) {
  if (!HaveGpuAndTorch()) GTEST_SKIP() << "needs an NVIDIA GPU, nvcc and PyTorch";
  auto cat = OpCatalog::Load((testing::SourceDir() / "data/kernel/ops.yaml").string());
  ASSERT_TRUE(cat);
  auto spec = ParseTaskSpec(R"(
task_id: gpu.rms
op: rmsnorm_fp8_quant
baseline: {impl: [torch_eager]}
reference: torch_fp64
tolerances: {bf16: {atol: 0.02, rtol: 0.02, min_snr_db: 30}, fp8_e4m3: {min_snr_db: 25}}
timing: {replays: 5, rounds: 2, runs: 3}
cases: [{id: t1024, weight: 1, dims: {tokens: 1024, hidden: 4096}, params: {quant: per_token, eps: 1.0e-6}}]
)", "gpu.yaml", *cat);
  ASSERT_TRUE(spec) << spec.error().ToString();
  ASSERT_OK_AND_ASSIGN(auto dir, sys::TempDir::Create("hone-kernel-gpu"));
  const std::string pkg = (dir->path() / "package.json").string(), res = (dir->path() / "result.json").string();
  ASSERT_OK_AND_ASSIGN(std::string text, WritePackageJson({.workload = "test", .device = "", .arch = "sm_90a",
                                                           .best_config = {}, .tasks = {*spec}}, *cat));
  ASSERT_OK(sys::WriteFileAtomic(pkg, text));
  const std::string kbench = (testing::SourceDir() / "kernels/bench/kbench.py").string();
  ASSERT_OK_AND_ASSIGN(BackendResult claims,
                       RunBackend({.argv = {"python3", kbench, "lane"}, .timeout = std::chrono::minutes(20),
                                   .log_path = ""}, pkg, res));
  ASSERT_EQ(claims.accepted.size() + claims.rejected.size(), 1u);
  const std::string raw = (dir->path() / "raw.json").string();
  sys::ProcessSpec verify{.argv = {"python3", kbench, "verify", "--package", pkg, "--claims", res, "--out", raw}};
  ASSERT_OK_AND_ASSIGN(auto out, sys::RunCommand(verify, std::chrono::minutes(20)));
  ASSERT_TRUE(out.status.success()) << out.output;
  ASSERT_OK_AND_ASSIGN(std::string raw_text, sys::ReadFile(raw));
  ASSERT_OK_AND_ASSIGN(BenchResult bench, ParseBenchResult(raw_text, raw));
  std::vector<TaskSummary> sums = Summarize(bench);
  ASSERT_EQ(sums.size(), 1u);
  ASSERT_EQ(sums[0].cases.size(), 1u);
  EXPECT_TRUE(sums[0].cases[0].checks_ok);
  EXPECT_EQ(sums[0].cases[0].decision.runs, 3);
  EXPECT_GT(bench.ceilings.bw_gbps, 1000);
  for (const ClaimCheck& c : VerifyClaims(claims, sums, {{"gpu.rms", spec->sha256}})) {
    EXPECT_NE(c.status, ClaimStatus::kNotMeasured) << c.note;
  }
}

}  // namespace
}  // namespace hone::kernel
