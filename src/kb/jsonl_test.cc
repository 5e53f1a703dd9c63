// Export/import as JSON lines between two real store files: a round trip keeps every
// field, importing again adds nothing, merges add only what is new, and a bad line
// names itself and imports nothing.
#include "kb/jsonl.h"

#include <gtest/gtest.h>

#include "testing/kb_recipes.h"
#include "kb/store.h"
#include "testing/test_util.h"

namespace hone::kb {
namespace {

using testing::RepoRules;
using testing::TestIdentity;
using testing::TestRecipe;
using testing::Validated;

class JsonlTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto d = sys::TempDir::Create("hone-kb-jsonl");
    ASSERT_TRUE(d);
    dir_ = std::move(*d);
    auto a = RecipeStore::Open(dir_->path() / "a.sqlite", RepoRules());
    auto b = RecipeStore::Open(dir_->path() / "b.sqlite", RepoRules());
    ASSERT_TRUE(a && b);
    a_ = std::move(*a);
    b_ = std::move(*b);
  }
  std::unique_ptr<sys::TempDir> dir_;
  std::unique_ptr<RecipeStore> a_;
  std::unique_ptr<RecipeStore> b_;
};

TEST(JsonLineTest, OneRecipeRoundTripsEveryField) {
  Recipe r = TestRecipe();
  r.id = 42;  // local: not exported
  r.status = RecipeStatus::kDemoted;
  r.demoted_reason = "not reproduced";
  r.reproduce_count = 3;
  r.config.Set("env:GGML_NUM_THREADS", "2 \"quoted\"");
  r.history = {{"admitted", "s-1", "0.1.0", "2026-01-02T03:04:05Z", 120, 100, {"t-7"}, "gain 20%"}};
  std::string line = RecipeToJsonLine(r);
  EXPECT_EQ(line.find('\n'), std::string::npos);
  ASSERT_OK_AND_ASSIGN(Recipe back, RecipeFromJsonLine(line));
  EXPECT_EQ(back.id, 0);
  EXPECT_EQ(back.identity, r.identity);
  EXPECT_EQ(back.workload, r.workload);
  EXPECT_EQ(back.config, r.config);
  EXPECT_EQ(back.objective, r.objective);
  EXPECT_EQ(back.baseline, r.baseline);
  EXPECT_EQ(back.learnings, r.learnings);
  EXPECT_EQ(back.failures, r.failures);
  ASSERT_EQ(back.notes.size(), 1u);
  EXPECT_EQ(back.notes, r.notes);
  EXPECT_EQ(back.provenance, r.provenance);
  EXPECT_EQ(back.status, r.status);
  EXPECT_EQ(back.demoted_reason, r.demoted_reason);
  EXPECT_EQ(back.reproduce_count, 3);
  EXPECT_EQ(back.history, r.history);
  EXPECT_EQ(back.Key(), r.Key());
}

TEST(JsonLineTest, MalformedLinesNameTheProblem) {
  struct Case {
    std::string text;
    const char* message;
  } cases[] = {
      {"{not json", "not valid JSON"},
      {"[1, 2]", "must be a JSON object"},
      {R"({"format": "other/9"})", "unknown format 'other/9'"},
      {R"({"format": "hone-kb-recipe/1", "identity": {}})", "missing field identity.model"},
      {R"({"format": "hone-kb-recipe/1", "identity": {"model": 3}})", "field identity.model has the wrong type"},
  };
  for (const Case& c : cases) {
    auto r = RecipeFromJsonLine(c.text);
    ASSERT_FALSE(r) << c.text;
    EXPECT_NE(r.error().message.find(c.message), std::string::npos) << r.error().ToString();
  }
}

TEST_F(JsonlTest, ExportImportRoundTripAndImportDedups) {
  ASSERT_OK_AND_ASSIGN(Admission x, a_->Admit(Validated(TestRecipe())));
  Recipe other = TestRecipe("s-2");
  other.identity.precision = "q4_0";
  ASSERT_OK(a_->Admit(Validated(other)));
  ASSERT_OK(a_->Demote(x.recipe_id, "manual check", "s-3"));
  ASSERT_OK_AND_ASSIGN(std::string text, a_->ExportJsonl());
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 2);

  ASSERT_OK_AND_ASSIGN(ImportStats first, b_->ImportJsonl(text, "a.jsonl"));
  EXPECT_EQ(first.added, 2);
  EXPECT_EQ(first.merged, 0);
  ASSERT_OK_AND_ASSIGN(std::vector<Recipe> in_a, a_->List());
  ASSERT_OK_AND_ASSIGN(std::vector<Recipe> in_b, b_->List());
  ASSERT_EQ(in_b.size(), in_a.size());
  for (size_t i = 0; i < in_a.size(); ++i) {
    EXPECT_EQ(in_b[i].Key(), in_a[i].Key());
    EXPECT_EQ(in_b[i].objective, in_a[i].objective);
    EXPECT_EQ(in_b[i].learnings, in_a[i].learnings);
    EXPECT_EQ(in_b[i].failures, in_a[i].failures);
    EXPECT_EQ(in_b[i].provenance, in_a[i].provenance);
    EXPECT_EQ(in_b[i].status, in_a[i].status);
    EXPECT_EQ(in_b[i].demoted_reason, in_a[i].demoted_reason);
    // The imported history is the exported one plus the import itself.
    ASSERT_EQ(in_b[i].history.size(), in_a[i].history.size() + 1);
    EXPECT_EQ(in_b[i].history.back().event, "imported");
  }
  // Importing the same file again (or re-exporting b into a) adds nothing.
  ASSERT_OK_AND_ASSIGN(ImportStats again, b_->ImportJsonl(text, "a.jsonl"));
  EXPECT_EQ(again.added, 0);
  EXPECT_EQ(again.merged, 0);
  EXPECT_EQ(again.unchanged, 2);
  ASSERT_OK_AND_ASSIGN(std::string from_b, b_->ExportJsonl());
  ASSERT_OK_AND_ASSIGN(ImportStats back, a_->ImportJsonl(from_b, "b.jsonl"));
  EXPECT_EQ(back.added, 0);
  EXPECT_EQ(back.merged, 0);
  ASSERT_OK_AND_ASSIGN(int64_t n, a_->Count());
  EXPECT_EQ(n, 2);
}

TEST_F(JsonlTest, ImportMergesOnlyWhatIsNew) {
  ASSERT_OK_AND_ASSIGN(Admission local, b_->Admit(Validated(TestRecipe("s-local"))));
  // Machine a measured the same recipe later and learned one more thing.
  Recipe remote = TestRecipe("s-remote");
  remote.provenance.date = "2026-03-01T00:00:00Z";
  remote.objective.value = 123;
  remote.learnings.push_back({"batch_size", "1024", 0.03, 0.01, 0.05, {"t-60"}});
  ASSERT_OK(a_->Admit(Validated(remote)));
  ASSERT_OK_AND_ASSIGN(std::string text, a_->ExportJsonl());
  ASSERT_OK_AND_ASSIGN(ImportStats s, b_->ImportJsonl(text, "a.jsonl"));
  EXPECT_EQ(s.added, 0);
  EXPECT_EQ(s.merged, 1);
  ASSERT_OK_AND_ASSIGN(Recipe r, b_->Get(local.recipe_id));
  EXPECT_EQ(r.objective.value, 123);  // the newer measurement wins
  EXPECT_EQ(r.provenance.session_id, "s-remote");
  EXPECT_EQ(r.learnings.size(), 3u);  // two known + one new
  EXPECT_EQ(r.failures.size(), 1u);   // the same failure: not duplicated
  EXPECT_EQ(r.history.back().event, "imported");
  EXPECT_NE(r.history.back().detail.find("newer measurement, 1 learning(s), 1 history event(s)"), std::string::npos)
      << r.history.back().detail;
}

TEST_F(JsonlTest, BadLineImportsNothing) {
  std::string good = RecipeToJsonLine(TestRecipe());
  Recipe shapeless = TestRecipe();
  shapeless.config = Config();
  std::string text = good + "\n\n" + RecipeToJsonLine(shapeless) + "\n";
  auto r = b_->ImportJsonl(text, "shared.jsonl");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("shared.jsonl: recipe 2: the winning config is empty"), std::string::npos)
      << r.error().ToString();
  r = b_->ImportJsonl(good + "\n{oops\n", "shared.jsonl");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("shared.jsonl:2: not valid JSON"), std::string::npos) << r.error().ToString();
  ASSERT_OK_AND_ASSIGN(int64_t n, b_->Count());
  EXPECT_EQ(n, 0);
}

}  // namespace
}  // namespace hone::kb
