#include "patch/diff.h"

#include "testing/test_util.h"

namespace hone::patch {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(ParseDiffTest, GitDiffWithTwoFiles) {
  const char* text =
      "diff --git a/src/a.cc b/src/a.cc\n"
      "index 1111111..2222222 100644\n"
      "--- a/src/a.cc\n"
      "+++ b/src/a.cc\n"
      "@@ -1,3 +1,3 @@\n"
      " int a() {\n"
      "-  return 1;\n"
      "+  return 2;\n"
      " }\n"
      "diff --git a/src/new.h b/src/new.h\n"
      "new file mode 100644\n"
      "index 0000000..3333333\n"
      "--- /dev/null\n"
      "+++ b/src/new.h\n"
      "@@ -0,0 +1,2 @@\n"
      "+#pragma once\n"
      "+int b();\n";
  ASSERT_OK_AND_ASSIGN(Diff d, ParseDiff(text));
  ASSERT_EQ(d.files.size(), 2u);
  EXPECT_EQ(d.files[0].old_path, "a/src/a.cc");
  EXPECT_EQ(d.files[0].new_path, "b/src/a.cc");
  EXPECT_EQ(d.files[0].line, 1);
  EXPECT_EQ(d.files[0].added, 1);
  EXPECT_EQ(d.files[0].removed, 1);
  EXPECT_TRUE(d.files[1].is_new);
  EXPECT_EQ(d.files[1].new_mode, kModeRegular);
  EXPECT_EQ(d.files[1].old_path, "/dev/null");
  EXPECT_EQ(d.added, 3);
  EXPECT_EQ(d.removed, 1);
  EXPECT_EQ(DiffStat(d), " 2 files changed, 3 insertions(+), 1 deletion(-)");
}

TEST(ParseDiffTest, PlainDiffUWithTimestampsAndNoNewlineMarker) {
  const char* text =
      "--- orig/x.c\t2024-01-01 10:00:00.000000000 +0000\n"
      "+++ new/x.c\t2024-01-02 10:00:00.000000000 +0000\n"
      "@@ -1 +1 @@\n"
      "-a\n"
      "\\ No newline at end of file\n"
      "+b\n"
      "\\ No newline at end of file\n";
  ASSERT_OK_AND_ASSIGN(Diff d, ParseDiff(text));
  ASSERT_EQ(d.files.size(), 1u);
  EXPECT_FALSE(d.files[0].git);
  EXPECT_EQ(d.files[0].old_path, "orig/x.c");
  EXPECT_EQ(d.files[0].new_path, "new/x.c");
  EXPECT_EQ(d.files[0].hunks[0].old_count, 1);
}

TEST(ParseDiffTest, FormatPatchMailPreambleIsIgnored) {
  const char* text =
      "From 1234 Mon Sep 17 00:00:00 2001\n"
      "From: Dev <dev@example.com>\n"
      "Subject: [PATCH] server: fewer slots\n"
      "\n"
      "--- a/fake.c is prose, not a header (no +++ follows)\n"
      "---\n"
      " tools/server/server.cpp | 2 +-\n"
      "\n"
      "diff --git a/tools/server/server.cpp b/tools/server/server.cpp\n"
      "--- a/tools/server/server.cpp\n"
      "+++ b/tools/server/server.cpp\n"
      "@@ -1 +1 @@\n"
      "-x\n"
      "+y\n"
      "-- \n"
      "2.39.5\n";
  ASSERT_OK_AND_ASSIGN(Diff d, ParseDiff(text));
  ASSERT_EQ(d.files.size(), 1u);
  EXPECT_EQ(d.files[0].new_path, "b/tools/server/server.cpp");
  EXPECT_EQ(d.files[0].line, 9);
}

TEST(ParseDiffTest, RenameCopyAndModeHeadersWithoutHunks) {
  const char* text =
      "diff --git a/old name.h b/new name.h\n"
      "similarity index 100%\n"
      "rename from old name.h\n"
      "rename to new name.h\n"
      "diff --git a/run.sh b/run.sh\n"
      "old mode 100644\n"
      "new mode 100755\n";
  ASSERT_OK_AND_ASSIGN(Diff d, ParseDiff(text));
  ASSERT_EQ(d.files.size(), 2u);
  EXPECT_TRUE(d.files[0].is_rename);
  EXPECT_THAT(d.files[0].root_names, ElementsAre("old name.h", "new name.h"));
  EXPECT_EQ(d.files[1].old_mode, kModeRegular);
  EXPECT_EQ(d.files[1].new_mode, kModeExecutable);
  EXPECT_THAT(d.files[1].prefixed_names, ElementsAre("a/run.sh", "b/run.sh"));
}

TEST(ParseDiffTest, QuotedNamesAreDecoded) {
  const char* text =
      "diff --git \"a/sp\\303\\244ce\\tx.h\" \"b/sp\\303\\244ce\\tx.h\"\n"
      "new file mode 100644\n"
      "--- /dev/null\n"
      "+++ \"b/sp\\303\\244ce\\tx.h\"\n"
      "@@ -0,0 +1 @@\n"
      "+x\n";
  ASSERT_OK_AND_ASSIGN(Diff d, ParseDiff(text));
  EXPECT_EQ(d.files[0].new_path,
            "b/sp\xc3\xa4"
            "ce\tx.h");
}

TEST(ParseDiffTest, BinaryPatchesAreMarked) {
  const char* text =
      "diff --git a/x.bin b/x.bin\n"
      "new file mode 100644\n"
      "index 0000000..e69de29\n"
      "GIT binary patch\n"
      "literal 4\n"
      "LcmZQzWMT#Y01f~L\n"
      "\n"
      "literal 0\n"
      "HcmV?d00001\n"
      "\n"
      "diff --git a/y.bin b/y.bin\n"
      "Binary files a/y.bin and b/y.bin differ\n";
  ASSERT_OK_AND_ASSIGN(Diff d, ParseDiff(text));
  ASSERT_EQ(d.files.size(), 2u);
  EXPECT_TRUE(d.files[0].is_binary);
  EXPECT_TRUE(d.files[1].is_binary);
}

TEST(ParseDiffTest, EmptyLineInsideAHunkIsEmptyContext) {
  ASSERT_OK_AND_ASSIGN(Diff d, ParseDiff("--- a/x\n+++ b/x\n@@ -1,3 +1,3 @@\n a\n\n-b\n+c\n"));
  EXPECT_EQ(d.files[0].added, 1);
}

TEST(ParseDiffTest, CrlfHeadersParse) {
  ASSERT_OK_AND_ASSIGN(Diff d, ParseDiff("--- a/x\r\n+++ b/x\r\n@@ -1 +1 @@\r\n-a\r\n+b\r\n"));
  EXPECT_EQ(d.files[0].new_path, "b/x");
}

TEST(ParseDiffTest, BadInputIsAnErrorNamingTheLine) {
  struct Case {
    const char* text;
    const char* message;
  };
  const Case cases[] = {
      {"", "no file header"},
      {"hello world\nthis is not a diff\n", "no file header"},
      {"@@ -1 +1 @@\n-a\n+b\n", "line 1: a hunk without a file header"},
      {"--- a/x\n+++ b/x\n@@ -1,5 +1,5 @@\n-a\n+b\n", "line 3: hunk is truncated"},
      {"--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n-b\n+c\n", "more lines than its header says"},
      {"--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n*b\n", "line 5: unexpected line inside a hunk"},
      {"--- a/x\n+++ b/x\n@@ -x +1 @@\n", "malformed hunk header"},
      {"--- a/x\n+++ b/x\n@@ -0,0 +0,0 @@\n", "an empty hunk"},
      {"--- a/x\n+++ b/x\n", "without any hunk"},
      {"diff --git a/x b/x\nindex 1..2 100644\n", "no hunks and no header change"},
      {"--- /dev/null\n+++ /dev/null\n@@ -1 +1 @@\n-a\n+b\n", "both created and deleted"},
      {"--- \"a/unterminated\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n", "unterminated quoted name"},
      {"--- a/x\n+++ b/x\n@@ -99999999999 +1 @@\n-a\n+b\n", "malformed hunk header"},
  };
  for (const Case& c : cases) {
    auto r = ParseDiff(c.text);
    ASSERT_FALSE(r) << c.text;
    EXPECT_THAT(r.error().message, HasSubstr(c.message)) << c.text;
    EXPECT_EQ(r.error().Get("kind"), "syntax");
  }
}

TEST(ParseDiffTest, NulBytesAreBinary) {
  auto r = ParseDiff(std::string("--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\0c\n", 34));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().Get("kind"), "binary");
}

TEST(StripPathTest, RemovesLeadingComponents) {
  EXPECT_EQ(StripPath("a/src/x.c", 1).value(), "src/x.c");
  EXPECT_EQ(StripPath("a/src/x.c", 0).value(), "a/src/x.c");
  EXPECT_EQ(StripPath("a/src/x.c", 2).value(), "x.c");
  EXPECT_FALSE(StripPath("a/src/x.c", 3));
  EXPECT_FALSE(StripPath("a/", 1));
}

}  // namespace
}  // namespace hone::patch
