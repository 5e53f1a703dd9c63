// The warm-up order: related sessions (a recipe of one would match the other under
// the knowledge base's own fallback rules) run after a neighbour; each family starts
// with its most central member; unrelated workloads start their own family.
#include "fleet/plan.h"

#include <gtest/gtest.h>

#include "core/strings.h"
#include "kb/rules.h"
#include "testing/test_util.h"

namespace hone::fleet {
namespace {

const std::vector<std::string> kMetrics = {"total_tps_per_gpu"};

kb::FallbackPolicy Rules() {
  auto rules = kb::LoadKbRules(::hone::testing::SourceDir().string());
  EXPECT_TRUE(rules) << rules.error().ToString();
  return rules ? rules->fallback : kb::FallbackPolicy{};
}

std::vector<FleetSession> Sessions(const std::string& yaml) {
  auto f = ParseFleetSpec(yaml, "f.yaml", kMetrics);
  EXPECT_TRUE(f) << f.error().ToString();
  return f ? f->sessions : std::vector<FleetSession>{};
}

std::string Order(const FleetPlan& p, const std::vector<FleetSession>& s) {
  std::vector<std::string> out;
  for (const PlannedSession& x : p.order) {
    out.push_back(s[static_cast<size_t>(x.session)].name + "@" + std::to_string(x.wave) +
                  (x.parent < 0 ? "" : "<" + s[static_cast<size_t>(x.parent)].name));
  }
  return Join(out, " ");
}

TEST(PlanTest, RelatedSessionsFollowANeighbourAndUnrelatedOnesStartTheirOwnFamily) {
  auto s = Sessions(R"(workloads:
  - model: [{preset: tiny}, {preset: small}]
    precision: [f16, q8_0]
    workload:
      - {name: fixed, kind: fixed, isl: 64, osl: 16, concurrency: 2}
      - {name: agentic, kind: agentic, concurrency: 4}
)");
  ASSERT_EQ(s.size(), 8u);
  kb::FallbackPolicy rules = Rules();
  // Another precision of the same model matches at 0.85, another model of the
  // architecture at 0.80; another workload kind halves it, below the priors threshold.
  EXPECT_DOUBLE_EQ(Relatedness(s[2], s[0], rules), 0.85);   // tiny-q8_0-fixed from tiny-f16-fixed
  EXPECT_DOUBLE_EQ(Relatedness(s[4], s[0], rules), 0.80);   // small-f16-fixed from tiny-f16-fixed
  EXPECT_EQ(Relatedness(s[6], s[0], rules), 0);             // small-q8_0-fixed: two fields differ
  EXPECT_EQ(Relatedness(s[1], s[0], rules), 0);             // tiny-f16-agentic: another kind
  FleetPlan p = PlanFleet(s, rules);
  ASSERT_EQ(p.order.size(), 8u);
  EXPECT_EQ(Order(p, s),
            "tiny-f16-fixed@0 tiny-q8_0-fixed@1<tiny-f16-fixed small-f16-fixed@1<tiny-f16-fixed "
            "small-q8_0-fixed@2<small-f16-fixed tiny-f16-agentic@0 tiny-q8_0-agentic@1<tiny-f16-agentic "
            "small-f16-agentic@1<tiny-f16-agentic small-q8_0-agentic@2<small-f16-agentic");
  EXPECT_EQ(p.waves, 3);
  ASSERT_EQ(p.explanation.size(), 8u);
  EXPECT_EQ(p.explanation[0], "tiny-f16-fixed (wave 0): cold, starts its family");
  EXPECT_EQ(p.explanation[1], "tiny-q8_0-fixed (wave 1) after tiny-f16-fixed: its recipe would match at 0.85");
}

TEST(PlanTest, TheMostCentralSessionOfAFamilyRunsFirst) {
  // small-f16 is related to all three others (another model at f16: 0.80, another
  // precision of small: 0.85); tiny and medium to two, small-q8_0 to one.
  auto s = Sessions(R"(workloads:
  - model: [{preset: tiny}]
    precision: [f16]
  - model: [{preset: small}]
    precision: [q8_0, f16]
  - model: [{preset: medium}]
    precision: [f16]
)");
  ASSERT_EQ(s.size(), 4u);
  FleetPlan p = PlanFleet(s, Rules());
  EXPECT_EQ(s[static_cast<size_t>(p.order[0].session)].name, "small-f16-fixed") << Order(p, s);
  EXPECT_EQ(p.order[0].parent, -1);
  for (size_t i = 1; i < p.order.size(); ++i) EXPECT_GE(p.order[i].parent, 0) << Order(p, s);
}

TEST(PlanTest, OneSessionIsOneColdWave) {
  auto s = Sessions("workloads:\n  - model: {preset: tiny}\n");
  FleetPlan p = PlanFleet(s, Rules());
  ASSERT_EQ(p.order.size(), 1u);
  EXPECT_EQ(p.waves, 1);
  EXPECT_EQ(p.order[0].parent, -1);
}

}  // namespace
}  // namespace hone::fleet
