// The Slurm executor against scripted scheduler tools (a sys::ProcessRunner): what it asks sbatch for (one
// array per resource shape, resources, requeue, dependencies, per-session logs),
// how it reads squeue, sacct and scontrol, and that it cancels by job id.
#include "fleet/slurm_executor.h"

#include <gtest/gtest.h>

#include <deque>

#include "core/strings.h"
#include "sys/files.h"
#include "testing/test_util.h"

namespace hone::fleet {
namespace {

// Records every command; answers from a queue of canned outputs per program.
class FakeSlurmTools final : public sys::ProcessRunner {
 public:
  Result<sys::CommandOutput> Run(const sys::ProcessSpec& spec, std::chrono::milliseconds) override {
    ran.push_back(Join(spec.argv, " "));
    auto& q = answers[spec.argv[0]];
    if (q.empty()) return sys::CommandOutput{{0, 0}, ""};
    sys::CommandOutput out = q.front();
    q.pop_front();
    return out;
  }
  void Answer(const std::string& program, int code, const std::string& output) {
    answers[program].push_back({{code, 0}, output});
  }
  std::vector<std::string> ran;
  std::map<std::string, std::deque<sys::CommandOutput>> answers;
};

class SlurmExecutorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto d = sys::TempDir::Create("hone-fleet-slurm");
    ASSERT_TRUE(d);
    dir_ = std::move(*d);
    opts_.spec.kind = "slurm";
    opts_.spec.partition = "hone";
    opts_.spec.account = "lab";
    opts_.spec.setup = {"module load llama"};
    opts_.script_dir = (dir_->path() / "slurm").string();
    opts_.log_dir = (dir_->path() / "logs").string();
    opts_.job_name = "hone-cpu";
  }
  JobSpec Job(const std::string& name, int cpus, int gpus = 0) {
    JobSpec j;
    j.name = name;
    j.argv = {"/opt/hone/bin/hone", "fleet", "job", "/shared/fleet", name};
    j.env = {{"HONE_DATA_DIR", "/opt/hone/share"}};
    j.cwd = "/shared";
    j.log_path = "/shared/fleet/logs/" + name + ".log";
    j.resources = {.cpus = cpus, .gpus = gpus, .mem_mb = 16384, .time_limit_s = 790};
    return j;
  }
  std::unique_ptr<sys::TempDir> dir_;
  SlurmOptions opts_;
  FakeSlurmTools runner_;
};

TEST_F(SlurmExecutorTest, ABatchIsOneJobArrayWithTheResourcesItNeeds) {
  SlurmExecutor ex(opts_, runner_);
  runner_.Answer("sbatch", 0, "4242\n");
  ASSERT_OK_AND_ASSIGN(auto ids, ex.Submit({{Job("a", 2), Job("b", 2), Job("c", 2)}, {"4100_0", "4100_1"}}));
  EXPECT_EQ(Join(ids, ","), "4242_0,4242_1,4242_2");
  ASSERT_EQ(runner_.ran.size(), 1u);
  std::string script_path = (dir_->path() / "slurm" / "batch-1.sh").string();
  EXPECT_EQ(runner_.ran[0], "sbatch --parsable " + script_path);
  ASSERT_OK_AND_ASSIGN(std::string script, sys::ReadFile(script_path));
  for (const char* line : {"#SBATCH --job-name=hone-cpu\n", "#SBATCH --cpus-per-task=2\n", "#SBATCH --time=14\n",
                           "#SBATCH --mem=16384M\n", "#SBATCH --partition=hone\n", "#SBATCH --account=lab\n",
                           "#SBATCH --requeue\n", "#SBATCH --open-mode=append\n", "#SBATCH --array=0-2\n",
                           "#SBATCH --dependency=afterany:4100_0:4100_1\n", "#SBATCH --chdir=/shared\n",
                           "module load llama\n", "  1)  # b\n", "    export HONE_DATA_DIR='/opt/hone/share'\n",
                           "    exec '/opt/hone/bin/hone' 'fleet' 'job' '/shared/fleet' 'b' >>"
                           "'/shared/fleet/logs/b.log' 2>&1 ;;\n"}) {
    EXPECT_TRUE(Contains(script, line)) << "missing: " << line << "\n" << script;
  }
  EXPECT_TRUE(Contains(script, "slurm-%A_%a.out")) << script;
  EXPECT_FALSE(Contains(script, "--gres")) << script;
}

TEST_F(SlurmExecutorTest, JobsWithAnotherShapeGoOutAsAnotherArrayAndGpusAreRequested) {
  opts_.spec.gpu_request = "--gpus={n}";
  SlurmExecutor ex(opts_, runner_);
  runner_.Answer("sbatch", 0, "500;cluster\n");
  runner_.Answer("sbatch", 0, "501\n");
  ASSERT_OK_AND_ASSIGN(auto ids, ex.Submit({{Job("a", 8, 1), Job("b", 2), Job("c", 8, 1)}, {}}));
  EXPECT_EQ(Join(ids, ","), "500_0,501,500_1");
  ASSERT_OK_AND_ASSIGN(std::string gpu_script, sys::ReadFile((dir_->path() / "slurm" / "batch-1.sh").string()));
  EXPECT_TRUE(Contains(gpu_script, "#SBATCH --gpus=1\n")) << gpu_script;
  EXPECT_TRUE(Contains(gpu_script, "#SBATCH --array=0-1\n")) << gpu_script;
  EXPECT_FALSE(Contains(gpu_script, "--dependency")) << gpu_script;
  ASSERT_OK_AND_ASSIGN(std::string cpu_script, sys::ReadFile((dir_->path() / "slurm" / "batch-2.sh").string()));
  EXPECT_FALSE(Contains(cpu_script, "--array")) << cpu_script;  // one job: no array
  EXPECT_TRUE(Contains(cpu_script, "slurm-%j.out")) << cpu_script;
}

TEST_F(SlurmExecutorTest, ARefusedSubmissionSaysWhy) {
  SlurmExecutor ex(opts_, runner_);
  runner_.Answer("sbatch", 1, "sbatch: error: Batch job submission failed: Requested node configuration is not available\n");
  auto ids = ex.Submit({{Job("a", 64)}, {}});
  ASSERT_FALSE(ids);
  EXPECT_TRUE(Contains(ids.error().message, "Requested node configuration is not available")) << ids.error().message;
}

TEST_F(SlurmExecutorTest, StatusComesFromSqueueThenSacctOrScontrol) {
  SlurmExecutor ex(opts_, runner_);
  runner_.Answer("squeue", 0, "4242_0|RUNNING|None|node7\n4242_1|PENDING|BeginTime|\n4242_2|PENDING|Dependency|\n");
  runner_.Answer("sacct", 1, "Slurm accounting storage is disabled\n");
  runner_.Answer("scontrol", 0,
                 "JobId=4250 ArrayJobId=4241 ArrayTaskId=3 JobName=hone-cpu\n   JobState=NODE_FAIL Reason=NodeDown "
                 "Dependency=(null)\n   Requeue=1 Restarts=0 BatchFlag=1 Reboot=0 ExitCode=0:9\n   NodeList=node3\n");
  runner_.Answer("scontrol", 1, "slurm_load_jobs error: Invalid job id specified\n");
  ASSERT_OK_AND_ASSIGN(auto st, ex.Poll({"4242_0", "4242_1", "4241_3", "4000"}));
  EXPECT_EQ(st["4242_0"].phase, JobPhase::kRunning);
  EXPECT_EQ(st["4242_0"].node, "node7");
  EXPECT_EQ(st["4242_1"].phase, JobPhase::kPending);  // e.g. requeued after a node failure
  EXPECT_EQ(st["4242_1"].reason, "BeginTime");
  EXPECT_EQ(st["4241_3"].phase, JobPhase::kFinished);
  EXPECT_EQ(st["4241_3"].state, "NODE_FAIL");
  EXPECT_EQ(st["4241_3"].exit_code, 128 + 9);
  EXPECT_EQ(st["4241_3"].node, "node3");
  EXPECT_EQ(st["4000"].phase, JobPhase::kUnknown);
  // Accounting is off on this cluster: sacct is not asked again.
  runner_.ran.clear();
  runner_.Answer("squeue", 0, "");
  runner_.Answer("scontrol", 0, "JobId=4000 JobState=COMPLETED Reason=None ExitCode=0:0 NodeList=node1\n");
  ASSERT_OK_AND_ASSIGN(st, ex.Poll({"4000"}));
  EXPECT_EQ(st["4000"].state, "COMPLETED");
  EXPECT_EQ(st["4000"].exit_code, 0);
  EXPECT_EQ(Join(runner_.ran, "\n"), "squeue --me -h -r -o %i|%T|%r|%N\nscontrol show job 4000");
}

TEST_F(SlurmExecutorTest, SacctAnswersWhenTheClusterHasAccounting) {
  SlurmExecutor ex(opts_, runner_);
  runner_.Answer("squeue", 0, "");
  runner_.Answer("sacct", 0, "77_0|COMPLETED|0:0|n1\n77_1|CANCELLED by 0|0:15|n2\n");
  ASSERT_OK_AND_ASSIGN(auto st, ex.Poll({"77_0", "77_1"}));
  EXPECT_EQ(st["77_0"].state, "COMPLETED");
  EXPECT_EQ(st["77_0"].exit_code, 0);
  EXPECT_EQ(st["77_1"].state, "CANCELLED");
  EXPECT_EQ(st["77_1"].exit_code, 128 + 15);
  EXPECT_EQ(runner_.ran[1], "sacct -n -P -X -j 77_0,77_1 -o JobID,State,ExitCode,NodeList");
}

TEST_F(SlurmExecutorTest, CancelIsScancelByJobIdAndAQuietControllerIsAnError) {
  SlurmExecutor ex(opts_, runner_);
  ASSERT_OK(ex.Cancel({"4242_1", "4242_2"}));
  EXPECT_EQ(runner_.ran.back(), "scancel 4242_1 4242_2");
  runner_.Answer("squeue", 1, "slurm_load_jobs error: Unable to contact slurm controller (connect failure)\n");
  auto can = ex.CheckCanRun({});
  ASSERT_FALSE(can);
  EXPECT_TRUE(Contains(can.error().message, "Unable to contact slurm controller")) << can.error().message;
}

TEST(SlurmParseTest, StatesMapToPhases) {
  EXPECT_EQ(SlurmPhase("PENDING"), JobPhase::kPending);
  EXPECT_EQ(SlurmPhase("REQUEUED"), JobPhase::kPending);
  EXPECT_EQ(SlurmPhase("COMPLETING"), JobPhase::kRunning);
  EXPECT_EQ(SlurmPhase("TIMEOUT"), JobPhase::kFinished);
  EXPECT_EQ(SlurmPhase("OUT_OF_MEMORY"), JobPhase::kFinished);
  EXPECT_EQ(SlurmPhase(""), JobPhase::kUnknown);
  EXPECT_FALSE(ParseScontrolJob("slurm_load_jobs error: Invalid job id specified"));
  auto s = ParseSqueue("  12_3|RUNNING|None|n1\ngarbage\n");
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s["12_3"].state, "RUNNING");
}

}  // namespace
}  // namespace hone::fleet
