// `hone kb ...` as a user runs it, against the built binary and a real database file:
// import, list, show, match (hit, relaxed, miss), export, and one-line errors.
#include <gtest/gtest.h>

#include <chrono>

#include "core/strings.h"
#include "kb/jsonl.h"
#include "kb/store.h"
#include "sys/files.h"
#include "sys/process.h"
#include "testing/kb_postgres.h"
#include "testing/kb_recipes.h"
#include "testing/test_util.h"

namespace hone::kb {
namespace {

using namespace std::chrono_literals;
using testing::RepoRules;
using testing::TestRecipe;
using testing::Validated;

class KbCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto d = sys::TempDir::Create("hone-kb-cli");
    ASSERT_TRUE(d);
    dir_ = std::move(*d);
    kb_ = (dir_->path() / "kb.sqlite").string();
  }
  sys::CommandOutput Hone(std::vector<std::string> args) {
    args.insert(args.begin(), (::hone::testing::BinaryDir() / "src/cli/hone").string());
    // The cache dir is private to the test, so the default KB path is too.
    auto out = sys::RunCommand({.argv = args, .env = {{"HONE_CACHE_DIR", (dir_->path() / "cache").string()}}}, 60s);
    EXPECT_TRUE(out) << out.error().ToString();
    return out ? *out : sys::CommandOutput{};
  }
  std::string Path(const std::string& name) { return (dir_->path() / name).string(); }
  std::unique_ptr<sys::TempDir> dir_;
  std::string kb_;
};

TEST_F(KbCliTest, ImportListShowMatchExport) {
  // Two recipes from "another machine", as JSON lines.
  Recipe q8 = TestRecipe("s-q8");
  q8.history = {{"admitted", "s-q8", "0.1.0", "2026-01-02T03:04:05Z", 120, 100, {"t-7"}, "gain 20%"}};
  Recipe other_model = TestRecipe("s-7b");
  other_model.identity.model = "llama-7b";
  other_model.config.Set("threads", "16");
  ASSERT_OK(sys::WriteFileAtomic(Path("shared.jsonl"), RecipeToJsonLine(q8) + "\n" + RecipeToJsonLine(other_model) + "\n"));

  auto r = Hone({"kb", "import", Path("shared.jsonl"), "--kb", kb_});
  ASSERT_EQ(r.status.code, 0) << r.output;
  EXPECT_NE(r.output.find("2 added, 0 merged, 0 unchanged"), std::string::npos) << r.output;
  r = Hone({"kb", "import", Path("shared.jsonl"), "--kb", kb_});
  EXPECT_NE(r.output.find("0 added, 0 merged, 2 unchanged"), std::string::npos) << r.output;

  r = Hone({"kb", "list", "--kb", kb_});
  ASSERT_EQ(r.status.code, 0) << r.output;
  auto lines = Split(Trim(r.output), '\n');
  ASSERT_EQ(lines.size(), 3u) << r.output;
  EXPECT_NE(lines[1].find("llama-tiny"), std::string::npos) << r.output;
  EXPECT_NE(lines[1].find("+20.0%"), std::string::npos) << r.output;
  EXPECT_NE(lines[2].find("llama-7b"), std::string::npos) << r.output;

  r = Hone({"kb", "show", "1", "--kb", kb_});
  ASSERT_EQ(r.status.code, 0) << r.output;
  EXPECT_NE(r.output.find("config             flash_attn=on threads=2"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("threads=2  effect +15.0% [+10.0%, +20.0%]  trials t-3"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("crashed  cache_type_v=q4_0 (context_create"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("imported"), std::string::npos) << r.output;

  // Another quantization of the same model at another concurrency.
  r = Hone({"kb", "match", "--kb", kb_, "--model", "llama-tiny", "--hardware", "cpu-x86_64-2c", "--framework",
            "llama.cpp", "--model-type", "llama", "--architecture", "LlamaForCausalLM", "--framework-version", "0.4.2",
            "--precision", "q4_0", "--concurrency", "8", "--isl", "512", "--osl", "128"});
  ASSERT_EQ(r.status.code, 0) << r.output;
  EXPECT_NE(r.output.find("model: matched (llama-tiny)"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("precision: relaxed by step 'other_precision' (query q4_0, recipe q8_0)"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("workload: concurrency 8 vs recorded 4 (1.0 doublings): x0.950"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("result: recipe #1, step other_precision, confidence 0.807, replay"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("priors: 2 learning(s), 1 failure(s)"), std::string::npos) << r.output;

  r = Hone({"kb", "match", "--kb", kb_, "--model", "llama-tiny", "--framework", "vllm"});
  ASSERT_EQ(r.status.code, 0) << r.output;
  EXPECT_NE(r.output.find("miss: no active recipe with framework=vllm (never relaxed)"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("result: miss"), std::string::npos) << r.output;

  r = Hone({"kb", "export", "--kb", kb_, "--out", Path("out.jsonl")});
  ASSERT_EQ(r.status.code, 0) << r.output;
  EXPECT_NE(r.output.find("exported 2 recipe(s)"), std::string::npos) << r.output;
  ASSERT_OK_AND_ASSIGN(std::string exported, sys::ReadFile(Path("out.jsonl")));
  ASSERT_OK_AND_ASSIGN(auto recipes, ParseJsonLines(exported, "out.jsonl"));
  ASSERT_EQ(recipes.size(), 2u);
  EXPECT_EQ(recipes[0].Key(), q8.Key());
  EXPECT_EQ(recipes[1].Key(), other_model.Key());
}

// `hone kb forget ID KNOB=VALUE`: a stale failure leaves the recipe and the priors a
// session would start from; the history keeps it; a delta the recipe has no failure
// about, or a malformed setting, is a one-line error.
TEST_F(KbCliTest, ForgetDropsAStaleFailureFromThePriors) {
  Recipe r = TestRecipe("s-q8");
  r.failures.push_back({Config{{"flash_attn", "off"}}, FailureKind::kRegressed, "gain +0.31%", {"s-q8/t-8"}});
  ASSERT_OK(sys::WriteFileAtomic(Path("one.jsonl"), RecipeToJsonLine(r) + "\n"));
  auto out = Hone({"kb", "import", Path("one.jsonl"), "--kb", kb_});
  ASSERT_EQ(out.status.code, 0) << out.output;
  const std::vector<std::string> match = {"kb", "match", "--kb", kb_, "--model", "llama-tiny", "--hardware",
                                          "cpu-x86_64-2c", "--framework", "llama.cpp", "--model-type", "llama",
                                          "--architecture", "LlamaForCausalLM", "--framework-version", "0.4.2",
                                          "--precision", "q8_0", "--concurrency", "4", "--isl", "512", "--osl", "128"};
  out = Hone(match);
  EXPECT_NE(out.output.find("2 failure(s)"), std::string::npos) << out.output;

  out = Hone({"kb", "forget", "1", "flash_attn=off", "--why", "measured under a 4.9% floor", "--kb", kb_});
  ASSERT_EQ(out.status.code, 0) << out.output;
  EXPECT_NE(out.output.find("forgot regressed flash_attn=off (gain +0.31%) (trials s-q8/t-8)"), std::string::npos)
      << out.output;
  EXPECT_NE(out.output.find("1 failure(s) forgotten; later sessions may measure flash_attn=off again"),
            std::string::npos)
      << out.output;
  out = Hone(match);
  EXPECT_NE(out.output.find("1 failure(s)"), std::string::npos) << out.output;
  EXPECT_EQ(out.output.find("flash_attn=off"), std::string::npos) << out.output;
  out = Hone({"kb", "show", "1", "--kb", kb_});
  EXPECT_NE(out.output.find("failures           1"), std::string::npos) << out.output;
  EXPECT_NE(out.output.find("forgotten"), std::string::npos) << out.output;
  EXPECT_NE(out.output.find("regressed flash_attn=off (gain +0.31%): measured under a 4.9% floor"),
            std::string::npos)
      << out.output;

  // The file from before the forget, imported again (a teammate's export, a backup):
  // the forgotten failure does not come back.
  out = Hone({"kb", "import", Path("one.jsonl"), "--kb", kb_});
  ASSERT_EQ(out.status.code, 0) << out.output;
  EXPECT_NE(out.output.find("0 added, 0 merged, 1 unchanged"), std::string::npos) << out.output;
  out = Hone(match);
  EXPECT_NE(out.output.find("1 failure(s)"), std::string::npos) << out.output;
  EXPECT_EQ(out.output.find("flash_attn=off"), std::string::npos) << out.output;

  out = Hone({"kb", "forget", "1", "flash_attn=off", "--kb", kb_});
  EXPECT_EQ(out.status.code, 1) << out.output;
  EXPECT_NE(out.output.find("hone: error: recipe #1 has no failure about flash_attn=off (it has: crashed "
                            "cache_type_v=q4_0)"),
            std::string::npos)
      << out.output;
  out = Hone({"kb", "forget", "1", "flash_attn", "--kb", kb_});
  EXPECT_EQ(out.status.code, 2) << out.output;
  EXPECT_NE(out.output.find("hone: error: forget wants KNOB=VALUE, got 'flash_attn'"), std::string::npos)
      << out.output;
}

TEST_F(KbCliTest, DefaultPathIsInTheCacheAndSessionsShareIt) {
  // A session admits through the library into <cache>/kb.sqlite; the CLI sees it.
  {
    ASSERT_OK_AND_ASSIGN(auto store, RecipeStore::Open(dir_->path() / "cache" / "kb.sqlite", RepoRules()));
    ASSERT_OK_AND_ASSIGN(Admission a, store->Admit(Validated(TestRecipe())));
    ASSERT_TRUE(a.admitted);
  }
  auto r = Hone({"kb", "list"});
  ASSERT_EQ(r.status.code, 0) << r.output;
  EXPECT_NE(r.output.find("llama-tiny"), std::string::npos) << r.output;
}

TEST_F(KbCliTest, ErrorsAreOneLine) {
  auto r = Hone({"kb", "show", "7", "--kb", kb_});
  EXPECT_EQ(r.status.code, 1);
  EXPECT_NE(r.output.find("hone: error: kb " + kb_ + ": no recipe #7"), std::string::npos) << r.output;

  ASSERT_OK(sys::WriteFileAtomic(Path("bad.jsonl"), "{\"format\": \"hone-kb-recipe/1\"}\n"));
  r = Hone({"kb", "import", Path("bad.jsonl"), "--kb", kb_});
  EXPECT_EQ(r.status.code, 2);
  EXPECT_NE(r.output.find("hone: error: bad.jsonl:1: missing field identity"), std::string::npos) << r.output;

  ASSERT_OK(sys::WriteFileAtomic(Path("junk.sqlite"), std::string(3000, 'j')));
  r = Hone({"kb", "list", "--kb", Path("junk.sqlite")});
  EXPECT_EQ(r.status.code, 1);
  EXPECT_NE(r.output.find("not a valid database"), std::string::npos) << r.output;
}

// `hone kb migrate`: the default SQLite file -> PostgreSQL (when a server is there,
// see scripts/test-services.sh) -> another SQLite file, listing the same recipes.
TEST_F(KbCliTest, MigrateCopiesBetweenBackendsAndListsTheSame) {
  Recipe a = TestRecipe("s-a");
  Recipe b = TestRecipe("s-b");
  b.identity.model = "llama-7b";
  ASSERT_OK(sys::WriteFileAtomic(Path("two.jsonl"), RecipeToJsonLine(a) + "\n" + RecipeToJsonLine(b) + "\n"));
  auto r = Hone({"kb", "import", Path("two.jsonl")});  // into the default <cache>/kb.sqlite
  ASSERT_EQ(r.status.code, 0) << r.output;
  auto pg = testing::PgTestDb::Create();
  std::string middle = pg ? pg->url() : Path("middle.sqlite");
  r = Hone({"kb", "migrate", "--to", middle});
  ASSERT_EQ(r.status.code, 0) << r.output;
  EXPECT_NE(r.output.find("2 added, 0 merged, 0 unchanged"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find(pg ? "(postgresql, now 2 recipes)" : "(sqlite, now 2 recipes)"), std::string::npos)
      << r.output;
  r = Hone({"kb", "migrate", "--to", middle});  // again: nothing new
  EXPECT_NE(r.output.find("0 added, 0 merged, 2 unchanged"), std::string::npos) << r.output;
  r = Hone({"kb", "migrate", "--from", middle, "--to", Path("back.sqlite")});
  ASSERT_EQ(r.status.code, 0) << r.output;
  auto listed = [&](const std::string& where) {
    auto l = Hone({"kb", "list", "--kb", where});
    EXPECT_EQ(l.status.code, 0) << l.output;
    return l.output.substr(l.output.find('\n'));  // without the header
  };
  EXPECT_EQ(listed(middle), listed(Path("back.sqlite")));
  EXPECT_EQ(listed(Path("back.sqlite")), listed(Path("cache/kb.sqlite")));
  r = Hone({"kb", "migrate", "--to", Path("cache/kb.sqlite")});
  EXPECT_EQ(r.status.code, 2) << r.output;
  EXPECT_NE(r.output.find("the same knowledge base"), std::string::npos) << r.output;
  r = Hone({"kb", "list", "--kb", "postgresql://hone@127.0.0.1:1/kb"});
  EXPECT_EQ(r.status.code, 1) << r.output;
  EXPECT_NE(r.output.find("hone: error: kb postgresql://hone@127.0.0.1:1/kb: cannot connect"), std::string::npos)
      << r.output;
}

}  // namespace
}  // namespace hone::kb
