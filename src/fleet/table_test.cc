// The fleet table from a fleet directory: each row's numbers come from its session's
// summary.json, state.json and job record; the median and the range count a session
// without a kept gain as 1.00x, and leave out one that closed before measuring its
// stock (unmeasured); Markdown, HTML and JSON say the same.
#include "fleet/table.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/strings.h"
#include "fleet/driver.h"
#include "sys/files.h"
#include "testing/test_util.h"

namespace hone::fleet {
namespace {

class TableTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto d = sys::TempDir::Create("hone-fleet-table");
    ASSERT_TRUE(d);
    tmp_ = std::move(*d);
    dir_ = tmp_->path().string();
    FleetState f;
    f.name = "cpu";
    f.executor = "slurm";
    f.executor_detail = "slurm: partition hone";
    f.kb = "postgresql://hone:***@127.0.0.1:5432/kb";
    f.plan = {"a (wave 0): cold, starts its family", "b (wave 1) after a: its recipe would match at 0.85"};
    for (const char* n : {"a", "b", "c", "d", "e"}) {
      SessionEntry e;
      e.name = n;
      e.engine = "llama.cpp";
      e.model = "tiny";
      e.precision = "q8_0";
      e.workload = "fixed";
      e.workload_detail = "c2 64/16";
      e.status = "done";
      e.job_ids = {"7_0"};
      f.sessions.push_back(e);
    }
    f.sessions[3].status = "failed";
    f.sessions[3].reason = "FAILED, exit 1; log: hone: error: <boom> | bad";
    f.sessions[4].status = "running";
    ASSERT_OK(WriteFleetState(dir_, f));
    // a: a kept gain of 12%, cold; b: warm from a's recipe, INCONCLUSIVE at close;
    // c: the stock configuration won (nothing to validate).
    Summary("a", R"("validated": {"gain": 0.12, "ci": [1.05, 1.19], "verdict": "KEEP", "best_value": 112,
                    "stock_value": 100, "accuracy": "pass: agreement 1.00"}, "candidates": [])",
            "no recipe to replay: miss");
    Summary("b", R"("validated": {"gain": 0.03, "ci": [0.98, 1.08], "verdict": "INCONCLUSIVE", "best_value": 103,
                    "stock_value": 100, "accuracy": "pass"}, "candidates": [{"phase": "prelude"}])",
            "recipe 1 replayed: KEEP, gain +9.0% vs recorded +12.0% (transferred)");
    Summary("c", R"("validated": null, "candidates": [])", "no recipe to replay: no replay (priors only)");
    State("e", R"({"phase": "framework", "trials_run": 7, "baseline_objective": 99})");
    ASSERT_OK(sys::EnsureDir(dir_ + "/jobs"));
    ASSERT_OK(WriteJobRecord(JobRecordPath(dir_, "a"),
                             {"a", {{1, "run", "n1", "7_0", 0, 1'000'000'000, 1'100'000'000, 130, ""},
                                    {2, "resume", "n1", "7_0", 1, 1'200'000'000, 1'260'000'000, 0, ""}}}));
  }
  void State(const std::string& s, const std::string& json) {
    ASSERT_OK(sys::EnsureDir(RunDir(dir_, s)));
    ASSERT_OK(sys::WriteFileAtomic(RunDir(dir_, s) + "/state.json", json));
  }
  void Summary(const std::string& s, const std::string& body, const std::string& warm) {
    State(s, R"({"phase": "done", "trials_run": 20, "warm_replay": ")" + warm + "\"}");
    ASSERT_OK(sys::WriteFileAtomic(
        RunDir(dir_, s) + "/summary.json",
        R"J({"schema": "hone-summary/1", "stop_reason": "budget", "objective": {"metric": "total_tps_per_gpu",
            "maximize": true}, "baseline": {"value": 100}, "trials_run": 21, "model": "hone-tiny-s42",
            "model_parameters": 4400000, "precision": "q8_0", "framework_version": "0.4.2 (b7000)",
            "warm_replay": ")J" + warm + R"J(", "kb_result": "", )J" + body + "}"));
  }
  std::unique_ptr<sys::TempDir> tmp_;
  std::string dir_;
};

TEST_F(TableTest, RowsAndTheMedianComeFromTheSessionsOwnFiles) {
  ASSERT_OK_AND_ASSIGN(FleetTable t, LoadFleetTable(dir_, 2'000'000'000));
  ASSERT_EQ(t.rows.size(), 5u);
  const FleetRow& a = t.rows[0];
  EXPECT_EQ(a.size, "4.4M");
  EXPECT_DOUBLE_EQ(a.outcome.ValidatedRatio(), 1.12);
  EXPECT_EQ(a.outcome.Start(), "cold");
  EXPECT_DOUBLE_EQ(a.wall_s, 160);  // 100 s + 60 s over two attempts
  EXPECT_EQ(a.attempts, 2);
  EXPECT_EQ(a.restarts, 1);
  EXPECT_DOUBLE_EQ(t.rows[1].outcome.ValidatedRatio(), 1.0);  // INCONCLUSIVE counts as no gain
  EXPECT_EQ(t.rows[1].outcome.Start(), "warm (recipe 1 replayed: KEEP, gain +9.0% vs recorded +12.0%)");
  EXPECT_EQ(t.rows[2].outcome.Start(), "warm (priors)");
  EXPECT_FALSE(t.rows[2].outcome.validated);
  EXPECT_EQ(t.rows[4].outcome.phase, "framework");
  EXPECT_EQ(t.summary.closed, 3);
  EXPECT_EQ(t.summary.failed, 1);
  EXPECT_EQ(t.summary.running, 1);
  EXPECT_EQ(t.summary.kept, 1);
  EXPECT_EQ(t.summary.warm, 2);
  EXPECT_DOUBLE_EQ(t.summary.median, 1.0);
  EXPECT_DOUBLE_EQ(t.summary.min, 1.0);
  EXPECT_DOUBLE_EQ(t.summary.max, 1.12);

  std::string md = RenderFleetMarkdown(t);
  EXPECT_TRUE(Contains(md, "Median validated gain: **1.00x** (range 1.00x to 1.12x) over 3 closed session(s) that "
                           "measured their baseline;"))
      << md;
  EXPECT_TRUE(Contains(md, "| 1 | a | fixed c2 64/16 | llama.cpp 0.4.2 | 4.4M | q8_0 | 100 | 112 | 1.12x [1.05, 1.19] "
                           "KEEP | pass: agreement 1.00 | 21 | 2m 40s (2 attempts) (requeued 1x) | cold |"))
      << md;
  EXPECT_TRUE(Contains(md, "| 3 | c |")) << md;
  EXPECT_TRUE(Contains(md, "1.00x (stock kept)")) << md;
  EXPECT_TRUE(Contains(md, "- d (failed): FAILED, exit 1; log: hone: error: <boom> | bad")) << md;
  EXPECT_TRUE(Contains(md, "running (framework)")) << md;
  EXPECT_TRUE(Contains(md, "- b (wave 1) after a: its recipe would match at 0.85")) << md;

  std::string html = RenderFleetHtml(t);
  EXPECT_TRUE(Contains(html, "&lt;boom&gt;")) << html;
  EXPECT_FALSE(Contains(html, "<boom>"));
  EXPECT_TRUE(Contains(html, "<a href=\"runs/a/report.html\">a</a>")) << html;

  auto j = nlohmann::json::parse(RenderFleetJson(t));
  EXPECT_EQ(j["schema"], "hone-fleet-report/1");
  EXPECT_DOUBLE_EQ(j["summary"]["median_validated_ratio"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(j["summary"]["max_validated_ratio"].get<double>(), 1.12);
  EXPECT_EQ(j["sessions"][0]["ci"][0].get<double>(), 1.05);
  EXPECT_EQ(j["sessions"][0]["attempts"], 2);
  EXPECT_TRUE(j["sessions"][3]["validated_ratio"].is_null());  // failed: not counted

  std::string status = RenderFleetStatus(t);
  EXPECT_TRUE(Contains(status, "fleet cpu (slurm, kb postgresql://hone:***@127.0.0.1:5432/kb): 3/5 closed, 1 failed"))
      << status;

  ASSERT_OK(WriteFleetReports(t, dir_));
  for (const char* f : {"fleet-report.md", "fleet-report.html", "fleet-report.json"}) {
    EXPECT_TRUE(sys::FileExists(dir_ + "/" + f)) << f;
  }
}

TEST_F(TableTest, ASessionThatClosedBeforeMeasuringItsStockIsUnmeasuredNotOneX) {
  // c closed on its budget before the stock was measured: no baseline, no gain either way.
  ASSERT_OK(sys::WriteFileAtomic(
      RunDir(dir_, "c") + "/summary.json",
      R"J({"schema": "hone-summary/1", "stop_reason": "budget exhausted before the baseline", "objective":
          {"metric": "total_tps_per_gpu", "maximize": true}, "trials_run": 0, "model": "hone-tiny-s42",
          "validated": null, "candidates": []})J"));
  ASSERT_OK_AND_ASSIGN(FleetTable t, LoadFleetTable(dir_, 2'000'000'000));
  EXPECT_EQ(t.summary.closed, 3);
  EXPECT_EQ(t.summary.unmeasured, 1);
  ASSERT_EQ(t.summary.ratios.size(), 2u);  // a and b only
  EXPECT_DOUBLE_EQ(t.summary.min, 1.0);
  EXPECT_DOUBLE_EQ(t.summary.max, 1.12);

  std::string md = RenderFleetMarkdown(t);
  EXPECT_TRUE(Contains(md, "over 2 closed session(s) that measured their baseline (1 more closed before measuring "
                           "it);"))
      << md;
  EXPECT_TRUE(Contains(md, "no baseline: budget exhausted before the baseline")) << md;
  auto j = nlohmann::json::parse(RenderFleetJson(t));
  EXPECT_EQ(j["summary"]["unmeasured"], 1);
  EXPECT_TRUE(j["sessions"][2]["validated_ratio"].is_null());
  EXPECT_TRUE(j["summary"]["median_validated_ratio"].is_number());
}

TEST_F(TableTest, NoMedianWhenNoClosedSessionMeasuredItsBaseline) {
  for (const char* n : {"a", "b", "c"}) {
    ASSERT_OK(sys::WriteFileAtomic(RunDir(dir_, n) + "/summary.json",
                                   R"J({"schema": "hone-summary/1", "stop_reason": "stock failed", "objective":
                                       {"metric": "total_tps_per_gpu", "maximize": true}, "validated": null})J"));
  }
  ASSERT_OK_AND_ASSIGN(FleetTable t, LoadFleetTable(dir_, 2'000'000'000));
  EXPECT_EQ(t.summary.closed, 3);
  EXPECT_EQ(t.summary.unmeasured, 3);
  std::string md = RenderFleetMarkdown(t);
  EXPECT_TRUE(Contains(md, "No closed session measured its stock baseline (3 closed before it).")) << md;
  EXPECT_FALSE(Contains(md, "Median validated gain")) << md;
  auto j = nlohmann::json::parse(RenderFleetJson(t));
  EXPECT_TRUE(j["summary"]["median_validated_ratio"].is_null());
}

TEST(HumanParametersTest, Sizes) {
  EXPECT_EQ(HumanParameters(4'400'000), "4.4M");
  EXPECT_EQ(HumanParameters(155'700'000), "156M");
  EXPECT_EQ(HumanParameters(8'030'000'000), "8.0B");
  EXPECT_EQ(HumanParameters(900'000), "900K");
}

}  // namespace
}  // namespace hone::fleet
