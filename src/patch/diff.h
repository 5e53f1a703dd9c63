// Unified-diff parsing: the text a proposer sends (git diff, git format-patch mail,
// or diff -u output) into typed FileDiffs, with nothing applied and nothing trusted.
//
// The parser is strict where git apply is strict (hunk line counts must match their
// headers; every file needs a hunk unless it is a pure rename, mode change, binary
// or empty create/delete) and records every path string the diff names, so the
// validator can check all of them, not just the ones git would use. Text before the
// first file header (a mail's headers and message) is ignored. A diff with NUL bytes
// is refused as binary. It never asserts on input; it is fuzzed (diff_fuzzer.cc).
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"

namespace hone::patch {

struct Hunk {
  int64_t old_start = 0;
  int64_t old_count = 0;
  int64_t new_start = 0;
  int64_t new_count = 0;
};

inline constexpr uint32_t kModeRegular = 0100644;
inline constexpr uint32_t kModeExecutable = 0100755;
inline constexpr uint32_t kModeSymlink = 0120000;
inline constexpr uint32_t kModeGitlink = 0160000;

struct FileDiff {
  int64_t line = 0;                         // 1-based line of the file's header in the diff text
  bool git = false;                         // introduced by "diff --git"
  std::string old_path;                     // prefixed name ("a/x"), or "/dev/null" for a created file
  std::string new_path;                     // prefixed name ("b/x"), or "/dev/null" for a deleted file
  std::vector<std::string> prefixed_names;  // every prefixed name the headers mention
  std::vector<std::string> root_names;      // rename/copy from/to: already root-relative
  bool is_new = false;
  bool is_deleted = false;
  bool is_rename = false;
  bool is_copy = false;
  bool is_binary = false;
  uint32_t old_mode = 0;  // 0 when the diff does not say
  uint32_t new_mode = 0;
  std::vector<Hunk> hunks;
  int added = 0;
  int removed = 0;
};

struct Diff {
  std::vector<FileDiff> files;
  uint64_t bytes = 0;
  int added = 0;
  int removed = 0;
};

// Parses a unified diff. Errors are kInvalidArgument with a one-line message naming
// the line, and context "kind" = "syntax" or "binary" (NUL bytes).
Result<Diff> ParseDiff(std::string_view text);

// Removes `strip` leading components ("a/src/x.c", 1 -> "src/x.c"); kInvalidArgument
// when the path has no component left.
Result<std::string> StripPath(std::string_view path, int strip);

// " 2 files changed, 5 insertions(+), 1 deletion(-)" (git's wording).
std::string DiffStat(const Diff& diff);

}  // namespace hone::patch
