// Test-only: a fresh PostgreSQL database per test on the server HONE_TEST_PG_URL names
// (scripts/test-services.sh starts one in the test's own directory and port), dropped
// at the end. Without the variable the tests skip, unless HONE_REQUIRE_SERVICES=1
// (scripts/test.sh sets it), where they fail instead.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <memory>
#include <string>

#include "kb/postgres.h"

namespace hone::kb::testing {

inline std::string PgBaseUrl() {
  const char* u = std::getenv("HONE_TEST_PG_URL");
  return u != nullptr ? u : "";
}

// The URL with its database replaced.
inline std::string WithDatabase(const std::string& url, const std::string& db) {
  size_t q = url.find('?');
  std::string base = url.substr(0, q);
  size_t slash = base.find('/', base.find("://") + 3);
  std::string head = slash == std::string::npos ? base : base.substr(0, slash);
  return head + "/" + db + (q == std::string::npos ? "" : url.substr(q));
}

class PgTestDb {
 public:
  // A new, empty database; nullptr (after recording why) when no server is configured.
  static std::unique_ptr<PgTestDb> Create() {
    static std::atomic<int> counter{0};
    std::string base = PgBaseUrl();
    if (base.empty()) return nullptr;
    auto admin = PgDb::Connect(base, std::chrono::milliseconds(10000));
    EXPECT_TRUE(admin) << admin.error().ToString();
    if (!admin) return nullptr;
    std::string name = "hone_t_" + std::to_string(getpid()) + "_" + std::to_string(counter++);
    (void)(*admin)->Exec("DROP DATABASE IF EXISTS " + name);
    auto created = (*admin)->Exec("CREATE DATABASE " + name);
    EXPECT_TRUE(created) << created.error().ToString();
    if (!created) return nullptr;
    return std::unique_ptr<PgTestDb>(new PgTestDb(base, name));
  }
  ~PgTestDb() {
    if (auto admin = PgDb::Connect(base_, std::chrono::milliseconds(10000))) {
      (void)(*admin)->Exec("DROP DATABASE IF EXISTS " + name_ + " WITH (FORCE)");
    }
  }
  const std::string& url() const { return url_; }

 private:
  PgTestDb(std::string base, std::string name)
      : base_(std::move(base)), name_(std::move(name)), url_(WithDatabase(base_, name_)) {}
  std::string base_, name_, url_;
};

}  // namespace hone::kb::testing

// Skips (or fails, under HONE_REQUIRE_SERVICES=1) without a PostgreSQL server.
#define HONE_REQUIRE_PG(db)                                                                    \
  do {                                                                                         \
    if (!(db)) {                                                                               \
      if (std::getenv("HONE_REQUIRE_SERVICES")) FAIL() << "HONE_TEST_PG_URL is not set or unusable"; \
      GTEST_SKIP() << "no PostgreSQL server (HONE_TEST_PG_URL; scripts/test-services.sh)";      \
    }                                                                                          \
  } while (0)
