// The fleet driver against a fake executor: waves are submitted with their
// dependencies, a session is done exactly when its run directory says it closed, a
// failed attempt is retried once (the job resumes) and then recorded with its
// reason, an unknown local job is resumed without spending the retry, and a cancel
// file or an interrupt stops the fleet.
#include "fleet/driver.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "core/strings.h"
#include "kb/rules.h"
#include "sys/files.h"
#include "testing/fake_clock.h"
#include "testing/test_util.h"

namespace hone::fleet {
namespace {

namespace fs = std::filesystem;

class FakeExecutor final : public Executor {
 public:
  explicit FakeExecutor(std::string kind = "slurm") : kind_(std::move(kind)) {}
  std::string_view kind() const override { return kind_; }
  std::string Describe() const override { return "fake"; }
  Status CheckCanRun(const std::vector<JobResources>&) override { return Ok(); }
  Result<std::vector<std::string>> Submit(const JobBatch& batch) override {
    batches.push_back(batch);
    std::vector<std::string> ids;
    for (const JobSpec& j : batch.jobs) {
      ids.push_back("f" + std::to_string(next_++));
      names[ids.back()] = j.name;
      status[ids.back()] = {JobPhase::kPending, -1, "PENDING", "queued", ""};
    }
    return ids;
  }
  Result<std::map<std::string, JobStatus>> Poll(const std::vector<std::string>& ids) override {
    ++polls;
    if (on_poll) on_poll(*this);
    std::map<std::string, JobStatus> out;
    for (const std::string& id : ids) {
      auto it = status.find(id);
      out[id] = it != status.end() ? it->second : JobStatus{JobPhase::kUnknown, -1, "UNKNOWN", "", ""};
    }
    return out;
  }
  Status Cancel(const std::vector<std::string>& ids) override {
    cancelled.insert(cancelled.end(), ids.begin(), ids.end());
    return Ok();
  }
  // The latest id submitted for a session.
  std::string IdOf(const std::string& session) const {
    std::string id;
    for (const auto& [i, n] : names) {
      if (n == session && (id.empty() || std::stoi(i.substr(1)) > std::stoi(id.substr(1)))) id = i;
    }
    return id;
  }

  std::vector<JobBatch> batches;
  std::map<std::string, std::string> names;
  std::map<std::string, JobStatus> status;
  std::vector<std::string> cancelled;
  std::function<void(FakeExecutor&)> on_poll;
  int polls = 0;

 private:
  std::string kind_;
  int next_ = 1;
};

constexpr const char* kFleet = R"(name: t
retries: 1
workloads:
  - model: {preset: tiny}
    precision: [f16, q8_0]
  - model: {preset: tiny}
    precision: f16
    workload: {name: agentic, kind: agentic, concurrency: 4}
)";

class DriverTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto d = sys::TempDir::Create("hone-fleet-driver");
    ASSERT_TRUE(d);
    tmp_ = std::move(*d);
    dir_ = (tmp_->path() / "fleet").string();
    auto spec = ParseFleetSpec(kFleet, "fleet.yaml", {"total_tps_per_gpu"});
    ASSERT_TRUE(spec) << spec.error().ToString();
    spec_ = *spec;
    auto rules = kb::LoadKbRules(::hone::testing::SourceDir().string());
    ASSERT_TRUE(rules);
    plan_ = PlanFleet(spec_.sessions, rules->fallback);
    ASSERT_OK(PrepareFleetDir(spec_, plan_, kFleet, dir_, "fake executor"));
  }
  DriverOptions Options() {
    DriverOptions o;
    o.fleet_dir = dir_;
    o.hone_binary = "/usr/bin/hone";
    o.cache_dir = "/cache";
    o.data_dir = "/data";
    o.cwd = "/work";
    o.poll_s = 1;
    o.clock = &clock_;
    o.log = [this](const std::string& l) { log_ += l + "\n"; };
    o.interrupted = [this] { return interrupted_; };
    return o;
  }
  // What a session that closed leaves in its run directory.
  void Closed(const std::string& session) {
    std::string run = RunDir(dir_, session);
    ASSERT_OK(sys::EnsureDir(run));
    ASSERT_OK(sys::WriteFileAtomic(run + "/state.json", R"({"phase": "done", "trials_run": 12, "stop_reason": "budget"})"));
  }
  void Started(const std::string& session) {
    std::string run = RunDir(dir_, session);
    ASSERT_OK(sys::EnsureDir(run));
    ASSERT_OK(sys::WriteFileAtomic(run + "/state.json", R"({"phase": "framework", "trials_run": 5})"));
  }
  JobStatus Finished(int code) { return {JobPhase::kFinished, code, code == 0 ? "COMPLETED" : "FAILED", "", "n1"}; }

  std::unique_ptr<sys::TempDir> tmp_;
  std::string dir_;
  FleetSpec spec_;
  FleetPlan plan_;
  testing::FakeClock clock_;
  std::string log_;
  bool interrupted_ = false;
};

TEST_F(DriverTest, PrepareLaysOutTheFleetDirectoryInRunOrder) {
  for (const char* f : {"fleet.yaml", "fleet.json", "specs/tiny-f16-fixed.yaml", "specs/tiny-q8_0-fixed.yaml",
                        "specs/tiny-f16-agentic.yaml"}) {
    EXPECT_TRUE(fs::exists(fs::path(dir_) / f)) << f;
  }
  EXPECT_TRUE(fs::is_directory(fs::path(dir_) / "runs"));
  ASSERT_OK_AND_ASSIGN(FleetState st, ReadFleetState(dir_));
  ASSERT_EQ(st.sessions.size(), 3u);
  EXPECT_EQ(st.sessions[0].name, "tiny-f16-fixed");
  EXPECT_EQ(st.sessions[0].wave, 0);
  EXPECT_EQ(st.sessions[1].name, "tiny-f16-agentic");  // another family: also cold, wave 0
  EXPECT_EQ(st.sessions[1].wave, 0);
  EXPECT_EQ(st.sessions[2].name, "tiny-q8_0-fixed");
  EXPECT_EQ(st.sessions[2].wave, 1);
  EXPECT_EQ(st.sessions[2].parent, "tiny-f16-fixed");
  EXPECT_EQ(st.sessions[2].status, "planned");
  EXPECT_FALSE(PrepareFleetDir(spec_, plan_, kFleet, dir_, "again"));  // one fleet per directory
}

TEST_F(DriverTest, WavesGoOutWithTheirDependenciesAndClosedSessionsAreDone) {
  FakeExecutor ex;
  ex.on_poll = [&](FakeExecutor& e) {
    // Every queued job runs, then closes its session, one poll each.
    for (auto& [id, st] : e.status) {
      if (st.phase == JobPhase::kPending) {
        st = {JobPhase::kRunning, -1, "RUNNING", "", "n1"};
      } else if (st.phase == JobPhase::kRunning) {
        Closed(e.names[id]);
        st = Finished(0);
      }
    }
  };
  FleetDriver driver(Options(), ex);
  ASSERT_OK_AND_ASSIGN(FleetState st, driver.Run());
  ASSERT_EQ(ex.batches.size(), 2u);
  EXPECT_EQ(ex.batches[0].jobs.size(), 2u);  // wave 0: both families' roots
  EXPECT_TRUE(ex.batches[0].after.empty());
  ASSERT_EQ(ex.batches[1].jobs.size(), 1u);
  EXPECT_EQ(ex.batches[1].jobs[0].name, "tiny-q8_0-fixed");
  EXPECT_EQ(Join(ex.batches[1].after, ","), "f1,f2");  // afterany wave 0
  const JobSpec& j = ex.batches[1].jobs[0];
  EXPECT_EQ(Join(j.argv, " "), "/usr/bin/hone --cache-dir /cache fleet job " + dir_ + " tiny-q8_0-fixed");
  EXPECT_EQ(j.env.at("HONE_DATA_DIR"), "/data");
  EXPECT_EQ(j.cwd, "/work");
  EXPECT_EQ(j.log_path, dir_ + "/logs/tiny-q8_0-fixed.log");
  for (const SessionEntry& s : st.sessions) {
    EXPECT_EQ(s.status, "done") << s.name;
    EXPECT_EQ(s.reason, "budget") << s.name;
    EXPECT_EQ(s.job_ids.size(), 1u) << s.name;
  }
  EXPECT_GT(st.finished_unix_us, 0);
  ASSERT_OK_AND_ASSIGN(FleetState saved, ReadFleetState(dir_));
  EXPECT_EQ(saved.sessions[0].status, "done");
  EXPECT_TRUE(Contains(log_, "tiny-f16-fixed: running on n1")) << log_;
}

TEST_F(DriverTest, AFailedAttemptIsRetriedOnceThenRecordedWithItsReason) {
  FakeExecutor ex;
  int failures = 0;
  std::map<std::string, int> attempts;
  ex.on_poll = [&](FakeExecutor& e) {
    for (auto& [id, st] : e.status) {
      if (st.phase != JobPhase::kPending) continue;
      const std::string& name = e.names[id];
      ++attempts[name];
      if (name == "tiny-f16-fixed") {
        // Crashes every time, after its session had started.
        Started(name);
        // The job's own line comes last, after the session's error.
        ASSERT_OK(sys::WriteFileAtomic(LogPath(dir_, name), "hone: error: llama-server crashed\n"
                                                             "hone fleet job: tiny-f16-fixed attempt 1 ended: exit 1\n"));
        st = Finished(1);
        ++failures;
      } else if (name == "tiny-f16-agentic" && attempts[name] == 1) {
        st = Finished(137);  // killed on its first attempt, closes on its second
      } else {
        Closed(name);
        st = Finished(0);
      }
    }
  };
  FleetDriver driver(Options(), ex);
  ASSERT_OK_AND_ASSIGN(FleetState st, driver.Run());
  EXPECT_EQ(failures, 2);  // the first attempt and one retry
  std::map<std::string, SessionEntry> by;
  for (const SessionEntry& s : st.sessions) by[s.name] = s;
  EXPECT_EQ(by["tiny-f16-fixed"].status, "failed");
  EXPECT_EQ(by["tiny-f16-fixed"].job_ids.size(), 2u);
  const std::string& why = by["tiny-f16-fixed"].reason;
  EXPECT_TRUE(Contains(why, "FAILED, exit 1")) << why;
  EXPECT_TRUE(Contains(why, "session in framework after 5 trials")) << why;
  EXPECT_TRUE(Contains(why, "log: hone: error: llama-server crashed")) << why;
  EXPECT_EQ(by["tiny-f16-agentic"].status, "done");
  EXPECT_EQ(by["tiny-f16-agentic"].job_ids.size(), 2u);  // resumed once
  EXPECT_EQ(by["tiny-q8_0-fixed"].status, "done");
  EXPECT_TRUE(Contains(log_, "retry 1 of 1 after: FAILED, exit 137")) << log_;
}

TEST_F(DriverTest, ALocalJobUnknownToANewDriverIsResumedWithoutSpendingItsRetry) {
  // An earlier driver submitted everything and then died (its children with it).
  ASSERT_OK_AND_ASSIGN(FleetState before, ReadFleetState(dir_));
  for (SessionEntry& s : before.sessions) {
    s.status = s.wave == 0 ? "running" : "queued";
    s.job_ids = {"local-" + s.name};
  }
  ASSERT_OK(WriteFleetState(dir_, before));
  FakeExecutor ex("local");
  ex.on_poll = [&](FakeExecutor& e) {
    for (auto& [id, st] : e.status) {
      if (st.phase == JobPhase::kPending) {
        Closed(e.names[id]);
        st = Finished(0);
      }
    }
  };
  FleetDriver driver(Options(), ex);
  ASSERT_OK_AND_ASSIGN(FleetState st, driver.Run());
  for (const SessionEntry& s : st.sessions) {
    EXPECT_EQ(s.status, "done") << s.name;
    EXPECT_EQ(s.job_ids.size(), 2u) << s.name;  // the old id and the resumed one
  }
  EXPECT_TRUE(Contains(log_, "resumed (its driver had stopped)")) << log_;
}

TEST_F(DriverTest, ACancelFileCancelsEveryJobAndAnInterruptLeavesSlurmJobsRunning) {
  {
    FakeExecutor ex;
    ex.on_poll = [&](FakeExecutor&) {
      if (ex.polls == 2) ASSERT_OK(sys::WriteFileAtomic(fs::path(dir_) / "cancel", "x"));
    };
    FleetDriver driver(Options(), ex);
    ASSERT_OK_AND_ASSIGN(FleetState st, driver.Run());
    EXPECT_TRUE(st.cancelled);
    EXPECT_EQ(ex.cancelled.size(), 3u);
    for (const SessionEntry& s : st.sessions) EXPECT_EQ(s.status, "cancelled") << s.name;
  }
  fs::remove(fs::path(dir_) / "cancel");
  ASSERT_OK_AND_ASSIGN(FleetState reset, ReadFleetState(dir_));
  reset.cancelled = false;
  reset.finished_unix_us = 0;
  for (SessionEntry& s : reset.sessions) {
    s.status = "planned";
    s.job_ids.clear();
  }
  ASSERT_OK(WriteFleetState(dir_, reset));
  FakeExecutor ex;
  ex.on_poll = [&](FakeExecutor&) { interrupted_ = true; };
  FleetDriver driver(Options(), ex);
  ASSERT_OK_AND_ASSIGN(FleetState st, driver.Run());
  EXPECT_TRUE(ex.cancelled.empty());  // the cluster keeps them
  EXPECT_EQ(st.finished_unix_us, 0);
  for (const SessionEntry& s : st.sessions) EXPECT_EQ(s.status, "queued") << s.name;
  EXPECT_TRUE(Contains(log_, "the jobs keep running on the cluster")) << log_;
}

TEST_F(DriverTest, AnInterruptedLocalFleetStopsItsJobsAndResumesThem) {
  {
    FakeExecutor ex("local");
    ex.on_poll = [&](FakeExecutor&) { interrupted_ = true; };
    FleetDriver driver(Options(), ex);
    ASSERT_OK_AND_ASSIGN(FleetState st, driver.Run());
    EXPECT_EQ(ex.cancelled.size(), 3u);
    for (const SessionEntry& s : st.sessions) EXPECT_EQ(s.status, "interrupted") << s.name;
  }
  interrupted_ = false;
  FakeExecutor ex("local");
  ex.on_poll = [&](FakeExecutor& e) {
    for (auto& [id, st] : e.status) {
      if (st.phase == JobPhase::kPending) {
        Closed(e.names[id]);
        st = Finished(0);
      }
    }
  };
  FleetDriver driver(Options(), ex);
  ASSERT_OK_AND_ASSIGN(FleetState st, driver.Run());
  for (const SessionEntry& s : st.sessions) EXPECT_EQ(s.status, "done") << s.name;
}

}  // namespace
}  // namespace hone::fleet
