// Slow tests: ServerTrialExecutor on the real llama-server (provisioned) with a
// synthesized tiny model: a whole trial and its directory, a launch failure, and the
// accuracy gate (the stock against itself, and a weight precision that changes the
// outputs).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "measure/model_store.h"
#include "measure/server_executor.h"
#include "sys/clock.h"
#include "sys/files.h"
#include "sys/process.h"
#include "target/llamacpp.h"
#include "testing/llama_env.h"
#include "testing/test_util.h"

namespace hone::measure {
namespace {

namespace fs = std::filesystem;

class ServerExecutorSlowTest : public ::testing::Test {
 protected:
  void SetUp() override {
    HONE_REQUIRE_LLAMA();
    prov_ = testing::Llama();
    auto a = target::LlamaCppAdapter::Create(testing::SourceDir().string(), prov_->version);
    ASSERT_OK(a);
    adapter_ = std::move(*a);
    auto d = sys::TempDir::Create("hone-exec-slow");
    ASSERT_TRUE(d);
    dir_ = std::move(*d);
    std::string model = testing::SynthModel("tiny", "f16");
    ASSERT_FALSE(model.empty());
    models_ = std::make_unique<ModelStore>(model, prov_->quantize, (dir_->path() / "variants").string());
    setup_.adapter = adapter_.get();
    setup_.server_binary = prov_->server;
    setup_.perplexity_binary = prov_->perplexity;
    setup_.perplexity_text = (dir_->path() / "kld.txt").string();
    // Text for the probes and the KL check: varied words, as a README would be.
    std::string text;
    for (int i = 0; i < 60; ++i) {
      text += "The server reads request " + std::to_string(i * 7919 % 1000) +
              " from the queue, decodes its prompt and streams tokens back to the client. ";
    }
    ASSERT_OK(sys::WriteFileAtomic(setup_.perplexity_text, text));
    setup_.models = models_.get();
    setup_.run_dir = dir_->path().string();
    setup_.spec.workload.isl = 32;
    setup_.spec.workload.osl = 8;
    setup_.spec.workload.num_prompts = 4;
    setup_.spec.workload.warmups = 1;
    setup_.spec.objective.metric = "total_tps";
    setup_.spec.accuracy.probes = 4;
    setup_.spec.accuracy.probe_tokens = 8;
    setup_.spec.accuracy.min_token_agreement = 1.0;  // any changed token fails
    setup_.spec.accuracy.kld = true;
    setup_.clock = &sys::DefaultClock();
    setup_.runner = &sys::DefaultProcessRunner();
    auto profile = target::LlamaCppAdapter::Create(testing::SourceDir().string(), prov_->version);
    setup_.profile.framework = "llama.cpp";
    setup_.profile.exact_length_fields = (*profile)->ExactLengthFields();
    setup_.profile.metrics = (*profile)->metric_names();
  }

  const target::Provisioned* prov_ = nullptr;
  std::unique_ptr<target::LlamaCppAdapter> adapter_;
  std::unique_ptr<sys::TempDir> dir_;
  std::unique_ptr<ModelStore> models_;
  ExecutorSetup setup_;
};

TEST_F(ServerExecutorSlowTest, ATrialMeasuresAndLeavesItsWholeDirectory) {
  ServerTrialExecutor exec(setup_);
  TrialRequest req{"t0001", TrialRole::kBaseline, Config{{"threads", "2"}}, {2, 32, 8}, ""};
  ASSERT_OK_AND_ASSIGN(TrialOutcome o, exec.Run(req));
  ASSERT_TRUE(o.launched) << o.failure_kind << ": " << o.failure_detail;
  EXPECT_TRUE(o.valid) << (o.invalid_reasons.empty() ? "" : o.invalid_reasons[0]);
  EXPECT_GT(o.objective, 0);
  EXPECT_DOUBLE_EQ(o.objective, o.result.total_tps);
  EXPECT_TRUE(o.slo_ok);
  EXPECT_GT(o.wall_s, 0);
  EXPECT_NE(o.command.find("--threads 2"), std::string::npos) << o.command;
  for (const char* f : {"config.json", "command.txt", "server.log", "result.json", "records.jsonl", "outcome.json"}) {
    EXPECT_TRUE(sys::FileExists(fs::path(o.dir) / f)) << f;
  }
  ASSERT_OK_AND_ASSIGN(TrialOutcome back, ReadTrialOutcome(o.dir));
  EXPECT_EQ(back.role, TrialRole::kBaseline);
  EXPECT_DOUBLE_EQ(back.objective, o.objective);
  EXPECT_NEAR(back.result.total_tps, o.result.total_tps, 1e-6 * o.result.total_tps);  // result.json rounds
  // An SLO the run cannot meet is reported on the outcome (the verdict vetoes it).
  setup_.spec.objective.slos = {{"total_tps", true, 1e12}};
  ServerTrialExecutor strict(setup_);
  ASSERT_OK_AND_ASSIGN(TrialOutcome s, strict.Run({"t0002", TrialRole::kCandidate, Config{}, {2, 32, 8}, ""}));
  EXPECT_TRUE(s.valid);
  EXPECT_FALSE(s.slo_ok);
  ASSERT_EQ(s.slo_violations.size(), 1u);
}

TEST_F(ServerExecutorSlowTest, AServerThatDoesNotStartIsAClassifiedOutcome) {
  ServerTrialExecutor exec(setup_);
  // A build that exits at once (a patched binary gone wrong).
  ASSERT_OK_AND_ASSIGN(TrialOutcome o,
                       exec.Run({"t0001", TrialRole::kCandidate, Config{}, {2, 32, 8}, "/bin/false"}));
  EXPECT_FALSE(o.launched);
  EXPECT_FALSE(o.failure_kind.empty());
  EXPECT_TRUE(sys::FileExists(fs::path(o.dir) / "outcome.json"));
}

TEST_F(ServerExecutorSlowTest, TheAccuracyGatePassesTheStockAndFailsChangedOutputs) {
  ServerTrialExecutor exec(setup_);
  ASSERT_OK(exec.PrepareAccuracy(Config{}));
  EXPECT_TRUE(sys::FileExists(dir_->path() / "accuracy" / "reference.json"));
  EXPECT_TRUE(sys::FileExists(dir_->path() / "accuracy" / "reference.kld"));
  // The stock configuration against its own reference: greedy decoding agrees.
  ASSERT_OK_AND_ASSIGN(AccuracyOutcome same, exec.CheckAccuracy(Config{}, "stock"));
  EXPECT_TRUE(same.ran);
  EXPECT_TRUE(same.passed) << same.detail;
  EXPECT_DOUBLE_EQ(same.token_agreement, 1.0);
  EXPECT_EQ(same.probes_compared, 32);  // 4 probes x 8 teacher-forced positions, every one compared
  // The probes are windows of the text in the model's own tokens, and the A/A (the
  // stock on a restarted server) found the CPU engine deterministic.
  const AccuracyGateInfo gate = exec.AccuracyGate();
  EXPECT_TRUE(gate.prepared);
  EXPECT_NE(gate.probes.find("fixed text"), std::string::npos) << gate.probes;
  EXPECT_EQ(gate.positions, 32);
  EXPECT_TRUE(gate.aa_ran) << gate.note;
  EXPECT_EQ(gate.aa_positions, 32);
  EXPECT_DOUBLE_EQ(gate.aa_agreement, 1.0);
  EXPECT_FALSE(gate.nondeterministic) << gate.note;
  EXPECT_NE(gate.method.find("top-8 logprobs"), std::string::npos) << gate.method;
  // 4-bit weights of a random model change its greedy tokens, and the KL divergence
  // of its logits is measured (weights change numerics).
  ASSERT_OK_AND_ASSIGN(AccuracyOutcome q4, exec.CheckAccuracy(Config{{"weights", "q4_0"}}, "c001"));
  EXPECT_TRUE(q4.ran);
  EXPECT_FALSE(q4.passed) << q4.detail;
  EXPECT_LT(q4.token_agreement, 1.0);
  ASSERT_TRUE(q4.kld_mean.has_value()) << q4.detail;
  EXPECT_GT(*q4.kld_mean, 0);
  EXPECT_NE(q4.detail.find("KLD"), std::string::npos) << q4.detail;
  // Every position was compared, with a top-k KL estimate beside llama-perplexity's
  // KLD and its perplexity ratio.
  EXPECT_EQ(q4.probes_compared, 32);
  ASSERT_TRUE(q4.kl_estimate.has_value()) << q4.detail;
  EXPECT_GT(*q4.kl_estimate, 0);
  ASSERT_TRUE(q4.ppl_ratio.has_value()) << q4.detail;
  EXPECT_NE(q4.detail.find("PPL ratio"), std::string::npos) << q4.detail;
  std::printf("q4_0 accuracy: %s\n", q4.detail.c_str());
  // The result is kept on disk: a second executor (a resumed session) reuses it.
  ServerTrialExecutor resumed(setup_);
  ASSERT_OK(resumed.PrepareAccuracy(Config{}));
  ASSERT_OK_AND_ASSIGN(AccuracyOutcome again, resumed.CheckAccuracy(Config{{"weights", "q4_0"}}, "c001"));
  EXPECT_EQ(again.detail, q4.detail);
  EXPECT_EQ(again.passed, q4.passed);
}

// llama-perplexity's PPL(Q)/PPL(base) divides by a perplexity recomputed from the base
// file's 16-bit logits; on a random 8B model (128k vocabulary) the stock against its own
// base printed 1185. Here a wrapper multiplies the real tool's ratio by 1000, as such a
// bias would: the stock's own ratio is measured once and divided out, so 8-bit weights
// (PPL within a few percent of the stock's) still pass the PPL gate.
TEST_F(ServerExecutorSlowTest, TheBaseFilesOwnPerplexityBiasIsDividedOut) {
  const std::string wrapper = (dir_->path() / "biased-perplexity.sh").string();
  // The tool's output goes to a file first, and the wrapper keeps its exit status.
  ASSERT_OK(sys::WriteFileAtomic(
      wrapper, "#!/bin/bash\nout=$(mktemp)\n\"" + prov_->perplexity + "\" \"$@\" > \"$out\" 2>&1\nrc=$?\n"
               "awk '/Mean PPL\\(Q\\)\\/PPL\\(base\\)/ { split($0, a, \":\"); split(a[2], b, \" \"); "
               "printf \"Mean PPL(Q)/PPL(base)         : %f\\n\", b[1] * 1000; next } { print }' \"$out\"\n"
               "rm -f \"$out\"\nexit $rc\n"));
  fs::permissions(wrapper, fs::perms::owner_all);
  setup_.perplexity_binary = wrapper;
  setup_.spec.accuracy.min_token_agreement = 0.5;  // the PPL gate is the one under test
  setup_.spec.accuracy.max_kld = 0.05;
  setup_.spec.accuracy.max_ppl_delta = 0.05;
  ServerTrialExecutor exec(setup_);
  ASSERT_OK(exec.PrepareAccuracy(Config{}));
  ASSERT_OK_AND_ASSIGN(AccuracyOutcome q8, exec.CheckAccuracy(Config{{"weights", "q8_0"}}, "c001"));
  std::printf("q8_0 accuracy: %s\n", q8.detail.c_str());
  ASSERT_TRUE(q8.ppl_ratio.has_value()) << q8.detail;
  EXPECT_NEAR(*q8.ppl_ratio, 1.0, 0.05) << q8.detail;
  EXPECT_TRUE(q8.passed) << q8.detail;
  EXPECT_NE(q8.detail.find("divided out"), std::string::npos) << q8.detail;
  auto saved = nlohmann::json::parse(sys::ReadFile(dir_->path() / "accuracy" / "reference-ppl.json").value_or("{}"),
                                     nullptr, false);
  ASSERT_TRUE(saved.contains("stock_ppl_ratio") && saved["stock_ppl_ratio"].is_number()) << saved.dump();
  EXPECT_GT(saved["stock_ppl_ratio"].get<double>(), 500);  // the bias, measured on the stock
  // A resumed session reads the stock's ratio instead of measuring it again.
  ASSERT_OK(sys::WriteFileAtomic(dir_->path() / "accuracy" / "reference-ppl.json", "{\"stock_ppl_ratio\": 2000}\n"));
  ServerTrialExecutor resumed(setup_);
  ASSERT_OK(resumed.PrepareAccuracy(Config{}));
  ASSERT_OK_AND_ASSIGN(AccuracyOutcome q4, resumed.CheckAccuracy(Config{{"weights", "q4_0"}}, "c002"));
  ASSERT_TRUE(q4.ppl_ratio.has_value()) << q4.detail;
  EXPECT_NE(q4.detail.find("own ratio 2000 divided out"), std::string::npos) << q4.detail;
}

// llama-perplexity logs through a worker thread that its exit does not wait for: on a
// loaded machine a finished run (exit 0) sometimes loses its last lines, the
// statistics (CI saw it; 2 of ~60 runs under three parallel test binaries). A wrapper
// drops them from the first KLD run: the run is repeated and the gate still gets its KLD.
TEST_F(ServerExecutorSlowTest, AKldRunWhoseLogLostItsStatisticsIsRepeated) {
  const std::string wrapper = (dir_->path() / "lossy-perplexity.sh").string();
  const std::string runs = (dir_->path() / "kld-runs").string();
  ASSERT_OK(sys::WriteFileAtomic(
      wrapper, "#!/bin/bash\nout=$(mktemp)\n\"" + prov_->perplexity + "\" \"$@\" > \"$out\" 2>&1\nrc=$?\n"
               "if [[ \" $* \" == *\" --kl-divergence \"* ]]; then echo run >> \"" + runs + "\"; fi\n"
               "if [[ \" $* \" == *\" --kl-divergence \"* && $(wc -l < \"" + runs + "\") == 1 ]]; then\n"
               "  sed '/====== Perplexity statistics/,$d' \"$out\"\n"
               "else\n  cat \"$out\"\nfi\nrm -f \"$out\"\nexit $rc\n"));
  fs::permissions(wrapper, fs::perms::owner_all);
  setup_.perplexity_binary = wrapper;
  ServerTrialExecutor exec(setup_);
  ASSERT_OK(exec.PrepareAccuracy(Config{}));
  ASSERT_OK_AND_ASSIGN(AccuracyOutcome q4, exec.CheckAccuracy(Config{{"weights", "q4_0"}}, "c001"));
  std::printf("q4_0 accuracy: %s\n", q4.detail.c_str());
  ASSERT_TRUE(q4.kld_mean.has_value()) << q4.detail;
  EXPECT_GT(*q4.kld_mean, 0);
  EXPECT_FALSE(q4.passed) << q4.detail;
  // The stock's own ratio (the run that lost its log, then its repeat) and q4_0's: at
  // least three KLD runs. Under load a real run can lose its statistics as well and be
  // repeated too (CI at 085fff2 counted four), up to three runs per check.
  ASSERT_OK_AND_ASSIGN(std::string lines, sys::ReadFile(runs));
  EXPECT_GE(std::count(lines.begin(), lines.end(), '\n'), 3) << lines;
  EXPECT_LE(std::count(lines.begin(), lines.end(), '\n'), 6) << lines;
}

}  // namespace
}  // namespace hone::measure
