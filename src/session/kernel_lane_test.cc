// The Kernel phase with a real backend child process (a script speaking the kernel
// backend protocol): claims become candidates only through the integration map, and
// are then measured end to end like any other candidate.
#include "session/kernel_lane.h"

#include <gtest/gtest.h>

#include "testing/fake_executor.h"
#include "sys/files.h"
#include "testing/fake_clock.h"
#include "testing/test_util.h"

namespace hone::session {
namespace {

namespace fs = std::filesystem;

constexpr const char* kResult = R"({"schema": "hone.kernel.result/v1", "backend": "fake-lane", "status": "ok",
  "accepted": [{"task_id": "t", "op": "rmsnorm_fp8_quant", "case_id": "a", "config": {"index": 3, "name": "x", "num_splits": 1},
                "baseline": "torch_compile", "claimed_speedup": 10.0},
               {"task_id": "u", "op": "rope_kvcache", "case_id": "b", "config": {"index": 1, "name": "y", "num_splits": 1},
                "baseline": "torch_compile", "claimed_speedup": 2.0}],
  "rejected": [], "artifacts": {}, "compiler": "fake"})";

TEST(KernelLaneTest, ClaimsBecomeMeasuredCandidatesOnlyWhenSwitchable) {
  auto dir = sys::TempDir::Create("hone-kernellane");
  ASSERT_TRUE(dir);
  fs::path root = (*dir)->path();
  ASSERT_OK(sys::WriteFileAtomic(root / "result.json", kResult));
  // The backend: copies the canned result to --result (argv: --package P --result R).
  ASSERT_OK(sys::WriteFileAtomic(root / "backend.sh", "#!/bin/sh\ntest -f \"$2\" || exit 3\ncp " +
                                                          (root / "result.json").string() + " \"$4\"\n"));
  chmod((root / "backend.sh").c_str(), 0755);
  ASSERT_OK(sys::WriteFileAtomic(root / "integration.yaml", "fake-fw:\n  rmsnorm_fp8_quant: {fused_norm: \"on\"}\n"));
  KernelLaneOptions o;
  o.backend = {(root / "backend.sh").string()};
  o.task_files = {(testing::SourceDir() / "data/kernel/rmsnorm_fp8_quant.yaml").string()};
  o.ops_path = (testing::SourceDir() / "data/kernel/ops.yaml").string();
  o.integration_path = (root / "integration.yaml").string();
  o.framework = "fake-fw";
  o.run_dir = (root / "run").string();
  o.device = "NVIDIA H200";
  o.arch = "sm_90a";
  BackendKernelLane lane(o);

  testing::FakeClock clock;
  FakeExecutor exec;
  exec.clock = &clock;
  exec.run_dir = o.run_dir;
  exec.factors = {{"fused_norm=on", 1.04}};  // the real end-to-end effect: 4%, not 10x
  ListProposer proposer({});
  SessionServices svc;
  svc.executor = &exec;
  svc.proposer = &proposer;
  svc.clock = &clock;
  svc.kernel = &lane;
  spec::SessionSpec spec;
  spec.target.model.path = "/m.gguf";
  spec.budget.wall_s = 3600;
  spec.budget.max_cycles = 1;
  spec.measurement.max_pairs = 9;
  Coordinator c(spec, svc, Coordinator::NewState(spec, o.run_dir, clock));
  ASSERT_OK_AND_ASSIGN(SessionState s, c.Run());
  ASSERT_EQ(s.candidates.size(), 1u);
  const CandidateRecord& k = s.candidates[0];
  EXPECT_EQ(k.phase, CandidatePhase::kKernel);
  EXPECT_EQ(k.delta.ToString(), "fused_norm=on");
  EXPECT_EQ(k.verdict, Verdict::kKeep);
  EXPECT_NEAR(k.gain, 0.04, 0.01);      // the measured gain is what counts
  EXPECT_DOUBLE_EQ(k.predicted_gain, 9.0);  // the backend's claim is only recorded
  EXPECT_NE(s.kernel.find("2 kernels accepted"), std::string::npos) << s.kernel;
  EXPECT_NE(s.kernel.find("claims only"), std::string::npos);
  EXPECT_NE(s.kernel.find("rope_kvcache"), std::string::npos);
  EXPECT_TRUE(sys::FileExists(fs::path(o.run_dir) / "kernel" / "package.json"));
}

TEST(KernelLaneTest, FailingBackendIsRecordedAndTheSessionGoesOn) {
  auto dir = sys::TempDir::Create("hone-kernellane");
  ASSERT_TRUE(dir);
  KernelLaneOptions o;
  o.backend = {"sh", "-c", "echo no gpu here >&2; exit 4", "backend"};
  o.ops_path = (testing::SourceDir() / "data/kernel/ops.yaml").string();
  o.run_dir = ((*dir)->path() / "run").string();
  BackendKernelLane lane(o);
  testing::FakeClock clock;
  FakeExecutor exec;
  exec.clock = &clock;
  exec.run_dir = o.run_dir;
  ListProposer proposer({});
  SessionServices svc{.executor = &exec, .proposer = &proposer, .clock = &clock, .kernel = &lane};
  spec::SessionSpec spec;
  spec.target.model.path = "/m.gguf";
  Coordinator c(spec, svc, Coordinator::NewState(spec, o.run_dir, clock));
  ASSERT_OK_AND_ASSIGN(SessionState s, c.Run());
  EXPECT_EQ(s.phase, session::Phase::kDone);
  EXPECT_NE(s.kernel.find("kernel backend failed"), std::string::npos) << s.kernel;
}

}  // namespace
}  // namespace hone::session
