// The fallback order, field by field, against a real store file and the repository's
// data/kb/fallback.yaml; and the policy loader's checks on malformed files.
#include <gtest/gtest.h>

#include <cmath>

#include "testing/kb_recipes.h"
#include "kb/match.h"
#include "kb/rules.h"
#include "kb/store.h"
#include "sys/files.h"
#include "testing/test_util.h"

namespace hone::kb {
namespace {

using testing::RepoRules;
using testing::TestIdentity;
using testing::TestRecipe;
using testing::Validated;

class FallbackTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto d = sys::TempDir::Create("hone-kb-fallback");
    ASSERT_TRUE(d);
    dir_ = std::move(*d);
    auto s = RecipeStore::Open(dir_->path() / "kb.sqlite", RepoRules());
    ASSERT_TRUE(s) << s.error().ToString();
    store_ = std::move(*s);
  }
  int64_t AdmitOrDie(const Recipe& r) {
    auto a = store_->Admit(Validated(r));
    EXPECT_TRUE(a && a->admitted) << (a ? a->reason : a.error().ToString());
    return a ? a->recipe_id : 0;
  }
  std::string WritePolicy(const std::string& text) {
    std::string p = (dir_->path() / "policy.yaml").string();
    EXPECT_TRUE(sys::WriteFileAtomic(p, text));
    return p;
  }
  std::unique_ptr<sys::TempDir> dir_;
  std::unique_ptr<RecipeStore> store_;
};

TEST_F(FallbackTest, RepositoryPolicyRelaxesOneFieldPerStepAtFallingConfidence) {
  FallbackPolicy p = RepoRules().fallback;
  ASSERT_GE(p.steps.size(), 2u);
  EXPECT_EQ(p.steps[0].name, "exact");
  EXPECT_TRUE(p.steps[0].relax.empty());
  EXPECT_EQ(p.steps[0].confidence, 1.0);
  for (size_t i = 1; i < p.steps.size(); ++i) {
    EXPECT_EQ(p.steps[i].relax.size(), 1u) << p.steps[i].name;
    EXPECT_LT(p.steps[i].confidence, p.steps[i - 1].confidence) << p.steps[i].name;
  }
  EXPECT_GT(p.replay_min_confidence, 0);
}

struct FieldCase {
  MatchField field;
  std::string query_value;  // the recipe holds TestIdentity()'s value
  std::string step;         // "miss" when no step admits it
  double confidence;
  bool replay;
};

TEST_F(FallbackTest, EachFieldRelaxesAlongTheDocumentedOrder) {
  int64_t id = AdmitOrDie(TestRecipe());
  const FieldCase cases[] = {
      {MatchField::kModel, "llama-other-7b", "same_architecture", 0.80, true},
      {MatchField::kHardware, "nvidia-h200", "other_hardware", 0.60, false},
      {MatchField::kFramework, "vllm", "miss", 0, false},
      {MatchField::kModelType, "mistral", "miss", 0, false},
      {MatchField::kArchitecture, "MistralForCausalLM", "miss", 0, false},
      {MatchField::kFrameworkVersion, "0.4.9", "compatible_framework_version", 0.90, true},
      {MatchField::kPrecision, "q4_0", "other_precision", 0.85, true},
  };
  for (const FieldCase& c : cases) {
    SCOPED_TRACE(std::string(MatchFieldName(c.field)));
    MatchQuery q{TestIdentity(), TestRecipe().workload};
    q.identity.Mutable(c.field) = c.query_value;
    ASSERT_OK_AND_ASSIGN(MatchResult m, store_->Match(q));
    EXPECT_EQ(m.step, c.step);
    EXPECT_NEAR(m.confidence, c.confidence, 1e-9);
    EXPECT_EQ(m.replay, c.replay);
    if (c.step == "miss") {
      EXPECT_FALSE(m.recipe.has_value());
      ASSERT_FALSE(m.explanation.empty());
      EXPECT_NE(m.explanation[0].find("miss: no active recipe"), std::string::npos) << m.explanation[0];
      continue;
    }
    ASSERT_TRUE(m.recipe.has_value());
    EXPECT_EQ(m.recipe->id, id);
    EXPECT_EQ(m.relaxed, std::vector<MatchField>{c.field});
    EXPECT_EQ(m.matched.size(), 6u);
    EXPECT_TRUE(m.not_given.empty());
    // The explanation names the relaxed field, both values and the step.
    std::string relaxed_line = std::string(MatchFieldName(c.field)) + ": relaxed by step '" + c.step + "' (query " +
                               c.query_value + ", recipe " + TestIdentity().Get(c.field) + ")";
    bool found = false;
    for (const std::string& line : m.explanation) found = found || line.rfind(relaxed_line, 0) == 0;
    EXPECT_TRUE(found) << relaxed_line;
  }
}

TEST_F(FallbackTest, DirectHitNeedsAllSevenFields) {
  AdmitOrDie(TestRecipe());
  ASSERT_OK_AND_ASSIGN(MatchResult m, store_->Match({TestIdentity(), TestRecipe().workload}));
  EXPECT_EQ(m.step, "exact");
  EXPECT_EQ(m.confidence, 1.0);
  EXPECT_TRUE(m.replay);
  EXPECT_EQ(m.matched.size(), 7u);
  EXPECT_TRUE(m.relaxed.empty());
  EXPECT_EQ(m.explanation.back(), "confidence 1.000 >= replay threshold 0.70: replay");
}

TEST_F(FallbackTest, FrameworkVersionRelaxationKeepsItsConstraints) {
  AdmitOrDie(TestRecipe());  // recorded on 0.4.2
  for (const char* newer_or_other : {"0.4.1", "0.5.0", "0.3.9", "dev"}) {
    SCOPED_TRACE(newer_or_other);
    MatchQuery q{TestIdentity(), {}};
    q.identity.framework_version = newer_or_other;
    ASSERT_OK_AND_ASSIGN(MatchResult m, store_->Match(q));
    EXPECT_EQ(m.step, "miss");
    ASSERT_GE(m.explanation.size(), 2u);
    EXPECT_NE(m.explanation[1].find("framework_version"), std::string::npos) << m.explanation[1];
  }
  MatchQuery q{TestIdentity(), {}};
  q.identity.framework_version = "0.4.10";
  ASSERT_OK_AND_ASSIGN(MatchResult m, store_->Match(q));
  EXPECT_EQ(m.step, "compatible_framework_version");
}

TEST_F(FallbackTest, TwoDifferingFieldsAreAMissThatSaysWhy) {
  AdmitOrDie(TestRecipe());
  MatchQuery q{TestIdentity(), {}};
  q.identity.model = "llama-other";
  q.identity.precision = "q4_0";
  ASSERT_OK_AND_ASSIGN(MatchResult m, store_->Match(q));
  EXPECT_FALSE(m.recipe.has_value());
  EXPECT_EQ(m.step, "miss");
  ASSERT_EQ(m.explanation.size(), 2u);
  EXPECT_NE(m.explanation[1].find("differs in model, precision; no fallback step relaxes all of them"),
            std::string::npos)
      << m.explanation[1];
}

TEST_F(FallbackTest, FieldsNotGivenMatchAnythingAtNoCost) {
  AdmitOrDie(TestRecipe());
  MatchQuery q;
  q.identity.model = "llama-tiny";
  q.identity.hardware = "cpu-x86_64-2c";
  ASSERT_OK_AND_ASSIGN(MatchResult m, store_->Match(q));
  EXPECT_EQ(m.step, "exact");
  EXPECT_EQ(m.confidence, 1.0);
  EXPECT_EQ(m.matched, (std::vector<MatchField>{MatchField::kModel, MatchField::kHardware}));
  EXPECT_EQ(m.not_given.size(), 5u);
}

TEST_F(FallbackTest, OperatingPointDistanceLowersConfidence) {
  AdmitOrDie(TestRecipe());  // fixed c=4 isl=512 osl=128
  MatchQuery q{TestIdentity(), {.kind = "fixed", .concurrency = 16, .isl = 512, .osl = 128}};
  ASSERT_OK_AND_ASSIGN(MatchResult m, store_->Match(q));
  EXPECT_EQ(m.step, "exact");
  EXPECT_NEAR(m.operating_point_factor, 0.95 * 0.95, 1e-9);  // two doublings of concurrency
  EXPECT_NEAR(m.confidence, 0.9025, 1e-9);
  q.workload = {.kind = "trace", .trace_id = "agentic-1"};
  ASSERT_OK_AND_ASSIGN(m, store_->Match(q));
  EXPECT_NEAR(m.confidence, 0.5, 1e-9);
  EXPECT_FALSE(m.replay);
}

TEST_F(FallbackTest, BestConfidenceWinsAcrossSteps) {
  Recipe far = TestRecipe();
  far.workload.concurrency = 256;  // exact identity, 6 doublings away: 0.95^6 = 0.735
  int64_t far_id = AdmitOrDie(far);
  Recipe near = TestRecipe();
  near.identity.precision = "q4_0";  // other precision, same point: 0.85
  int64_t near_id = AdmitOrDie(near);
  ASSERT_NE(far_id, near_id);
  ASSERT_OK_AND_ASSIGN(MatchResult m, store_->Match({TestIdentity(), TestRecipe().workload}));
  ASSERT_TRUE(m.recipe.has_value());
  EXPECT_EQ(m.recipe->id, near_id);
  EXPECT_EQ(m.step, "other_precision");
}

TEST_F(FallbackTest, DemotedRecipesAreNotMatched) {
  int64_t id = AdmitOrDie(TestRecipe());
  ASSERT_OK(store_->Demote(id, "failed to reproduce", "s-2"));
  ASSERT_OK_AND_ASSIGN(MatchResult m, store_->Match({TestIdentity(), {}}));
  EXPECT_FALSE(m.recipe.has_value());
}

TEST_F(FallbackTest, TheOrderIsData) {
  // The same recipe and query under a policy that trusts other precisions more.
  std::string path = WritePolicy(R"(
replay_min_confidence: 0.5
priors_min_confidence: 0.1
never_relaxed: [framework]
steps:
  - {name: exact, relax: [], confidence: 1.0}
  - {name: any_precision_or_model, relax: [precision, model], confidence: 0.7}
)");
  ASSERT_OK_AND_ASSIGN(FallbackPolicy p, LoadFallbackPolicy(path));
  MatchQuery q{TestIdentity(), {}};
  q.identity.precision = "q4_0";
  q.identity.model = "llama-other";
  Recipe r = TestRecipe();
  auto s = ScoreCandidate(q, r.identity, r.workload, p);
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->step->name, "any_precision_or_model");
  EXPECT_EQ(s->confidence, 0.7);
}

TEST_F(FallbackTest, MalformedPoliciesAreRefusedWithALocation) {
  struct Bad {
    const char* yaml;
    const char* message;
  } cases[] = {
      {"replay_min_confidence: 0.7\npriors_min_confidence: 0.5\nsteps:\n  - {name: exact, relax: [], confidence: 1}\n"
       "  - {name: a, relax: [model], confidence: 0.8}\n  - {name: b, relax: [precision], confidence: 0.9}\n",
       "policy.yaml:6:"},
      {"replay_min_confidence: 0.7\npriors_min_confidence: 0.5\nnever_relaxed: [model]\nsteps:\n"
       "  - {name: exact, relax: [], confidence: 1}\n  - {name: a, relax: [model], confidence: 0.8}\n",
       "is listed in never_relaxed"},
      {"replay_min_confidence: 0.7\npriors_min_confidence: 0.5\nsteps:\n  - {name: a, relax: [model], confidence: 1}\n",
       "the first step must be the exact match"},
      {"replay_min_confidence: 0.7\npriors_min_confidence: 0.5\nsteps:\n  - {name: exact, relax: [], confidence: 1}\n"
       "  - {name: a, relax: [gpu], confidence: 0.8}\n",
       "unknown match field 'gpu'"},
      {"replay_min_confidence: 1.7\npriors_min_confidence: 0.5\nsteps:\n  - {name: exact, relax: [], confidence: 1}\n",
       "replay_min_confidence"},
      {"replay_min_confidence: 0.7\npriors_min_confidence: 0.5\nsteps:\n  - {name: exact, relax: [], confidence: 1}\n"
       "  - {name: v, relax: [framework_version], constraints: [semver], confidence: 0.8}\n",
       "unknown constraint 'semver'"},
  };
  for (const Bad& b : cases) {
    SCOPED_TRACE(b.yaml);
    auto p = LoadFallbackPolicy(WritePolicy(b.yaml));
    ASSERT_FALSE(p);
    EXPECT_NE(p.error().message.find(b.message), std::string::npos) << p.error().ToString();
  }
}

TEST(VersionNumbersTest, ReadsLeadingNumericComponents) {
  EXPECT_EQ(VersionNumbers("0.4.0-dev (build 1)"), (std::vector<int64_t>{0, 4, 0}));
  EXPECT_EQ(VersionNumbers("b4567"), (std::vector<int64_t>{4567}));
  EXPECT_EQ(VersionNumbers("v1.2"), (std::vector<int64_t>{1, 2}));
  EXPECT_TRUE(VersionNumbers("dev").empty());
}

}  // namespace
}  // namespace hone::kb
