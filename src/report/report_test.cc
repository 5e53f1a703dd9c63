#include "report/report.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "session/coordinator.h"
#include "testing/fake_executor.h"
#include "sys/files.h"
#include "testing/fake_clock.h"
#include "testing/test_util.h"

namespace hone::report {
namespace {

class ReportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto d = sys::TempDir::Create("hone-report");
    ASSERT_TRUE(d);
    dir_ = std::move(*d);
    spec_.name = "r";
    spec_.target.model.path = "/m.gguf";
    spec_.workload.sweep_concurrency = {1, 4};
    exec_.clock = &clock_;
    exec_.run_dir = dir_->path().string();
    exec_.factors = {{"weights=q8_0", 1.5}, {"threads=1", 0.5}};
    exec_.crashes = {{"ubatch=9999", "bad_flag"}};
    exec_.inaccurate = {"weights=q4_0"};
    session::ListProposer p({"threads=1", "ubatch=9999", "weights=q4_0", "weights=q8_0"});
    session::SessionServices svc;
    svc.executor = &exec_;
    svc.proposer = &p;
    svc.clock = &clock_;
    svc.risky = [](const Config& delta) { return delta.Has("weights"); };
    session::Coordinator c(spec_, svc, session::Coordinator::NewState(spec_, dir_->path().string(), clock_));
    auto s = c.Run();
    ASSERT_TRUE(s);
    state_ = *s;
    in_.state = &state_;
    in_.spec = &spec_;
    in_.trials = LoadTrials(dir_->path().string());
    in_.best_command = "llama-server --model /m-q8_0.gguf";
    in_.hardware = "test-cpu";
    in_.model = "synth:small";
  }
  testing::FakeClock clock_;
  session::FakeExecutor exec_;
  spec::SessionSpec spec_;
  session::SessionState state_;
  ReportInput in_;
  std::unique_ptr<sys::TempDir> dir_;
};

TEST_F(ReportTest, MarkdownCarriesTheOutcomeStagesAndEvidence) {
  std::string md = RenderMarkdown(in_);
  EXPECT_TRUE(md.find("**Validated gain: +49.") != std::string::npos || md.find("**Validated gain: +50.") != std::string::npos) << md.substr(0, 2000);
  EXPECT_NE(md.find("| framework (cycle 1) | +"), std::string::npos);
  EXPECT_NE(md.find("validated end to end (close)"), std::string::npos);
  EXPECT_NE(md.find("llama-server --model /m-q8_0.gguf"), std::string::npos);
  EXPECT_NE(md.find("**SCREENED_OUT**"), std::string::npos);
  EXPECT_NE(md.find("**LAUNCH_FAILED**"), std::string::npos);
  EXPECT_NE(md.find("**ACCURACY_FAILED**"), std::string::npos);
  EXPECT_NE(md.find("bad_flag"), std::string::npos);
  // Every trial is listed with its id.
  for (const auto& t : in_.trials) EXPECT_NE(md.find("| " + t.id + " |"), std::string::npos) << t.id;
  EXPECT_EQ(in_.trials.size(), static_cast<size_t>(state_.trials_run));
  ASSERT_FALSE(state_.sweep.empty());
  EXPECT_NE(md.find("## Sweep"), std::string::npos);
}

// The validated gain names the pairs that ran: the close validation is sequential and
// may run more than min_pairs (it used to print min_pairs whatever ran).
TEST_F(ReportTest, TheValidatedGainCountsThePairsThatRan) {
  ASSERT_TRUE(state_.validated);
  state_.validation_trials.clear();
  for (int i = 0; i < 12; ++i) state_.validation_trials.push_back("t9" + std::to_string(100 + i));
  std::string md = RenderMarkdown(in_);
  EXPECT_NE(md.find(", 6 interleaved pairs)."), std::string::npos) << md.substr(0, 1500);
}

TEST_F(ReportTest, HtmlIsSelfContainedWithPlots) {
  std::string html = RenderHtml(in_);
  EXPECT_NE(html.find("<svg"), std::string::npos);
  EXPECT_NE(html.find("aria-label='objective over trials'"), std::string::npos);
  EXPECT_NE(html.find("aria-label='throughput vs interactivity'"), std::string::npos);
  EXPECT_EQ(html.find("http://"), html.find("http://www.w3.org/2000/svg"));  // no external asset
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_NE(html.find("<table>"), std::string::npos);
}

TEST_F(ReportTest, SummaryJsonAndFiles) {
  ASSERT_OK(WriteReports(in_, dir_->path().string()));
  auto text = sys::ReadFile(dir_->path() / "summary.json");
  ASSERT_OK(text);
  auto j = nlohmann::json::parse(*text);
  EXPECT_EQ(j["schema"], "hone-summary/1");
  EXPECT_EQ(j["best"]["config"]["weights"], "q8_0");
  EXPECT_NEAR(j["validated"]["gain"].get<double>(), 0.5, 0.05);
  EXPECT_EQ(j["validated"]["trials"].size(), 6u);
  EXPECT_TRUE(sys::FileExists(dir_->path() / "report.md"));
  EXPECT_TRUE(sys::FileExists(dir_->path() / "report.html"));
  auto stages = BuildStages(in_);
  ASSERT_GE(stages.size(), 3u);
  EXPECT_EQ(stages.front().name, "baseline (stock)");
  EXPECT_EQ(stages.back().name, "validated end to end (close)");
}

}  // namespace
}  // namespace hone::report
