// The local executor with real /bin/sh children: capacity computed from the CPU pool,
// jobs pinned to disjoint CPUs (checked in /proc), queued jobs wait for CPUs and for
// their dependencies, time limits and cancellation stop a job's process group.
#include "fleet/local_executor.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "core/strings.h"
#include "sys/files.h"
#include "sys/machine.h"
#include "testing/fake_clock.h"
#include "testing/test_util.h"

namespace hone::fleet {
namespace {

using namespace std::chrono_literals;

class LocalExecutorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto d = sys::TempDir::Create("hone-fleet-local");
    ASSERT_TRUE(d);
    dir_ = std::move(*d);
  }
  std::string Path(const std::string& n) { return (dir_->path() / n).string(); }
  JobSpec Sh(const std::string& name, const std::string& script, int cpus = 1) {
    JobSpec j;
    j.name = name;
    j.argv = {"/bin/sh", "-c", script};
    j.log_path = Path(name + ".log");
    j.resources.cpus = cpus;
    return j;
  }
  // Polls until every id is finished (bounded).
  std::map<std::string, JobStatus> WaitAll(LocalExecutor& ex, const std::vector<std::string>& ids) {
    std::map<std::string, JobStatus> st;
    for (int i = 0; i < 500; ++i) {
      auto p = ex.Poll(ids);
      EXPECT_TRUE(p);
      st = *p;
      bool all = true;
      for (const auto& [id, s] : st) all = all && s.phase == JobPhase::kFinished;
      if (all) break;
      std::this_thread::sleep_for(20ms);
    }
    return st;
  }
  std::unique_ptr<sys::TempDir> dir_;
};

TEST_F(LocalExecutorTest, CapacityIsComputedFromTheCpuAndGpuPool) {
  LocalExecutor two({.cpus = {0, 1}, .gpus = 0});
  EXPECT_EQ(two.Capacity({.cpus = 2}), 1);
  EXPECT_EQ(two.Capacity({.cpus = 1}), 2);
  EXPECT_EQ(two.Capacity({.cpus = 4}), 1);  // more than the host: all of it, one at a time
  LocalExecutor big({.cpus = {0, 1, 2, 3, 4, 5, 6, 7}, .gpus = 2, .max_parallel = 3});
  EXPECT_EQ(big.Capacity({.cpus = 2}), 3);            // max_parallel
  EXPECT_EQ(big.Capacity({.cpus = 2, .gpus = 1}), 2); // two GPUs
  EXPECT_FALSE(big.CheckCanRun({{.cpus = 2, .gpus = 4}}));
  EXPECT_TRUE(big.CheckCanRun({{.cpus = 2, .gpus = 2}}));
}

TEST_F(LocalExecutorTest, JobsArePinnedToDisjointCpusAndWaitForTheirShare) {
  std::vector<int> host = sys::AvailableCpus();
  if (host.size() < 2) GTEST_SKIP() << "needs 2 CPUs";
  std::vector<int> pool = {host[0], host[1]};
  LocalExecutor ex({.cpus = pool});
  // Each job reports the CPUs it may run on, then waits for a file.
  auto job = [&](const std::string& n, int cpus) {
    return Sh(n, "grep Cpus_allowed_list /proc/self/status > " + Path(n + ".cpus") + "; echo $HONE_FLEET_CPUS > " +
                     Path(n + ".env") + "; while [ ! -f " + Path("go") + " ]; do sleep 0.02; done",
              cpus);
  };
  ASSERT_OK_AND_ASSIGN(auto ids, ex.Submit({{job("a", 1), job("b", 1), job("c", 2)}, {}}));
  ASSERT_EQ(ids.size(), 3u);
  ASSERT_OK_AND_ASSIGN(auto st, ex.Poll(ids));
  EXPECT_EQ(st[ids[0]].phase, JobPhase::kRunning);
  EXPECT_EQ(st[ids[1]].phase, JobPhase::kRunning);
  EXPECT_EQ(st[ids[2]].phase, JobPhase::kPending);  // no CPU free for it
  EXPECT_EQ(st[ids[2]].reason, "resources");
  EXPECT_EQ(ex.PinnedCpus(ids[0]), std::vector<int>{pool[0]});
  EXPECT_EQ(ex.PinnedCpus(ids[1]), std::vector<int>{pool[1]});
  for (const char* n : {"a", "b"}) {
    for (int i = 0; i < 500 && sys::ReadFile(Path(std::string(n) + ".env")).value_or("").empty(); ++i) {
      std::this_thread::sleep_for(10ms);  // .env is written after .cpus
    }
  }
  EXPECT_EQ(Trim(*sys::ReadFile(Path("a.cpus"))), "Cpus_allowed_list:\t" + std::to_string(pool[0]));
  EXPECT_EQ(Trim(*sys::ReadFile(Path("b.cpus"))), "Cpus_allowed_list:\t" + std::to_string(pool[1]));
  EXPECT_EQ(Trim(*sys::ReadFile(Path("a.env"))), std::to_string(pool[0]));
  ASSERT_OK(sys::WriteFileAtomic(Path("go"), "1"));
  auto done = WaitAll(ex, ids);
  for (const auto& id : ids) {
    EXPECT_EQ(done[id].phase, JobPhase::kFinished) << id;
    EXPECT_EQ(done[id].exit_code, 0) << id;
    EXPECT_EQ(done[id].state, "COMPLETED") << id;
  }
  // c ran on both CPUs once a and b had finished.
  EXPECT_EQ(Trim(*sys::ReadFile(Path("c.cpus"))),
            "Cpus_allowed_list:\t" + std::to_string(pool[0]) + "-" + std::to_string(pool[1]));
}

TEST_F(LocalExecutorTest, ABatchStartsAfterItsDependenciesFinish) {
  LocalExecutor ex({.cpus = {sys::AvailableCpus()[0]}, .max_parallel = 4});
  ASSERT_OK_AND_ASSIGN(auto first, ex.Submit({{Sh("a", "exit 3", 1)}, {}}));
  ASSERT_OK_AND_ASSIGN(auto second, ex.Submit({{Sh("b", "test -f " + Path("a.log") + " && echo ok > " + Path("b.out"))},
                                               first}));
  std::vector<std::string> ids = {first[0], second[0]};
  auto st = WaitAll(ex, ids);
  EXPECT_EQ(st[first[0]].exit_code, 3);
  EXPECT_EQ(st[first[0]].state, "FAILED");
  EXPECT_EQ(st[second[0]].exit_code, 0);  // afterany: it ran although a failed
  EXPECT_TRUE(sys::FileExists(Path("b.out")));
  // Ids another executor started are unknown here.
  ASSERT_OK_AND_ASSIGN(auto other, ex.Poll({"local-99"}));
  EXPECT_EQ(other["local-99"].phase, JobPhase::kUnknown);
}

TEST_F(LocalExecutorTest, ATimeLimitOrACancelStopsTheJobsProcessGroup) {
  testing::FakeClock clock;
  LocalExecutor ex({.cpus = {sys::AvailableCpus()[0]}, .max_parallel = 4, .stop_grace = 2000ms, .clock = &clock});
  JobSpec slow = Sh("slow", "sleep 60 & wait");
  slow.resources.time_limit_s = 100;
  ASSERT_OK_AND_ASSIGN(auto ids, ex.Submit({{slow, Sh("queued", "sleep 60")}, {}}));
  ASSERT_OK_AND_ASSIGN(auto st, ex.Poll(ids));
  EXPECT_EQ(st[ids[0]].phase, JobPhase::kRunning);
  EXPECT_EQ(st[ids[1]].phase, JobPhase::kPending);
  clock.AdvanceSeconds(101);
  ASSERT_OK_AND_ASSIGN(st, ex.Poll({ids[0]}));
  EXPECT_EQ(st[ids[0]].phase, JobPhase::kFinished);
  EXPECT_EQ(st[ids[0]].state, "TIMEOUT");
  // The freed CPU went to the queued job; cancel it while it runs.
  ASSERT_OK_AND_ASSIGN(st, ex.Poll({ids[1]}));
  EXPECT_EQ(st[ids[1]].phase, JobPhase::kRunning);
  ASSERT_OK(ex.Cancel({ids[1]}));
  ASSERT_OK_AND_ASSIGN(st, ex.Poll({ids[1]}));
  EXPECT_EQ(st[ids[1]].state, "CANCELLED");
  // A pending job cancelled never starts.
  ASSERT_OK_AND_ASSIGN(auto more, ex.Submit({{Sh("x", "sleep 60"), Sh("y", "touch " + Path("y.ran"))}, {}}));
  ASSERT_OK(ex.Cancel({more[1]}));
  ASSERT_OK(ex.Cancel({more[0]}));
  ASSERT_OK_AND_ASSIGN(st, ex.Poll(more));
  EXPECT_EQ(st[more[1]].state, "CANCELLED");
  EXPECT_FALSE(sys::FileExists(Path("y.ran")));
}

}  // namespace
}  // namespace hone::fleet
