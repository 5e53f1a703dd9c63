// lab::MeasurePoint: what `hone search record` writes into a point for each outcome of
// its trial, and that a replay on the recorded point ends as a session's comparison does.
#include "lab/record.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "search/proposer.h"
#include "testing/fake_executor.h"

namespace hone::lab {
namespace {

class RecordTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = (std::filesystem::temp_directory_path() /
            ("hone-record-test-" + std::to_string(::getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name()))
               .string();
    std::filesystem::remove_all(dir_);
    exec_.run_dir = dir_;
    exec_.factors = {{"speed=fast", 1.2}};
    options_.concurrency = 4;
    options_.osl = 128;
    options_.next_id = [this] { return "s" + std::to_string(++ids_); };
    options_.on_fault = [this](const measure::TrialOutcome& o, bool again) {
      faults_.push_back(o.id + (again ? " again" : " final"));
    };
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  static search::SurfacePoint Point(const std::string& speed) {
    search::SurfacePoint p;
    p.config.Set("speed", speed);
    return p;
  }
  std::string dir_;
  session::FakeExecutor exec_;
  PointTrialOptions options_;
  int ids_ = 0;
  std::vector<std::string> faults_;
};

TEST_F(RecordTest, AValidTrialAddsASampleAndTheFirstTrialsMetrics) {
  search::SurfacePoint p = Point("fast");
  auto o = MeasurePoint(exec_, p, options_);
  ASSERT_TRUE(o) << o.error().ToString();
  ASSERT_EQ(p.samples.size(), 1u);
  EXPECT_NEAR(p.samples[0], 120, 3);
  EXPECT_FALSE(p.failed());
  EXPECT_EQ(p.trial_ids, std::vector<std::string>{"s1"});
  EXPECT_EQ(p.metrics.at("concurrency"), 4);
  EXPECT_EQ(p.metrics.at("osl"), 128);
  EXPECT_EQ(exec_.ran.at(0).role, measure::TrialRole::kSurface);
  // A repeat adds its sample and keeps the first metrics.
  ASSERT_TRUE(MeasurePoint(exec_, p, options_));
  EXPECT_EQ(p.samples.size(), 2u);
  EXPECT_EQ(p.trial_ids.size(), 2u);
  EXPECT_TRUE(faults_.empty());
}

TEST_F(RecordTest, ALaunchFailureOrAStalledServerFailsThePointWithTheSessionsKind) {
  exec_.crashes = {{"speed=huge", "out_of_memory"}};
  exec_.stalls = {"speed=stall"};
  search::SurfacePoint oom = Point("huge");
  ASSERT_TRUE(MeasurePoint(exec_, oom, options_));
  EXPECT_EQ(oom.failure_kind, "out_of_memory");
  EXPECT_FALSE(oom.no_valid_run());
  search::SurfacePoint stalled = Point("stall");
  ASSERT_TRUE(MeasurePoint(exec_, stalled, options_));
  EXPECT_EQ(stalled.failure_kind,
            std::string(search::kNoValidRunPrefix) + "no token arrived inside the measurement window");
  EXPECT_TRUE(stalled.no_valid_run());
  EXPECT_TRUE(stalled.samples.empty());
  EXPECT_EQ(exec_.ran.size(), 2u);  // neither is measured again
}

TEST_F(RecordTest, AFaultedTrialIsMeasuredOnceMoreAndASecondFaultIsRecordedAsAFault) {
  // The first trial of the point faults, its re-measurement does not: a sample.
  exec_.fault_if = [](const measure::TrialRequest& r) { return r.retry_of.empty(); };
  search::SurfacePoint once = Point("fast");
  auto o = MeasurePoint(exec_, once, options_);
  ASSERT_TRUE(o);
  ASSERT_EQ(exec_.ran.size(), 2u);
  EXPECT_EQ(exec_.ran[1].retry_of, "s1");
  EXPECT_EQ(once.samples.size(), 1u);
  EXPECT_NEAR(once.samples[0], 120, 3);  // not the faulted trial's bogus value
  EXPECT_FALSE(once.failed());
  EXPECT_EQ(once.trial_ids, std::vector<std::string>{"s2"});
  EXPECT_EQ(faults_, std::vector<std::string>{"s1 again"});

  // Both fault: failed, as a fault and not as a run without a valid measurement (a
  // session gives such a candidate no failure kind).
  exec_.fault_if = [](const measure::TrialRequest&) { return true; };
  search::SurfacePoint twice = Point("fast");
  ASSERT_TRUE(MeasurePoint(exec_, twice, options_));
  EXPECT_EQ(exec_.ran.size(), 4u);
  EXPECT_TRUE(twice.faulted()) << twice.failure_kind;
  EXPECT_FALSE(twice.no_valid_run());
  EXPECT_EQ(twice.failure_kind, "faulted: connection_reset x3");
  EXPECT_TRUE(twice.samples.empty());
  EXPECT_EQ(faults_.back(), "s4 final");
}

TEST_F(RecordTest, AnExecutorErrorIsAnErrorNotAnOutcome) {
  exec_.error_if = [](const measure::TrialRequest&) { return std::optional<Error>(Error{ErrorCode::kDataLoss, "disk full", {}}); };
  search::SurfacePoint p = Point("fast");
  auto o = MeasurePoint(exec_, p, options_);
  ASSERT_FALSE(o);
  EXPECT_FALSE(p.failed());
  EXPECT_TRUE(p.trial_ids.empty());
}

}  // namespace
}  // namespace hone::lab
