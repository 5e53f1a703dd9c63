// The accuracy gate's pure parts: llama-perplexity's KL-divergence statistics and the
// thresholds a measured A/A spread puts in force.
#include <gtest/gtest.h>

#include "measure/server_executor.h"
#include "testing/test_util.h"

namespace hone::measure {
namespace {

TEST(AccuracyGateTest, ParsesLlamaPerplexityKlDivergenceStatistics) {
  // As llama-perplexity --kl-divergence prints them (abridged).
  const std::string out = R"(
====== Perplexity statistics ======
Mean PPL(Q)                   : 31992.497013 ± 1187.364063
Mean PPL(base)                : 31871.026327 ± 1180.978432
Cor(ln(PPL(Q)), ln(PPL(base))):  99.95%
Mean ln(PPL(Q)/PPL(base))     :   0.003804 ±   0.000780
Mean PPL(Q)/PPL(base)         :   1.003811 ±   0.000783
Mean PPL(Q)-PPL(base)         : 121.470686 ±  25.120346

====== KL divergence statistics ======
Mean    KLD:   0.004185 ±   0.000069
Maximum KLD:   0.038916

====== Token probability statistics ======
Mean    Δp: -0.000 ± 0.000 %
Same top p: 61.765 ± 4.215 %
)";
  ASSERT_OK_AND_ASSIGN(KldStats k, ParseKlDivergenceOutput(out));
  EXPECT_DOUBLE_EQ(k.kld, 0.004185);
  EXPECT_DOUBLE_EQ(k.same_top, 61.765);
  ASSERT_TRUE(k.ppl_ratio.has_value());
  EXPECT_DOUBLE_EQ(*k.ppl_ratio, 1.003811);
  // An older build without the ratio line still gives the KLD; nothing at all is an error.
  ASSERT_OK_AND_ASSIGN(KldStats old, ParseKlDivergenceOutput("Mean    KLD:   0.5\nSame top p: 12.0 %\n"));
  EXPECT_FALSE(old.ppl_ratio.has_value());
  EXPECT_FALSE(ParseKlDivergenceOutput("llama-perplexity: error loading model"));
}

TEST(AccuracyGateTest, ADeterministicStockKeepsTheSpecsThresholds) {
  spec::AccuracySpec a;
  a.min_token_agreement = 0.9;
  a.max_kld = 0.01;
  a.max_ppl_delta = 0.03;
  AccuracyGateInfo g;
  g.aa_ran = true;
  g.aa_agreement = 1.0;
  g.aa_kl = 0.0;
  g = GateThresholds(a, g);
  EXPECT_FALSE(g.nondeterministic);
  EXPECT_DOUBLE_EQ(g.min_agreement, 0.9);
  EXPECT_DOUBLE_EQ(g.max_kld, 0.01);
  EXPECT_DOUBLE_EQ(g.max_ppl_delta, 0.03);
  EXPECT_TRUE(g.note.empty());
  // Without an A/A nothing is widened either.
  AccuracyGateInfo none = GateThresholds(a, {});
  EXPECT_FALSE(none.nondeterministic);
  EXPECT_DOUBLE_EQ(none.min_agreement, 0.9);
}

TEST(AccuracyGateTest, ANondeterministicStockWidensTheThresholdsToItsOwnSpread) {
  spec::AccuracySpec a;
  a.min_token_agreement = 0.9;
  a.max_kld = 0.01;
  AccuracyGateInfo g;
  g.aa_ran = true;
  g.aa_agreement = 0.80;  // the stock's restart agrees with its own reference on 80%
  g.aa_kl = 0.02;
  g = GateThresholds(a, g);
  EXPECT_TRUE(g.nondeterministic);
  EXPECT_NEAR(g.min_agreement, 0.75, 1e-12);  // what a restart of the stock achieves, less 5 points
  EXPECT_DOUBLE_EQ(g.max_kld, 0.04);          // twice the stock's own KL
  EXPECT_NE(g.note.find("differ across restarts"), std::string::npos) << g.note;
  // Agreement 100% but a KL above zero: the logits moved between restarts.
  AccuracyGateInfo kl_only;
  kl_only.aa_ran = true;
  kl_only.aa_kl = 0.001;
  kl_only = GateThresholds(a, kl_only);
  EXPECT_TRUE(kl_only.nondeterministic);
  EXPECT_DOUBLE_EQ(kl_only.min_agreement, 0.9);
  EXPECT_DOUBLE_EQ(kl_only.max_kld, 0.01);  // 2 x 0.001 is below the spec's bound
}

}  // namespace
}  // namespace hone::measure
