// Fast tests of the trial protocol's pieces that need no engine: the objective and
// SLO check, trial records on disk, and ServerTrialExecutor's failure paths and
// accuracy cache (its real-server paths are in measure_slow_test.cc).
#include "measure/trial.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>

#include "measure/model_store.h"
#include "measure/server_executor.h"
#include "core/strings.h"
#include "sys/files.h"
#include "target/llamacpp.h"
#include "testing/fake_clock.h"
#include "testing/fake_process_runner.h"
#include "testing/test_util.h"

namespace hone::measure {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

bench::BenchResult BenchWith(double total_tps, double ttft_p99_s) {
  bench::BenchResult r;
  r.total_tps = total_tps;
  r.per_gpu_total_tps = total_tps;
  r.ttft.n = 10;
  r.ttft.p99 = ttft_p99_s;
  r.intvty["p50"] = 25;
  return r;
}

TEST(EvaluateObjectiveTest, ReadsTheMetricAndChecksEverySlo) {
  spec::ObjectiveSpec o;
  o.metric = "total_tps";
  ObjectiveCheck c = EvaluateObjective(BenchWith(120, 0.2), o);
  EXPECT_TRUE(c.available);
  EXPECT_DOUBLE_EQ(c.value, 120);
  EXPECT_TRUE(c.slo_ok);
  EXPECT_TRUE(c.violations.empty());

  o.slos = {{"p99_ttft_ms", false, 150}, {"p50_intvty", true, 20}};
  c = EvaluateObjective(BenchWith(120, 0.2), o);  // p99 TTFT 200 ms > 150 ms
  EXPECT_FALSE(c.slo_ok);
  ASSERT_EQ(c.violations.size(), 1u);
  EXPECT_NE(c.violations[0].find("p99_ttft_ms = 200 violates"), std::string::npos) << c.violations[0];
  EXPECT_DOUBLE_EQ(c.value, 120);  // the objective is still reported

  c = EvaluateObjective(BenchWith(120, 0.1), o);
  EXPECT_TRUE(c.slo_ok);
}

TEST(EvaluateObjectiveTest, AMissingMetricIsUnavailableAndAMissingSloMetricAViolation) {
  spec::ObjectiveSpec o;
  o.metric = "goodput_rps";  // -1 in a result without an SLO spec: not measured
  ObjectiveCheck c = EvaluateObjective(BenchWith(120, 0.2), o);
  EXPECT_FALSE(c.available);
  o.metric = "total_tps";
  o.slos = {{"p99_itl_ms", false, 50}};  // no ITL samples in this result
  c = EvaluateObjective(BenchWith(120, 0.2), o);
  EXPECT_FALSE(c.slo_ok);
  ASSERT_EQ(c.violations.size(), 1u);
  EXPECT_NE(c.violations[0].find("p99_itl_ms unavailable"), std::string::npos) << c.violations[0];
}

TEST(TrialRecordTest, RolesHaveNamesAndOutcomesRoundTrip) {
  for (TrialRole r : {TrialRole::kWarmup, TrialRole::kBaseline, TrialRole::kAa, TrialRole::kScreen,
                      TrialRole::kIncumbent, TrialRole::kCandidate, TrialRole::kReplay, TrialRole::kEnablement,
                      TrialRole::kSweep, TrialRole::kValidate, TrialRole::kSurface}) {
    auto back = ParseTrialRole(TrialRoleName(r));
    ASSERT_TRUE(back) << TrialRoleName(r);
    EXPECT_EQ(*back, r);
  }
  EXPECT_FALSE(ParseTrialRole("judge"));

  auto d = sys::TempDir::Create("hone-trial");
  ASSERT_TRUE(d);
  TrialOutcome o;
  o.id = "t0007";
  o.role = TrialRole::kValidate;
  o.config = Config{{"threads", "2"}};
  o.point = {4, 128, 32};
  o.launched = true;
  o.valid = true;
  o.objective = 123.5;
  o.slo_ok = false;
  o.slo_violations = {"p99_ttft_ms = 900 violates p99_ttft_ms <= 500"};
  o.dir = ((*d)->path() / "t0007").string();
  ASSERT_OK(sys::EnsureDir(o.dir));
  ASSERT_OK(WriteTrialOutcome(o));
  auto text = sys::ReadFile(fs::path(o.dir) / "outcome.json");
  ASSERT_OK(text);
  EXPECT_EQ(json::parse(*text)["role"], "validate");  // the file keeps the word
  ASSERT_OK_AND_ASSIGN(TrialOutcome back, ReadTrialOutcome(o.dir));
  EXPECT_EQ(back.role, TrialRole::kValidate);
  EXPECT_EQ(back.config, o.config);
  EXPECT_EQ(back.point, o.point);
  EXPECT_DOUBLE_EQ(back.objective, 123.5);
  EXPECT_FALSE(back.slo_ok);
  EXPECT_EQ(back.slo_violations, o.slo_violations);
  // A role this hone does not know is a data error naming it.
  ASSERT_OK(sys::WriteFileAtomic(fs::path(o.dir) / "outcome.json",
                                 ReplaceAll(*text, "\"validate\"", "\"judge\"")));
  auto bad = ReadTrialOutcome(o.dir);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("judge"), std::string::npos) << bad.error().message;
}

// ServerTrialExecutor without an engine: its outcomes for what cannot run, its
// injected clock and its accuracy reference and cache on disk (a resumed session
// reuses them without starting a server).
class ServerExecutorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto d = sys::TempDir::Create("hone-exec");
    ASSERT_TRUE(d);
    dir_ = std::move(*d);
    auto a = target::LlamaCppAdapter::Create(testing::SourceDir().string(), "0.4.0");
    ASSERT_OK(a);
    adapter_ = std::move(*a);
    models_ = std::make_unique<ModelStore>((dir_->path() / "missing.gguf").string(), "",
                                           (dir_->path() / "variants").string());
    setup_.adapter = adapter_.get();
    setup_.server_binary = (dir_->path() / "no-such-llama-server").string();
    setup_.models = models_.get();
    setup_.run_dir = dir_->path().string();
    setup_.spec.accuracy.kld = false;
    setup_.clock = &clock_;
    setup_.runner = &runner_;
  }
  TrialRequest Request(const std::string& id, Config config) {
    return TrialRequest{id, TrialRole::kCandidate, std::move(config), {2, 64, 16}, ""};
  }

  testing::FakeClock clock_;
  testing::FakeProcessRunner runner_;
  std::unique_ptr<sys::TempDir> dir_;
  std::unique_ptr<target::LlamaCppAdapter> adapter_;
  std::unique_ptr<ModelStore> models_;
  ExecutorSetup setup_;
};

TEST_F(ServerExecutorTest, WhatCannotRunIsAnOutcomeWithItsTrialDirectory) {
  ServerTrialExecutor exec(setup_);
  // The server binary is not there: a classified launch failure, not an error.
  ASSERT_OK_AND_ASSIGN(TrialOutcome o, exec.Run(Request("t0001", Config{{"threads", "2"}})));
  EXPECT_FALSE(o.launched);
  EXPECT_FALSE(o.valid);
  EXPECT_EQ(o.failure_kind, "not_found");
  EXPECT_EQ(o.start_unix_us, clock_.WallMicros());  // the injected clock, not the host's
  for (const char* f : {"config.json", "outcome.json"}) EXPECT_TRUE(sys::FileExists(fs::path(o.dir) / f)) << f;
  ASSERT_OK_AND_ASSIGN(TrialOutcome back, ReadTrialOutcome(o.dir));
  EXPECT_EQ(back.failure_kind, "not_found");
  EXPECT_EQ(back.role, TrialRole::kCandidate);
  // Weights the model store cannot make: an artifact failure.
  ASSERT_OK_AND_ASSIGN(TrialOutcome w, exec.Run(Request("t0002", Config{{"weights", "q4_0"}})));
  EXPECT_FALSE(w.launched);
  EXPECT_EQ(w.failure_kind, "artifact");
}

TEST_F(ServerExecutorTest, AccuracyIsOffOrReusesItsReferenceAndCacheOnDisk) {
  {
    setup_.spec.accuracy.enabled = false;
    ServerTrialExecutor disabled(setup_);
    ASSERT_OK(disabled.PrepareAccuracy(Config{}));
    ASSERT_OK_AND_ASSIGN(AccuracyOutcome a, disabled.CheckAccuracy(Config{{"weights", "q4_0"}}, "c001"));
    EXPECT_TRUE(a.passed);
    EXPECT_FALSE(a.ran);
    setup_.spec.accuracy.enabled = true;
  }
  {
    // Enabled, but no reference prepared (it could not be made, or a resume never
    // loaded it): nothing is compared, and a change of the numerics is not passed.
    ServerTrialExecutor unprepared(setup_);
    ASSERT_OK_AND_ASSIGN(AccuracyOutcome q, unprepared.CheckAccuracy(Config{{"weights", "q4_0"}}, "c001"));
    EXPECT_FALSE(q.ran);
    EXPECT_FALSE(q.passed);
    EXPECT_EQ(q.detail.rfind("not checked: no accuracy reference", 0), 0u) << q.detail;
    ASSERT_OK_AND_ASSIGN(AccuracyOutcome p, unprepared.CheckAccuracy(Config{{"parallel", "4"}}, "c002"));
    EXPECT_FALSE(p.ran);
    EXPECT_TRUE(p.passed) << "the slots leave the numerics alone";
    EXPECT_NE(p.detail.find("leaves the numerics alone"), std::string::npos) << p.detail;
    ASSERT_OK_AND_ASSIGN(AccuracyOutcome b, unprepared.CheckAccuracy(Config{{"parallel", "4"}}, "c003", "/builds/p1/llama-server"));
    EXPECT_FALSE(b.passed) << "a patched build is new code";
  }
  // A resumed session: the reference probes and one config's result are on disk.
  fs::path acc = dir_->path() / "accuracy";
  ASSERT_OK(sys::EnsureDir(acc));
  json ref = {{"probes", json::array({{{"prompt", {1, 2, 3}}, {"reference", {4, 5, 6, 7}}}})}};
  ASSERT_OK(sys::WriteFileAtomic(acc / "reference.json", ref.dump()));
  Config q4{{"weights", "q4_0"}};
  json cached = {{"passed", false}, {"token_agreement", 0.5}, {"probes_compared", 4}, {"kld_mean", nullptr},
                 {"same_top", nullptr}, {"detail", "token agreement 50.0% (2/4, min 90%)"}};
  ASSERT_OK(sys::WriteFileAtomic(acc / (q4.Hash() + ".json"), cached.dump()));
  ServerTrialExecutor exec(setup_);
  ASSERT_OK(exec.PrepareAccuracy(Config{}));  // no server started: the binary does not even exist
  ASSERT_OK_AND_ASSIGN(AccuracyOutcome a, exec.CheckAccuracy(q4, "c002"));
  EXPECT_TRUE(a.ran);
  EXPECT_FALSE(a.passed);
  EXPECT_DOUBLE_EQ(a.token_agreement, 0.5);
  EXPECT_EQ(a.detail, "token agreement 50.0% (2/4, min 90%)");
  // A patched binary is another program: not served from that entry (here it fails
  // to resolve its model before any server could start).
  auto patched = exec.CheckAccuracy(q4, "c003", "/builds/p1/llama-server");
  EXPECT_FALSE(patched);
  EXPECT_TRUE(runner_.commands.empty());  // no llama-perplexity without a KLD check
}

}  // namespace
}  // namespace hone::measure
