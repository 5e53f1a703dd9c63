#include "policy/paths.h"

#include <cstdint>
#include <vector>

#include "core/strings.h"

namespace hone::policy {
namespace {

// True for the names git itself treats as its directory on some file system
// (".git", ".GIT", ".git." and ".git " on NTFS, the 8.3 alias "git~1").
bool IsGitDirName(std::string_view component) {
  std::string lower = ToLower(component);
  while (!lower.empty() && (lower.back() == '.' || lower.back() == ' ')) lower.pop_back();
  return lower == ".git" || lower == "git~1";
}

// Expands one level of {a,b,c} alternatives.
std::vector<std::string> ExpandBraces(std::string_view glob) {
  size_t open = glob.find('{');
  if (open == std::string_view::npos) return {std::string(glob)};
  size_t close = glob.find('}', open);
  if (close == std::string_view::npos) return {std::string(glob)};
  std::vector<std::string> out;
  std::string_view head = glob.substr(0, open);
  std::string_view tail = glob.substr(close + 1);
  for (const std::string& alt : Split(glob.substr(open + 1, close - open - 1), ',')) {
    for (std::string& rest : ExpandBraces(tail)) out.push_back(std::string(head) + alt + rest);
  }
  return out;
}

// Memoised matcher: O(|glob| * |path|) even for adversarial paths.
class Matcher {
 public:
  Matcher(std::string_view g, std::string_view p) : g_(g), p_(p), memo_((g.size() + 1) * (p.size() + 1), -1) {}
  bool Match(size_t gi, size_t pi) {
    int8_t& m = memo_[gi * (p_.size() + 1) + pi];
    if (m >= 0) return m != 0;
    m = Compute(gi, pi) ? 1 : 0;
    return m != 0;
  }

 private:
  bool Compute(size_t gi, size_t pi) {
    if (gi == g_.size()) return pi == p_.size();
    char c = g_[gi];
    if (c == '*' && gi + 1 < g_.size() && g_[gi + 1] == '*') {
      size_t after = gi + 2;
      if (after < g_.size() && g_[after] == '/') {
        // "**/": zero directories, or any run of whole directories.
        if (Match(after + 1, pi)) return true;
        for (size_t k = pi; k < p_.size(); ++k) {
          if (p_[k] == '/' && Match(after + 1, k + 1)) return true;
        }
        return false;
      }
      for (size_t k = pi; k <= p_.size(); ++k) {
        if (Match(after, k)) return true;
      }
      return false;
    }
    if (c == '*') {
      for (size_t k = pi; k <= p_.size(); ++k) {
        if (Match(gi + 1, k)) return true;
        if (k < p_.size() && p_[k] == '/') break;
      }
      return false;
    }
    if (pi == p_.size()) return false;
    if (c == '?') return p_[pi] != '/' && Match(gi + 1, pi + 1);
    return c == p_[pi] && Match(gi + 1, pi + 1);
  }

  std::string_view g_;
  std::string_view p_;
  std::vector<int8_t> memo_;
};

}  // namespace

std::optional<PathProblem> CheckRepoPath(std::string_view path) {
  auto problem = [&](const char* rule, const std::string& why) {
    std::string shown(path.substr(0, 200));
    for (char& ch : shown) {
      if (static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f) ch = '?';
    }
    return PathProblem{rule, "'" + shown + "' " + why};
  };
  if (path.empty()) return problem(kRulePathEscape, "is an empty path");
  if (path.size() > 4096) return problem(kRulePathEscape, "is longer than 4096 bytes");
  if (path.front() == '/') return problem(kRuleAbsolutePath, "is an absolute path");
  if (path.size() >= 2 && path[1] == ':') return problem(kRuleAbsolutePath, "looks like a drive-letter path");
  for (char ch : path) {
    auto u = static_cast<unsigned char>(ch);
    if (u < 0x20 || u == 0x7f) return problem(kRulePathEscape, "contains a control character");
    if (ch == '\\') return problem(kRulePathEscape, "contains a backslash");
  }
  for (const std::string& component : Split(path, '/')) {
    if (component.empty()) return problem(kRulePathEscape, "has an empty component ('//' or a trailing '/')");
    if (component == "." || component == "..") return problem(kRulePathEscape, "has a '" + component + "' component");
    if (component == "~") return problem(kRulePathEscape, "has a '~' component");
    if (IsGitDirName(component)) return problem(kRuleGitDir, "is inside the repository's .git directory");
  }
  return std::nullopt;
}

bool GlobMatch(std::string_view glob, std::string_view path) {
  for (const std::string& g : ExpandBraces(glob)) {
    Matcher m(g, path);
    if (m.Match(0, 0)) return true;
  }
  return false;
}

}  // namespace hone::policy
