// The PostgreSQL backend against a real server (scripts/test-services.sh): values
// round-trip, errors become codes, the schema is SQLite's, the store behaves exactly
// as on SQLite, concurrent writers from several processes lose nothing and duplicate
// nothing, a writer killed mid-transaction leaves nothing behind, and `kb migrate`
// copies SQLite -> PostgreSQL -> SQLite without a difference.
#include "kb/postgres.h"

#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <set>
#include <thread>

#include "core/strings.h"
#include "kb/schema.h"
#include "kb/sqlite.h"
#include "kb/store.h"
#include "testing/fake_clock.h"
#include "testing/kb_postgres.h"
#include "testing/kb_recipes.h"
#include "testing/test_util.h"

namespace hone::kb {
namespace {

using namespace std::chrono_literals;
using testing::PgTestDb;
using testing::RepoRules;
using testing::TestRecipe;
using testing::Validated;

TEST(PostgresUnitTest, PlaceholdersUrlsAndRedaction) {
  EXPECT_EQ(PostgresPlaceholders("a = ?1 AND b = '?2' AND c = ?10 AND d = \"x?3\""),
            "a = $1 AND b = '?2' AND c = $10 AND d = \"x?3\"");
  EXPECT_EQ(PostgresPlaceholders("SELECT ?"), "SELECT ?");  // not a numbered parameter
  EXPECT_TRUE(IsPostgresUrl("postgresql://h/db"));
  EXPECT_TRUE(IsPostgresUrl("postgres://h/db"));
  EXPECT_FALSE(IsPostgresUrl("/tmp/kb.sqlite"));
  EXPECT_EQ(RedactUrl("postgresql://hone:s3cret@db.lab:5432/kb?sslmode=require"),
            "postgresql://hone:***@db.lab:5432/kb?sslmode=require");
  EXPECT_EQ(RedactUrl("postgresql://hone@db.lab/kb"), "postgresql://hone@db.lab/kb");
  EXPECT_EQ(RedactUrl("postgresql://db.lab/kb"), "postgresql://db.lab/kb");
  EXPECT_EQ(testing::WithDatabase("postgresql://u@h:1/a?x=1", "b"), "postgresql://u@h:1/b?x=1");
}

TEST(PostgresUnitTest, AnUnreachableServerIsUnavailableAndSaysWhere) {
  // Port 1 on loopback: nothing listens there.
  auto db = PgDb::Connect("postgresql://hone:pw@127.0.0.1:1/kb", 2000ms);
  ASSERT_FALSE(db);
  EXPECT_EQ(db.error().code, ErrorCode::kUnavailable) << db.error().ToString();
  EXPECT_TRUE(db.error().message.starts_with("kb postgresql://hone:***@127.0.0.1:1/kb: cannot connect"))
      << db.error().message;
  auto store = RecipeStore::OpenAt("mysql://x/y", RepoRules());
  ASSERT_FALSE(store);
  EXPECT_EQ(store.error().code, ErrorCode::kInvalidArgument);
}

class PostgresTest : public ::testing::Test {
 protected:
  void SetUp() override {
    db_ = PgTestDb::Create();
    HONE_REQUIRE_PG(db_);
    auto d = sys::TempDir::Create("hone-kb-pg");
    ASSERT_TRUE(d);
    dir_ = std::move(*d);
  }
  std::unique_ptr<PgDb> Connect(std::chrono::milliseconds timeout = 5000ms) {
    auto c = PgDb::Connect(db_->url(), timeout);
    EXPECT_TRUE(c) << c.error().ToString();
    return c ? std::move(*c) : nullptr;
  }
  int64_t QueryInt(const std::string& sql) {
    auto c = Connect();
    auto v = c->QueryInt(sql);
    EXPECT_TRUE(v) << v.error().ToString();
    return v && *v ? **v : -1;
  }
  std::unique_ptr<PgTestDb> db_;
  std::unique_ptr<sys::TempDir> dir_;
};

TEST_F(PostgresTest, ValuesRoundTripAndIdsComeBack) {
  auto c = Connect();
  ASSERT_OK(c->Exec("CREATE TABLE t (id BIGSERIAL PRIMARY KEY, i BIGINT, d DOUBLE PRECISION, s TEXT)"));
  ASSERT_OK_AND_ASSIGN(bool exists, c->TableExists("t"));
  EXPECT_TRUE(exists);
  ASSERT_OK_AND_ASSIGN(exists, c->TableExists("nope"));
  EXPECT_FALSE(exists);
  ASSERT_OK_AND_ASSIGN(Statement ins, c->Prepare("INSERT INTO t (i, d, s) VALUES (?1, ?2, ?3)"));
  const std::string text = "it's ?1 \"quoted\" \xc3\xa9\xe2\x9c\x93";
  ASSERT_OK(ins.BindAll(int64_t{9'007'199'254'740'993}, 0.1 + 0.2, text));
  ASSERT_OK(ins.Run());
  ASSERT_OK_AND_ASSIGN(int64_t first, c->LastInsertId());
  ins.Reset();
  ASSERT_OK(ins.BindAll(int64_t{-5}, 1e-300, std::nullopt));
  ASSERT_OK(ins.Run());
  ASSERT_OK_AND_ASSIGN(int64_t second, c->LastInsertId());
  EXPECT_EQ(second, first + 1);
  ASSERT_OK_AND_ASSIGN(Statement sel, c->Prepare("SELECT i, d, s FROM t WHERE id >= ?1 ORDER BY id"));
  ASSERT_OK(sel.BindAll(first));
  ASSERT_OK_AND_ASSIGN(bool row, sel.Step());
  ASSERT_TRUE(row);
  EXPECT_EQ(sel.Int(0), 9'007'199'254'740'993);
  EXPECT_EQ(sel.Double(1), 0.1 + 0.2);  // exactly: %.17g in, shortest-exact out
  EXPECT_EQ(sel.Text(2), text);
  ASSERT_OK_AND_ASSIGN(row, sel.Step());
  ASSERT_TRUE(row);
  EXPECT_EQ(sel.Double(1), 1e-300);
  EXPECT_TRUE(sel.IsNull(2));
  ASSERT_OK_AND_ASSIGN(row, sel.Step());
  EXPECT_FALSE(row);
  ASSERT_OK_AND_ASSIGN(auto n, c->QueryInt("SELECT count(*) FROM t"));
  EXPECT_EQ(n, 2);
}

TEST_F(PostgresTest, ErrorsAreCodesThatNameTheStatement) {
  auto c = Connect();
  auto bad = c->Exec("SELEC nonsense");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code, ErrorCode::kInternal);
  EXPECT_TRUE(Contains(bad.error().message, "running 'SELEC nonsense'")) << bad.error().message;
  EXPECT_EQ(bad.error().Get("sqlstate"), "42601");
  auto missing = PgDb::Connect(testing::WithDatabase(db_->url(), "no_such_db_here"), 5000ms);
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, ErrorCode::kNotFound) << missing.error().ToString();
  // The writer lock: a second writer waits up to its timeout, then is told.
  auto holder = Connect();
  auto waiter = Connect(300ms);
  ASSERT_OK(holder->BeginWrite());
  auto second = waiter->BeginWrite();
  ASSERT_FALSE(second);
  EXPECT_EQ(second.error().code, ErrorCode::kUnavailable);
  EXPECT_TRUE(Contains(second.error().message, "locked by another writer (waited 300 ms)")) << second.error().message;
  ASSERT_OK(holder->Exec("COMMIT"));
  ASSERT_OK(waiter->BeginWrite());  // the failed attempt left its connection usable
  ASSERT_OK(waiter->Exec("COMMIT"));
}

// Column names of a table, in order: PostgreSQL's and SQLite's schema are the same.
std::vector<std::string> PgColumns(PgDb& c, const std::string& table) {
  std::vector<std::string> out;
  auto s = c.Prepare("SELECT column_name FROM information_schema.columns WHERE table_schema = current_schema() "
                     "AND table_name = ?1 ORDER BY ordinal_position");
  EXPECT_TRUE(s);
  EXPECT_TRUE(s->BindAll(table));
  while (true) {
    auto row = s->Step();
    if (!row || !*row) break;
    out.push_back(s->Text(0));
  }
  return out;
}
std::vector<std::string> SqliteColumns(SqliteDb& c, const std::string& table) {
  std::vector<std::string> out;
  auto s = c.Prepare("SELECT name FROM pragma_table_info(?1) ORDER BY cid");
  EXPECT_TRUE(s);
  EXPECT_TRUE(s->BindAll(table));
  while (true) {
    auto row = s->Step();
    if (!row || !*row) break;
    out.push_back(s->Text(0));
  }
  return out;
}

TEST_F(PostgresTest, TheSchemaIsSqlitesAndIsMigratedOnceByRacingProcesses) {
  int go[2];
  ASSERT_EQ(pipe(go), 0);
  std::vector<pid_t> kids;
  for (int k = 0; k < 3; ++k) {
    pid_t pid = fork();
    if (pid == 0) {
      close(go[1]);
      char ch;
      if (read(go[0], &ch, 1) < 0) _exit(2);
      auto store = RecipeStore::OpenAt(db_->url(), RepoRules());
      _exit(store ? 0 : 3);
    }
    kids.push_back(pid);
  }
  close(go[0]);
  close(go[1]);
  for (pid_t pid : kids) {
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  EXPECT_EQ(QueryInt("SELECT count(*) FROM schema_version"), 1);
  EXPECT_EQ(QueryInt("SELECT max(version) FROM schema_version"), kSchemaVersion);
  auto pg = Connect();
  ASSERT_OK_AND_ASSIGN(auto sq, RecipeStore::Open(dir_->path() / "kb.sqlite", RepoRules()));
  ASSERT_OK_AND_ASSIGN(SqliteDb lite, SqliteDb::Open(dir_->path() / "kb.sqlite", 1000ms));
  for (const char* table : {"recipes", "recipe_config", "learnings", "failures", "failure_config", "recipe_history",
                            "schema_version"}) {
    EXPECT_EQ(Join(PgColumns(*pg, table), ","), Join(SqliteColumns(lite, table), ",")) << table;
    EXPECT_FALSE(PgColumns(*pg, table).empty()) << table;
  }
}

// The same operations on both backends give the same knowledge base.
std::string Exercise(RecipeStore& store) {
  std::string log;
  Recipe a = TestRecipe("s-1");
  Recipe b = TestRecipe("s-2");
  b.identity.precision = "f16";
  b.objective.value = 130;
  b.objective.ci_lo = 125;
  b.objective.ci_hi = 135;
  auto ia = store.Admit(Validated(a));
  auto ib = store.Admit(Validated(b));
  a.objective.value = 125;
  a.provenance.session_id = "s-3";
  auto again = store.Admit(Validated(a));  // the same key: updated, never duplicated
  if (!ia || !ib || !again || !ib->admitted) return "admit failed";
  log += again->reason + "\n";
  ReplayOutcome o;
  o.identity = a.identity;
  o.workload = a.workload;
  o.session_id = "s-4";
  o.accuracy_passed = true;  // and the default verdict: KEEP
  o.objective_value = 120;
  o.baseline_value = 100;
  auto v = store.RecordReplay(ia->recipe_id, o);
  log += v ? v->reason + "\n" : v.error().ToString();
  (void)store.Demote(ib->recipe_id, "manual", "s-5");
  auto forgot = store.ForgetFailures(ib->recipe_id, Config{{"cache_type_v", "q4_0"}}, "stale");
  log += forgot ? "forgot " + std::to_string(forgot->size()) + "\n" : forgot.error().ToString();
  MatchQuery q{a.identity, a.workload};
  q.identity.precision = "q4_0";
  auto m = store.Match(q);
  if (m) log += Join(m->explanation, "\n") + "\n";
  auto l = store.Learnings(q);
  auto f = store.Failures(q);
  if (l && f) log += std::to_string(l->size()) + " learnings, " + std::to_string(f->size()) + " failures\n";
  auto e = store.ExportJsonl();
  return log + (e ? *e : e.error().ToString());
}

TEST_F(PostgresTest, TheStoreBehavesExactlyAsOnSqlite) {
  ::hone::testing::FakeClock clock_a, clock_b;
  StoreOptions a_opts, b_opts;
  a_opts.clock = &clock_a;
  b_opts.clock = &clock_b;
  ASSERT_OK_AND_ASSIGN(auto lite, RecipeStore::Open(dir_->path() / "kb.sqlite", RepoRules(), a_opts));
  ASSERT_OK_AND_ASSIGN(auto pg, RecipeStore::OpenAt(db_->url(), RepoRules(), b_opts));
  EXPECT_EQ(pg->dialect(), Dialect::kPostgres);
  EXPECT_EQ(pg->opened_at_version(), 0);
  std::string on_sqlite = Exercise(*lite);
  std::string on_pg = Exercise(*pg);
  EXPECT_EQ(on_pg, on_sqlite);
  EXPECT_TRUE(Contains(on_pg, "updated recipe #1")) << on_pg;
  EXPECT_TRUE(Contains(on_pg, "\"status\":\"demoted\"")) << on_pg;
  EXPECT_TRUE(Contains(on_pg, "forgot 1\n")) << on_pg;
}

TEST_F(PostgresTest, ProcessesWritingAndMatchingAtOnceLoseNothingAndDuplicateNothing) {
  constexpr int kWriters = 3;
  constexpr int kUnique = 15;  // per process
  constexpr int kShared = 8;   // the same keys, admitted by every process
  int go[2];
  ASSERT_EQ(pipe(go), 0);
  std::vector<pid_t> kids;
  for (int k = 0; k < kWriters + 1; ++k) {
    pid_t pid = fork();
    if (pid == 0) {
      close(go[1]);
      char ch;
      if (read(go[0], &ch, 1) < 0) _exit(2);
      auto store = RecipeStore::OpenAt(db_->url(), RepoRules());  // races the others to migrate
      if (!store) _exit(3);
      if (k == kWriters) {
        // A reader matching all along: every answer is whole (a recipe with its config).
        for (int i = 0; i < 60; ++i) {
          auto m = (*store)->Match({TestRecipe().identity, TestRecipe().workload});
          if (!m) _exit(5);
          if (m->recipe && m->recipe->config.empty()) _exit(6);
        }
        _exit(0);
      }
      for (int i = 0; i < kUnique + kShared; ++i) {
        Recipe r = TestRecipe("s-" + std::to_string(k));
        r.identity.model = i < kUnique ? "proc-" + std::to_string(k) : "shared";
        r.config.Set("threads", std::to_string(i));
        auto a = (*store)->Admit(Validated(r));
        if (!a || !a->admitted) _exit(4);
      }
      _exit(0);
    }
    kids.push_back(pid);
  }
  close(go[0]);
  close(go[1]);
  for (pid_t pid : kids) {
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "exit " << WEXITSTATUS(status);
  }
  EXPECT_EQ(QueryInt("SELECT count(*) FROM recipes"), kWriters * kUnique + kShared);
  EXPECT_EQ(QueryInt("SELECT count(DISTINCT recipe_key) FROM recipes"), kWriters * kUnique + kShared);
  EXPECT_EQ(QueryInt("SELECT count(*) FROM recipes WHERE model = 'shared' AND reproduce_count = " +
                     std::to_string(kWriters - 1)),
            kShared);
  // Every admission left its history event: nothing lost.
  EXPECT_EQ(QueryInt("SELECT count(*) FROM recipe_history"), kWriters * (kUnique + kShared));
  EXPECT_EQ(QueryInt("SELECT count(*) FROM schema_version"), 1);
  ASSERT_OK_AND_ASSIGN(auto store, RecipeStore::OpenAt(db_->url(), RepoRules()));
  ASSERT_OK_AND_ASSIGN(std::vector<Recipe> all, store->List());
  for (const Recipe& r : all) {
    EXPECT_EQ(r.config.size(), 2u) << r.id;
    EXPECT_EQ(r.failures.size(), 1u) << r.id;
  }
}

TEST_F(PostgresTest, AWriterKilledInsideItsTransactionLeavesNothingBehind) {
  {
    ASSERT_OK_AND_ASSIGN(auto store, RecipeStore::OpenAt(db_->url(), RepoRules()));
    ASSERT_OK(store->Admit(Validated(TestRecipe("s-committed"))));
  }
  int inside[2];
  ASSERT_EQ(pipe(inside), 0);
  pid_t child = fork();
  if (child == 0) {
    close(inside[0]);
    StoreOptions opts;
    opts.before_commit = [&] {
      if (write(inside[1], "x", 1) != 1) _exit(5);
      while (true) pause();
    };
    auto store = RecipeStore::OpenAt(db_->url(), RepoRules(), opts);
    if (!store) _exit(3);
    Recipe doomed = TestRecipe("s-doomed");
    doomed.identity.model = "doomed";
    (void)(*store)->Admit(Validated(doomed));
    _exit(4);
  }
  close(inside[1]);
  pollfd pfd{inside[0], POLLIN, 0};
  ASSERT_EQ(poll(&pfd, 1, 60'000), 1) << "the child never reached its commit";
  char ch;
  ASSERT_EQ(read(inside[0], &ch, 1), 1);
  close(inside[0]);
  ASSERT_EQ(kill(child, SIGKILL), 0);
  ASSERT_EQ(waitpid(child, nullptr, 0), child);
  // The server rolls the dead connection's transaction back and frees the lock.
  ASSERT_OK_AND_ASSIGN(auto store, RecipeStore::OpenAt(db_->url(), RepoRules(), {.busy_timeout = 20000ms}));
  Recipe next = TestRecipe("s-next");
  next.identity.model = "next";
  ASSERT_OK_AND_ASSIGN(Admission a, store->Admit(Validated(next)));
  EXPECT_TRUE(a.admitted);
  EXPECT_EQ(QueryInt("SELECT count(*) FROM recipes WHERE model = 'doomed'"), 0);
  EXPECT_EQ(QueryInt("SELECT count(*) FROM learnings WHERE recipe_id NOT IN (SELECT id FROM recipes)"), 0);
  EXPECT_EQ(QueryInt("SELECT count(*) FROM recipes"), 2);
}

TEST_F(PostgresTest, MigrateCopiesSqliteToPostgresAndBackWithoutADifference) {
  ::hone::testing::FakeClock clock;
  StoreOptions opts;
  opts.clock = &clock;
  ASSERT_OK_AND_ASSIGN(auto src, RecipeStore::Open(dir_->path() / "src.sqlite", RepoRules(), opts));
  std::string exercised = Exercise(*src);
  ASSERT_OK_AND_ASSIGN(std::string original, src->ExportJsonl());
  ASSERT_OK_AND_ASSIGN(auto pg, RecipeStore::OpenAt(db_->url(), RepoRules(), opts));
  ASSERT_OK_AND_ASSIGN(ImportStats to_pg, pg->CopyFrom(*src));
  EXPECT_EQ(to_pg.added, 2);
  ASSERT_OK_AND_ASSIGN(std::string on_pg, pg->ExportJsonl());
  EXPECT_EQ(on_pg, original);
  ASSERT_OK_AND_ASSIGN(ImportStats twice, pg->CopyFrom(*src));  // idempotent
  EXPECT_EQ(twice.added, 0);
  EXPECT_EQ(twice.merged, 0);
  EXPECT_EQ(twice.unchanged, 2);
  ASSERT_OK_AND_ASSIGN(auto back, RecipeStore::Open(dir_->path() / "back.sqlite", RepoRules(), opts));
  ASSERT_OK(back->CopyFrom(*pg));
  ASSERT_OK_AND_ASSIGN(std::string round_trip, back->ExportJsonl());
  EXPECT_EQ(round_trip, original);
}

}  // namespace
}  // namespace hone::kb
