// Several processes on one recipe file: two writers at once (both also racing to
// create and migrate the fresh file), and a writer killed with SIGKILL inside its
// transaction, which must leave the file consistent with no partial recipe.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <thread>

#include "testing/kb_recipes.h"
#include "kb/schema.h"
#include "kb/store.h"
#include "testing/test_util.h"

namespace hone::kb {
namespace {

using namespace std::chrono_literals;
using testing::RepoRules;
using testing::SessionQualified;
using testing::TestRecipe;
using testing::Validated;

// Runs body() in a forked child that exits with its return value. The parent must
// hold no SQLite connection across the fork (SQLite forbids using one in a child).
pid_t Spawn(const std::function<int()>& body) {
  pid_t pid = fork();
  if (pid == 0) {
    int rc = 99;
    rc = body();
    _exit(rc);
  }
  return pid;
}

// Waits for the child (bounded, so a hang fails instead of blocking ctest).
int WaitExit(pid_t pid, std::chrono::seconds limit = 120s) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    int status = 0;
    pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    std::this_thread::sleep_for(10ms);
  }
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  return -1;
}

Recipe Variant(const std::string& model, int threads) {
  Recipe r = TestRecipe("s-" + model);
  r.identity.model = model;
  r.config.Set("threads", std::to_string(threads));
  return r;
}

class ConcurrencyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto d = sys::TempDir::Create("hone-kb-conc");
    ASSERT_TRUE(d);
    dir_ = std::move(*d);
    path_ = (dir_->path() / "kb.sqlite").string();
  }
  int64_t QueryInt(const std::string& sql) {
    auto db = SqliteDb::Open(path_, 1000ms);
    EXPECT_TRUE(db);
    auto v = db->QueryInt(sql);
    EXPECT_TRUE(v) << v.error().ToString();
    return v && *v ? **v : -1;
  }
  std::string IntegrityCheck() {
    auto db = SqliteDb::Open(path_, 1000ms);
    auto s = db->Prepare("PRAGMA integrity_check");
    auto row = s->Step();
    return row && *row ? s->Text(0) : "no answer";
  }
  std::unique_ptr<sys::TempDir> dir_;
  std::string path_;
};

TEST_F(ConcurrencyTest, TwoProcessesWritingAtOnceLoseNothingAndDuplicateNothing) {
  constexpr int kUnique = 25;  // per process
  constexpr int kShared = 10;  // the same keys, admitted by both
  int go[2];
  ASSERT_EQ(pipe(go), 0);
  auto writer = [&](const std::string& name) {
    return [&, name]() -> int {
      close(go[1]);
      char c;
      if (read(go[0], &c, 1) < 0) return 2;  // EOF: both start together
      auto store = RecipeStore::Open(path_, RepoRules());  // races the other to create + migrate
      if (!store) {
        std::fprintf(stderr, "%s: %s\n", name.c_str(), store.error().ToString().c_str());
        return 3;
      }
      for (int i = 0; i < kUnique + kShared; ++i) {
        Recipe r = i < kUnique ? Variant(name, i) : Variant("shared", i);
        auto a = (*store)->Admit(Validated(r));
        if (!a || !a->admitted) {
          std::fprintf(stderr, "%s: %s\n", name.c_str(), a ? a->reason.c_str() : a.error().ToString().c_str());
          return 4;
        }
      }
      return 0;
    };
  };
  pid_t a = Spawn(writer("proc-a"));
  pid_t b = Spawn(writer("proc-b"));
  close(go[0]);
  close(go[1]);
  EXPECT_EQ(WaitExit(a), 0);
  EXPECT_EQ(WaitExit(b), 0);

  EXPECT_EQ(IntegrityCheck(), "ok");
  EXPECT_EQ(QueryInt("SELECT count(*) FROM recipes"), 2 * kUnique + kShared);
  EXPECT_EQ(QueryInt("SELECT count(*) FROM recipes WHERE model = 'proc-a'"), kUnique);
  EXPECT_EQ(QueryInt("SELECT count(*) FROM recipes WHERE model = 'proc-b'"), kUnique);
  // Each shared key: one row, admitted once and updated once, whichever came first.
  EXPECT_EQ(QueryInt("SELECT count(*) FROM recipes WHERE model = 'shared' AND reproduce_count = 1"), kShared);
  EXPECT_EQ(QueryInt("SELECT count(*) FROM recipe_history h JOIN recipes r ON r.id = h.recipe_id "
                     "WHERE r.model = 'shared'"),
            2 * kShared);
  EXPECT_EQ(QueryInt("SELECT max(version) FROM schema_version"), kSchemaVersion);
  EXPECT_EQ(QueryInt("SELECT count(*) FROM schema_version"), 1);  // migrated exactly once
  ASSERT_OK_AND_ASSIGN(auto store, RecipeStore::Open(path_, RepoRules()));
  ASSERT_OK_AND_ASSIGN(std::vector<Recipe> all, store->List());
  for (const Recipe& r : all) {
    EXPECT_EQ(r.learnings.size(), 2u) << r.id;
    EXPECT_EQ(r.failures.size(), 1u) << r.id;
    EXPECT_EQ(r.config.size(), 2u) << r.id;
  }
}

struct CrashCase {
  const char* name;
  bool update_existing;  // kill while updating an existing recipe instead of adding one
};

class CrashTest : public ConcurrencyTest, public ::testing::WithParamInterface<CrashCase> {};

TEST_P(CrashTest, WriterKilledInsideItsTransactionLeavesNoPartialRecipe) {
  const bool update = GetParam().update_existing;
  Recipe committed = TestRecipe("s-committed");
  {
    ASSERT_OK_AND_ASSIGN(auto store, RecipeStore::Open(path_, RepoRules()));
    ASSERT_OK_AND_ASSIGN(Admission a, store->Admit(Validated(committed)));
    ASSERT_TRUE(a.admitted);
  }  // closed before forking
  Recipe doomed = update ? TestRecipe("s-doomed") : Variant("doomed", 7);
  doomed.objective.value = 124;
  doomed.learnings.push_back({"batch_size", "2048", 0.05, 0.01, 0.09, {"t-90"}});
  doomed.failures.push_back({Config{{"mlock", "on"}}, FailureKind::kOutOfMemory, "", {"t-91"}});

  int inside[2];
  ASSERT_EQ(pipe(inside), 0);
  pid_t child = Spawn([&]() -> int {
    close(inside[0]);
    StoreOptions opts;
    opts.before_commit = [&] {
      // Every row of the write is in the open transaction now: tell the parent, wait to die.
      if (write(inside[1], "x", 1) != 1) _exit(5);
      while (true) pause();
    };
    auto store = RecipeStore::Open(path_, RepoRules(), opts);
    if (!store) return 3;
    (void)(*store)->Admit(Validated(doomed));
    return 4;  // not reached: killed inside the hook
  });
  close(inside[1]);
  pollfd pfd{inside[0], POLLIN, 0};
  ASSERT_EQ(poll(&pfd, 1, 60'000), 1) << "the child never reached its commit";
  char c;
  ASSERT_EQ(read(inside[0], &c, 1), 1);
  close(inside[0]);
  ASSERT_EQ(kill(child, SIGKILL), 0);
  EXPECT_EQ(WaitExit(child), 128 + SIGKILL);

  // The file is consistent and holds exactly what was committed before.
  EXPECT_EQ(IntegrityCheck(), "ok");
  EXPECT_EQ(QueryInt("SELECT count(*) FROM recipes"), 1);
  EXPECT_EQ(QueryInt("SELECT count(*) FROM learnings"), 2);
  EXPECT_EQ(QueryInt("SELECT count(*) FROM failures"), 1);
  EXPECT_EQ(QueryInt("SELECT count(*) FROM recipe_history"), 1);
  EXPECT_EQ(QueryInt("SELECT count(*) FROM learnings WHERE recipe_id NOT IN (SELECT id FROM recipes)"), 0);
  EXPECT_EQ(QueryInt("SELECT count(*) FROM failure_config WHERE failure_id NOT IN (SELECT id FROM failures)"), 0);
  ASSERT_OK_AND_ASSIGN(auto store, RecipeStore::Open(path_, RepoRules()));
  ASSERT_OK_AND_ASSIGN(std::vector<Recipe> all, store->List());
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].objective, committed.objective);
  EXPECT_EQ(all[0].learnings, SessionQualified(committed).learnings);
  EXPECT_EQ(all[0].provenance.session_id, "s-committed");
  EXPECT_EQ(all[0].reproduce_count, 0);
  // The dead writer's lock is gone: the same write now succeeds.
  ASSERT_OK_AND_ASSIGN(Admission retry, store->Admit(Validated(doomed)));
  EXPECT_TRUE(retry.admitted);
  EXPECT_EQ(retry.updated_existing, update);
}

INSTANTIATE_TEST_SUITE_P(Kb, CrashTest,
                         ::testing::Values(CrashCase{"new_recipe", false}, CrashCase{"update", true}),
                         [](const ::testing::TestParamInfo<CrashCase>& p) { return std::string(p.param.name); });

}  // namespace
}  // namespace hone::kb
