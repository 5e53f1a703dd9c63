#include "policy/paths.h"

#include <string>

#include "testing/test_util.h"

namespace hone::policy {
namespace {

std::string RuleOf(std::string_view path) {
  auto p = CheckRepoPath(path);
  return p ? p->rule_id : "ok";
}

TEST(CheckRepoPathTest, AcceptsOrdinaryRelativePaths) {
  EXPECT_EQ(RuleOf("tools/server/server.cpp"), "ok");
  EXPECT_EQ(RuleOf("a/b/.github-like/x.h"), "ok");
  EXPECT_EQ(RuleOf("README.md"), "ok");
  EXPECT_EQ(RuleOf(".gitignore"), "ok");  // a tracked file, not the git directory
}

TEST(CheckRepoPathTest, RejectsAbsoluteAndDriveLetterPaths) {
  EXPECT_EQ(RuleOf("/etc/passwd"), kRuleAbsolutePath);
  EXPECT_EQ(RuleOf("C:/Windows/x"), kRuleAbsolutePath);
}

TEST(CheckRepoPathTest, RejectsEscapesAndOddComponents) {
  EXPECT_EQ(RuleOf("../outside"), kRulePathEscape);
  EXPECT_EQ(RuleOf("src/../../outside"), kRulePathEscape);
  EXPECT_EQ(RuleOf("src/./x"), kRulePathEscape);
  EXPECT_EQ(RuleOf("src//x"), kRulePathEscape);
  EXPECT_EQ(RuleOf("src/"), kRulePathEscape);
  EXPECT_EQ(RuleOf(""), kRulePathEscape);
  EXPECT_EQ(RuleOf("src\\..\\x"), kRulePathEscape);
  EXPECT_EQ(RuleOf(std::string("src/a\nb")), kRulePathEscape);
  EXPECT_EQ(RuleOf("~/x"), kRulePathEscape);
  EXPECT_EQ(RuleOf(std::string(5000, 'a')), kRulePathEscape);
}

TEST(CheckRepoPathTest, RejectsEveryGitDirectorySpelling) {
  for (const char* p :
       {".git/config", "a/.git/hooks/pre-commit", ".GIT/config", "x/.Git./HEAD", ".git /x", "GIT~1/config"}) {
    EXPECT_EQ(RuleOf(p), kRuleGitDir) << p;
  }
}

TEST(CheckRepoPathTest, MessageNamesThePathWithoutControlBytes) {
  auto p = CheckRepoPath(std::string("x/\x1b[2Jevil/../y"));
  ASSERT_TRUE(p);
  EXPECT_EQ(p->message.find('\x1b'), std::string::npos);
  EXPECT_THAT(p->message, ::testing::HasSubstr("evil"));
}

TEST(GlobMatchTest, StarStaysInsideAComponent) {
  EXPECT_TRUE(GlobMatch("src/*.cpp", "src/llama.cpp"));
  EXPECT_FALSE(GlobMatch("src/*.cpp", "src/models/llama.cpp"));
  EXPECT_TRUE(GlobMatch("src/?.h", "src/a.h"));
  EXPECT_FALSE(GlobMatch("src/?.h", "src/ab.h"));
}

TEST(GlobMatchTest, DoubleStarCrossesDirectories) {
  EXPECT_TRUE(GlobMatch("tools/server/**/*.cpp", "tools/server/server.cpp"));
  EXPECT_TRUE(GlobMatch("tools/server/**/*.cpp", "tools/server/a/b/c.cpp"));
  EXPECT_FALSE(GlobMatch("tools/server/**/*.cpp", "tools/serverx/c.cpp"));
  EXPECT_TRUE(GlobMatch("**/CMakeLists.txt", "CMakeLists.txt"));
  EXPECT_TRUE(GlobMatch("**/CMakeLists.txt", "ggml/src/CMakeLists.txt"));
  EXPECT_TRUE(GlobMatch("scripts/**", "scripts/a/b.sh"));
  EXPECT_FALSE(GlobMatch("scripts/**", "tools/scripts/a"));
}

TEST(GlobMatchTest, BracesPickOneAlternative) {
  EXPECT_TRUE(GlobMatch("common/**/*.{c,cpp,h}", "common/arg.cpp"));
  EXPECT_TRUE(GlobMatch("common/**/*.{c,cpp,h}", "common/arg.h"));
  EXPECT_FALSE(GlobMatch("common/**/*.{c,cpp,h}", "common/arg.py"));
}

TEST(GlobMatchTest, AdversarialPathsStayFast) {
  // Memoised: this would take exponential time with naive backtracking.
  std::string path(3000, 'a');
  EXPECT_FALSE(GlobMatch("**/*a*a*a*a*a*a*a*a*b", path));
}

}  // namespace
}  // namespace hone::policy
