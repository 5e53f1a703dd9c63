// The SQLite RAII wrapper against real database files.
#include "kb/sqlite.h"

#include <gtest/gtest.h>

#include "sys/files.h"
#include "testing/test_util.h"

namespace hone::kb {
namespace {

using namespace std::chrono_literals;

class SqliteTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto d = sys::TempDir::Create("hone-kb-sqlite");
    ASSERT_TRUE(d);
    dir_ = std::move(*d);
  }
  std::string Path(const std::string& name) { return (dir_->path() / name).string(); }
  std::unique_ptr<sys::TempDir> dir_;
};

TEST_F(SqliteTest, BindsStepsAndReadsBack) {
  ASSERT_OK_AND_ASSIGN(SqliteDb db, SqliteDb::Open(Path("a.db"), 1000ms));
  ASSERT_OK(db.Exec("CREATE TABLE t (i INTEGER, d REAL, s TEXT)"));
  ASSERT_OK_AND_ASSIGN(Statement ins, db.Prepare("INSERT INTO t VALUES (?1, ?2, ?3)"));
  ASSERT_OK(ins.BindAll(int64_t{7}, 2.5, std::string("it's")));
  ASSERT_OK(ins.Run());
  ins.Reset();
  ASSERT_OK(ins.BindAll(8, 0.0, std::nullopt));
  ASSERT_OK(ins.Run());
  ASSERT_OK_AND_ASSIGN(Statement sel, db.Prepare("SELECT i, d, s FROM t ORDER BY i"));
  ASSERT_OK_AND_ASSIGN(bool row, sel.Step());
  ASSERT_TRUE(row);
  EXPECT_EQ(sel.Int(0), 7);
  EXPECT_EQ(sel.Double(1), 2.5);
  EXPECT_EQ(sel.Text(2), "it's");
  ASSERT_OK_AND_ASSIGN(row, sel.Step());
  ASSERT_TRUE(row);
  EXPECT_TRUE(sel.IsNull(2));
  ASSERT_OK_AND_ASSIGN(row, sel.Step());
  EXPECT_FALSE(row);
  ASSERT_OK_AND_ASSIGN(auto n, db.QueryInt("SELECT count(*) FROM t"));
  EXPECT_EQ(n, 2);
}

TEST_F(SqliteTest, BadSqlNamesTheStatement) {
  ASSERT_OK_AND_ASSIGN(SqliteDb db, SqliteDb::Open(Path("a.db"), 1000ms));
  auto r = db.Prepare("SELEC nonsense");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("SELEC nonsense"), std::string::npos) << r.error().ToString();
}

TEST_F(SqliteTest, GarbageFileIsDataLoss) {
  ASSERT_OK(sys::WriteFileAtomic(Path("junk.db"), std::string(4096, 'x')));
  ASSERT_OK_AND_ASSIGN(SqliteDb db, SqliteDb::Open(Path("junk.db"), 1000ms));  // open is lazy
  auto r = db.Exec("SELECT count(*) FROM sqlite_master");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::kDataLoss) << r.error().ToString();
  EXPECT_NE(r.error().message.find("not a valid database"), std::string::npos);
}

TEST_F(SqliteTest, TransactionRollsBackUnlessCommitted) {
  ASSERT_OK_AND_ASSIGN(SqliteDb db, SqliteDb::Open(Path("a.db"), 1000ms));
  ASSERT_OK(db.Exec("CREATE TABLE t (i INTEGER)"));
  {
    ASSERT_OK_AND_ASSIGN(Transaction txn, Transaction::BeginImmediate(db));
    ASSERT_OK(db.Exec("INSERT INTO t VALUES (1)"));
  }  // dropped: rolled back
  {
    ASSERT_OK_AND_ASSIGN(Transaction txn, Transaction::BeginImmediate(db));
    ASSERT_OK(db.Exec("INSERT INTO t VALUES (2)"));
    ASSERT_OK(txn.Commit());
  }
  ASSERT_OK_AND_ASSIGN(auto sum, db.QueryInt("SELECT sum(i) FROM t"));
  EXPECT_EQ(sum, 2);
}

TEST_F(SqliteTest, SecondWriterTimesOutAsUnavailable) {
  ASSERT_OK_AND_ASSIGN(SqliteDb a, SqliteDb::Open(Path("a.db"), 1000ms));
  ASSERT_OK(a.Exec("PRAGMA journal_mode=WAL; CREATE TABLE t (i INTEGER)"));
  ASSERT_OK_AND_ASSIGN(SqliteDb b, SqliteDb::Open(Path("a.db"), 50ms));
  ASSERT_OK_AND_ASSIGN(Transaction held, Transaction::BeginImmediate(a));
  auto second = Transaction::BeginImmediate(b);
  ASSERT_FALSE(second);
  EXPECT_EQ(second.error().code, ErrorCode::kUnavailable);
  EXPECT_NE(second.error().message.find("locked by another writer (waited 50 ms)"), std::string::npos)
      << second.error().ToString();
  // Readers are not blocked by the writer in WAL mode.
  ASSERT_OK_AND_ASSIGN(auto n, b.QueryInt("SELECT count(*) FROM t"));
  EXPECT_EQ(n, 0);
}

}  // namespace
}  // namespace hone::kb
