#include "patch/validate.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <set>

#include "core/strings.h"
#include "policy/paths.h"
#include "sys/files.h"

namespace hone::patch {
namespace {

bool IsModeChange(const FileDiff& f) {
  auto unusual = [](uint32_t m) { return m != 0 && m != kModeRegular; };
  if (f.old_mode != 0 && f.new_mode != 0 && f.old_mode != f.new_mode) return true;
  return unusual(f.new_mode) || (f.is_deleted ? false : unusual(f.old_mode));
}

}  // namespace

std::optional<Violation> CheckDiffSize(uint64_t bytes, const policy::Rules& rules) {
  const auto& size = rules.patch_size;
  if (bytes > size.max_bytes) {
    return Violation{size.info.id, "the diff is " + HumanBytes(bytes) + " (limit " + HumanBytes(size.max_bytes) + ")"};
  }
  return std::nullopt;
}

std::optional<Violation> CheckDiff(const Diff& diff, const policy::Rules& rules) {
  if (auto v = CheckDiffSize(diff.bytes, rules)) return v;
  const auto& size = rules.patch_size;
  if (static_cast<int64_t>(diff.files.size()) > size.max_files) {
    return Violation{size.info.id, "the diff touches " + std::to_string(diff.files.size()) + " files (limit " +
                                       std::to_string(size.max_files) + ")"};
  }
  if (diff.added + diff.removed > size.max_changed_lines) {
    return Violation{size.info.id, "the diff changes " + std::to_string(diff.added + diff.removed) + " lines (limit " +
                                       std::to_string(size.max_changed_lines) + ")"};
  }
  for (const FileDiff& f : diff.files) {
    for (const auto* names : {&f.prefixed_names, &f.root_names}) {
      for (const std::string& n : *names) {
        if (auto p = policy::CheckRepoPath(n)) return Violation{p->rule_id, p->message};
      }
    }
  }
  for (const FileDiff& f : diff.files) {
    std::string where = "line " + std::to_string(f.line);
    if (f.new_mode == kModeSymlink || f.old_mode == kModeSymlink) {
      return Violation{policy::kRuleSymlink, "the file at " + where + " is a symbolic link"};
    }
    if (f.new_mode == kModeGitlink || f.old_mode == kModeGitlink) {
      return Violation{rules.patch_mode.info.id, "the file at " + where + " is a submodule (gitlink)"};
    }
    if (f.is_binary && !rules.patch_binary.allow) {
      return Violation{rules.patch_binary.info.id, "the file at " + where + " is a binary patch"};
    }
    if (IsModeChange(f) && !rules.patch_mode.allow) {
      char buf[96];
      std::snprintf(buf, sizeof buf, "the file at %s changes its mode (%06o -> %06o)", where.c_str(), f.old_mode,
                    f.new_mode);
      return Violation{rules.patch_mode.info.id, buf};
    }
  }
  return std::nullopt;
}

Result<std::vector<std::string>> TouchedPaths(const Diff& diff, int strip) {
  std::set<std::string> out;
  for (const FileDiff& f : diff.files) {
    for (const std::string& n : f.prefixed_names) {
      HONE_ASSIGN_OR_RETURN(std::string p, StripPath(n, strip));
      out.insert(std::move(p));
    }
    for (const std::string& n : f.root_names) out.insert(n);
  }
  return std::vector<std::string>(out.begin(), out.end());
}

std::optional<Violation> CheckFiles(const std::vector<std::string>& paths, const policy::Rules& rules,
                                    std::string_view target) {
  for (const std::string& p : paths) {
    if (auto problem = policy::CheckRepoPath(p)) return Violation{problem->rule_id, problem->message};
  }
  for (const std::string& p : paths) {
    if (auto problem = rules.CheckPatchFile(target, p)) return Violation{problem->rule_id, problem->message};
  }
  return std::nullopt;
}

std::optional<Violation> CheckTree(const std::filesystem::path& root, const std::vector<std::string>& paths) {
  for (const std::string& p : paths) {
    std::filesystem::path cur = root;
    std::string prefix;
    for (const std::string& component : Split(p, '/')) {
      cur /= component;
      prefix += (prefix.empty() ? "" : "/") + component;
      struct stat st;
      if (lstat(cur.c_str(), &st) != 0) break;  // a new file or directory: nothing to follow
      if (S_ISLNK(st.st_mode)) {
        char target[4096];
        ssize_t n = readlink(cur.c_str(), target, sizeof target - 1);
        std::string shown = n > 0 ? std::string(target, static_cast<size_t>(n)) : "?";
        std::string msg = prefix == p
                              ? "'" + p + "' is a symbolic link (-> " + shown + ")"
                              : "'" + p + "' goes through the symbolic link '" + prefix + "' (-> " + shown + ")";
        return Violation{policy::kRuleSymlink, msg};
      }
      if (!S_ISDIR(st.st_mode)) break;
    }
  }
  return std::nullopt;
}

int GuessStrip(const Diff& diff) {
  bool any = false;
  for (const FileDiff& f : diff.files) {
    for (const std::string& n : f.prefixed_names) {
      any = true;
      if (n.size() < 3 || n[1] != '/') return 0;
    }
  }
  return any ? 1 : 0;
}

Result<policy::PatchFacts> Summarize(std::string_view diff_text, const std::string& target,
                                     const policy::Rules* rules) {
  HONE_ASSIGN_OR_RETURN(Diff diff, ParseDiff(diff_text));
  policy::PatchFacts facts;
  facts.target = target;
  facts.diff_sha256 = sys::Sha256Hex(diff_text);
  facts.diff_bytes = diff_text.size();
  facts.lines_added = diff.added;
  facts.lines_removed = diff.removed;
  auto paths = TouchedPaths(diff, GuessStrip(diff));
  if (rules) {
    for (int strip : {GuessStrip(diff), 1, 0, 2, 3, 4}) {
      auto at = TouchedPaths(diff, strip);
      if (at && !CheckFiles(*at, *rules, target)) {
        paths = std::move(at);
        break;
      }
    }
  }
  if (!paths) paths = TouchedPaths(diff, 0);
  if (paths) facts.files = std::move(*paths);
  for (const FileDiff& f : diff.files) {
    facts.binary = facts.binary || f.is_binary;
    bool link = f.new_mode == kModeSymlink || f.old_mode == kModeSymlink;
    facts.symlink = facts.symlink || link;
    facts.mode_change = facts.mode_change || (!link && IsModeChange(f));
  }
  return facts;
}

Violation ParseViolation(const Error& parse_error, const policy::Rules& rules) {
  if (parse_error.Get("kind") == "binary") return Violation{rules.patch_binary.info.id, parse_error.message};
  return Violation{policy::kRuleNotADiff, parse_error.message};
}

}  // namespace hone::patch
