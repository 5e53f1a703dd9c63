// A deterministic mutation loop over the diff parser that runs everywhere (the
// libFuzzer target diff_fuzzer.cc runs where clang is installed). Seeds are the
// hostile corpus plus well-formed diffs; mutations flip bytes, duplicate, drop and
// swap lines, change hunk numbers and splice seeds. Every input must parse or fail
// with an Error, and a parse must satisfy the invariants the validator relies on.
#include <string>
#include <vector>

#include "core/rng.h"
#include "core/strings.h"
#include "patch/diff.h"
#include "testing/patch_fixture.h"
#include "patch/validate.h"
#include "sys/files.h"
#include "testing/test_util.h"

namespace hone::patch {
namespace {

std::vector<std::string> Seeds() {
  std::vector<std::string> seeds = {testing::ParallelDiff(2),
                                    "--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n a\n-b\n+c\n\\ No newline at end of file\n",
                                    "diff --git a/x b/y\nsimilarity index 90%\nrename from x\nrename to y\n"};
  std::error_code ec;
  for (const auto& e :
       std::filesystem::directory_iterator(hone::testing::SourceDir() / "src/patch/testdata/hostile", ec)) {
    if (e.path().extension() == ".diff") seeds.push_back(sys::ReadFile(e.path()).value_or(""));
  }
  return seeds;
}

std::string Mutate(Rng& rng, const std::string& in, const std::vector<std::string>& seeds) {
  std::string s = in;
  std::vector<std::string> lines = Split(s, '\n');
  static const char* kTokens[] = {"@@ -1 +1 @@",
                                  "--- a/x",
                                  "+++ b/x",
                                  "diff --git a/x b/x",
                                  "\\ No newline",
                                  "new file mode 120000",
                                  "GIT binary patch",
                                  "rename from ../x",
                                  "\"a/\\303\"",
                                  "@@ -0,0 +0,0 @@",
                                  "@@ -4294967296,1 +1 @@",
                                  "/dev/null",
                                  "",
                                  " ",
                                  "-",
                                  "+"};
  int ops = 1 + static_cast<int>(rng.Uniform(0, 3));
  for (int k = 0; k < ops; ++k) {
    switch (rng.Uniform(0, 7)) {
      case 0:  // flip a byte
        if (!s.empty()) s[rng.Uniform(0, static_cast<int64_t>(s.size()) - 1)] = static_cast<char>(rng.Uniform(0, 255));
        break;
      case 1:  // duplicate a line
        if (!lines.empty()) {
          size_t i = rng.Uniform(0, static_cast<int64_t>(lines.size()) - 1);
          lines.insert(lines.begin() + static_cast<long>(i), lines[i]);
        }
        s = Join(lines, "\n");
        break;
      case 2:  // drop a line
        if (!lines.empty()) lines.erase(lines.begin() + rng.Uniform(0, static_cast<int64_t>(lines.size()) - 1));
        s = Join(lines, "\n");
        break;
      case 3:  // insert a token line
        lines.insert(lines.begin() + rng.Uniform(0, static_cast<int64_t>(lines.size())),
                     kTokens[rng.Uniform(0, std::size(kTokens) - 1)]);
        s = Join(lines, "\n");
        break;
      case 4:  // change a digit
        for (char& c : s) {
          if (c >= '0' && c <= '9' && rng.Uniform(0, 3) == 0) c = static_cast<char>('0' + rng.Uniform(0, 9));
        }
        break;
      case 5: {  // splice with another seed
        const std::string& other = seeds[rng.Uniform(0, static_cast<int64_t>(seeds.size()) - 1)];
        s = s.substr(0, rng.Uniform(0, static_cast<int64_t>(s.size()))) +
            other.substr(rng.Uniform(0, static_cast<int64_t>(other.size())));
        break;
      }
      case 6:  // truncate
        s.resize(rng.Uniform(0, static_cast<int64_t>(s.size())));
        break;
      default:  // swap two lines
        if (lines.size() > 1) {
          std::swap(lines[rng.Uniform(0, static_cast<int64_t>(lines.size()) - 1)],
                    lines[rng.Uniform(0, static_cast<int64_t>(lines.size()) - 1)]);
        }
        s = Join(lines, "\n");
    }
    lines = Split(s, '\n');
  }
  return s;
}

TEST(DiffFuzzTest, MutatedDiffsNeverCrashAndParsesAreConsistent) {
  auto rules = policy::Rules::Load((hone::testing::SourceDir() / "data/policy/rules.yaml").string());
  ASSERT_TRUE(rules) << rules.error().ToString();
  std::vector<std::string> seeds = Seeds();
  ASSERT_GE(seeds.size(), 20u);
  Rng rng(20240601);
  int parsed = 0;
  int rejected = 0;
  constexpr int kIterations = 30000;
  for (int it = 0; it < kIterations; ++it) {
    const std::string& seed = seeds[rng.Uniform(0, static_cast<int64_t>(seeds.size()) - 1)];
    std::string input = Mutate(rng, seed, seeds);
    auto d = ParseDiff(input);
    if (!d) {
      ++rejected;
      ASSERT_FALSE(d.error().message.empty());
      ASSERT_TRUE(d.error().Get("kind") == "syntax" || d.error().Get("kind") == "binary") << d.error().ToString();
      continue;
    }
    ++parsed;
    ASSERT_FALSE(d->files.empty());
    int added = 0;
    int removed = 0;
    for (const FileDiff& f : d->files) {
      added += f.added;
      removed += f.removed;
      if (!f.git) {
        ASSERT_FALSE(f.hunks.empty());
      }
    }
    ASSERT_EQ(added, d->added);
    ASSERT_EQ(removed, d->removed);
    (void)CheckDiff(*d, *rules);
    (void)TouchedPaths(*d, GuessStrip(*d));
    (void)DiffStat(*d);
    // Parsing is a function of the text.
    auto again = ParseDiff(input);
    ASSERT_TRUE(again);
    ASSERT_EQ(again->files.size(), d->files.size());
  }
  std::printf("diff fuzz: %d inputs, %d parsed, %d rejected\n", kIterations, parsed, rejected);
  EXPECT_GT(parsed, 0);
  EXPECT_GT(rejected, 0);
}

}  // namespace
}  // namespace hone::patch
