#include "patch/diff.h"

#include <algorithm>
#include <charconv>

#include "core/strings.h"

namespace hone::patch {
namespace {

bool StartsWith(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

std::string_view StripCr(std::string_view s) {
  if (!s.empty() && s.back() == '\r') s.remove_suffix(1);
  return s;
}

Error SyntaxError(int64_t line, const std::string& what) {
  Error e{ErrorCode::kInvalidArgument, "not a valid unified diff: line " + std::to_string(line) + ": " + what, {}};
  e.With("kind", "syntax").With("line", std::to_string(line));
  return e;
}

// Decodes a C-style quoted name as git writes it ("a/sp\303\244ce\tx"). `s` starts at
// the opening quote; on success `consumed` is the length including both quotes.
Result<std::string> Unquote(std::string_view s, size_t& consumed) {
  std::string out;
  size_t i = 1;
  while (i < s.size()) {
    char c = s[i];
    if (c == '"') {
      consumed = i + 1;
      return out;
    }
    if (c != '\\') {
      out += c;
      ++i;
      continue;
    }
    if (++i >= s.size()) break;
    char e = s[i];
    switch (e) {
      case 'a':
        out += '\a';
        ++i;
        break;
      case 'b':
        out += '\b';
        ++i;
        break;
      case 'f':
        out += '\f';
        ++i;
        break;
      case 'n':
        out += '\n';
        ++i;
        break;
      case 'r':
        out += '\r';
        ++i;
        break;
      case 't':
        out += '\t';
        ++i;
        break;
      case 'v':
        out += '\v';
        ++i;
        break;
      case '"':
        out += '"';
        ++i;
        break;
      case '\\':
        out += '\\';
        ++i;
        break;
      default: {
        if (e < '0' || e > '3' || i + 2 >= s.size()) return InvalidArgument("bad escape in quoted name");
        int v = 0;
        for (int k = 0; k < 3; ++k) {
          char d = s[i + static_cast<size_t>(k)];
          if (d < '0' || d > '7') return InvalidArgument("bad octal escape in quoted name");
          v = v * 8 + (d - '0');
        }
        out += static_cast<char>(v);
        i += 3;
      }
    }
  }
  return InvalidArgument("unterminated quoted name");
}

// The name on a "--- " / "+++ " line: quoted, or up to a tab (diff -u appends a
// timestamp after a tab; git appends a tab to names containing spaces).
Result<std::string> HeaderName(std::string_view rest) {
  rest = StripCr(rest);
  if (!rest.empty() && rest.front() == '"') {
    size_t used = 0;
    return Unquote(rest, used);
  }
  size_t tab = rest.find('\t');
  if (tab != std::string_view::npos) rest = rest.substr(0, tab);
  return std::string(rest);
}

std::string_view AfterFirstSlash(std::string_view s) {
  size_t slash = s.find('/');
  return slash == std::string_view::npos ? std::string_view() : s.substr(slash + 1);
}

// The two names of a "diff --git A B" line. Unquoted names may contain spaces, so like
// git we accept the split whose halves name the same file after their prefix; a
// rename whose names differ leaves the names to its rename headers.
void GitHeaderNames(std::string_view rest, std::vector<std::string>& out) {
  rest = StripCr(rest);
  if (rest.empty()) return;
  std::string first;
  std::string_view tail;
  if (rest.front() == '"') {
    size_t used = 0;
    auto q = Unquote(rest, used);
    if (!q || used >= rest.size() || rest[used] != ' ') return;
    first = *q;
    tail = rest.substr(used + 1);
  } else if (size_t q = rest.find(" \""); q != std::string_view::npos) {
    first = std::string(rest.substr(0, q));
    tail = rest.substr(q + 1);
  } else {
    // Equal names after equal-length prefixes split at the middle.
    size_t mid = rest.size() / 2;
    if (rest.size() % 2 == 1 && rest[mid] == ' ' &&
        AfterFirstSlash(rest.substr(0, mid)) == AfterFirstSlash(rest.substr(mid + 1))) {
      out.emplace_back(rest.substr(0, mid));
      out.emplace_back(rest.substr(mid + 1));
      return;
    }
    if (rest.find(' ') == rest.rfind(' ') && rest.find(' ') != std::string_view::npos) {
      size_t sp = rest.find(' ');
      out.emplace_back(rest.substr(0, sp));
      out.emplace_back(rest.substr(sp + 1));
    }
    return;
  }
  std::string second;
  if (!tail.empty() && tail.front() == '"') {
    size_t used = 0;
    auto q = Unquote(tail, used);
    if (!q) return;
    second = *q;
  } else {
    second = std::string(tail);
  }
  out.push_back(std::move(first));
  out.push_back(std::move(second));
}

// "100644" -> 0100644; 0 on anything else.
uint32_t ParseMode(std::string_view s) {
  s = Trim(StripCr(s));
  if (s.empty() || s.size() > 7) return 0;
  uint32_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '7') return 0;
    v = v * 8 + static_cast<uint32_t>(c - '0');
  }
  return v;
}

bool ParseNumber(std::string_view& s, int64_t& out) {
  size_t n = 0;
  while (n < s.size() && n < 10 && s[n] >= '0' && s[n] <= '9') ++n;
  if (n == 0 || (n < s.size() && s[n] >= '0' && s[n] <= '9')) return false;
  auto r = std::from_chars(s.data(), s.data() + n, out);
  if (r.ec != std::errc()) return false;
  s.remove_prefix(n);
  return true;
}

// "-a[,b] +c[,d]" from "@@ -a,b +c,d @@ context".
bool ParseHunkHeader(std::string_view line, Hunk& h) {
  std::string_view s = line.substr(3);
  if (s.empty() || s.front() != '-') return false;
  s.remove_prefix(1);
  if (!ParseNumber(s, h.old_start)) return false;
  h.old_count = 1;
  if (!s.empty() && s.front() == ',') {
    s.remove_prefix(1);
    if (!ParseNumber(s, h.old_count)) return false;
  }
  if (s.size() < 2 || s[0] != ' ' || s[1] != '+') return false;
  s.remove_prefix(2);
  if (!ParseNumber(s, h.new_start)) return false;
  h.new_count = 1;
  if (!s.empty() && s.front() == ',') {
    s.remove_prefix(1);
    if (!ParseNumber(s, h.new_count)) return false;
  }
  return StartsWith(s, " @@");
}

class Parser {
 public:
  explicit Parser(std::string_view text) {
    size_t start = 0;
    while (start < text.size()) {
      size_t nl = text.find('\n', start);
      if (nl == std::string_view::npos) nl = text.size();
      lines_.push_back(text.substr(start, nl - start));
      start = nl + 1;
    }
  }

  Result<Diff> Run() {
    Diff diff;
    while (i_ < lines_.size()) {
      std::string_view l = lines_[i_];
      if (StartsWith(l, "diff --git ")) {
        HONE_ASSIGN_OR_RETURN(FileDiff f, GitFile());
        diff.files.push_back(std::move(f));
      } else if (StartsWith(l, "--- ") && i_ + 1 < lines_.size() && StartsWith(lines_[i_ + 1], "+++ ")) {
        HONE_ASSIGN_OR_RETURN(FileDiff f, PlainFile());
        diff.files.push_back(std::move(f));
      } else if (StartsWith(l, "@@ ")) {
        return Fail(SyntaxError(LineNo(), "a hunk without a file header"));
      } else if (StartsWith(l, "GIT binary patch")) {
        return Fail(SyntaxError(LineNo(), "binary data without a file header"));
      } else {
        ++i_;  // a mail header, the commit message, a diffstat or trailing garbage
      }
    }
    if (diff.files.empty()) return Fail(SyntaxError(1, "no file header (diff --git or ---/+++) found"));
    for (const FileDiff& f : diff.files) {
      diff.added += f.added;
      diff.removed += f.removed;
    }
    return diff;
  }

 private:
  int64_t LineNo() const { return static_cast<int64_t>(i_) + 1; }

  Result<FileDiff> GitFile() {
    FileDiff f;
    f.git = true;
    f.line = LineNo();
    std::vector<std::string> header_names;
    GitHeaderNames(lines_[i_].substr(11), header_names);
    ++i_;
    bool have_minus_plus = false;
    while (i_ < lines_.size()) {
      std::string_view l = StripCr(lines_[i_]);
      if (StartsWith(l, "old mode ")) {
        f.old_mode = ParseMode(l.substr(9));
      } else if (StartsWith(l, "new mode ")) {
        f.new_mode = ParseMode(l.substr(9));
      } else if (StartsWith(l, "deleted file mode ")) {
        f.is_deleted = true;
        f.old_mode = ParseMode(l.substr(18));
      } else if (StartsWith(l, "new file mode ")) {
        f.is_new = true;
        f.new_mode = ParseMode(l.substr(14));
      } else if (StartsWith(l, "rename from ") || StartsWith(l, "rename to ") || StartsWith(l, "copy from ") ||
                 StartsWith(l, "copy to ")) {
        bool rename = StartsWith(l, "rename ");
        (rename ? f.is_rename : f.is_copy) = true;
        std::string_view rest = l.substr(l.find(' ', rename ? 7 : 5) + 1);
        auto name = HeaderName(rest);
        if (!name) return Fail(SyntaxError(LineNo(), name.error().message));
        f.root_names.push_back(std::move(*name));
      } else if (StartsWith(l, "similarity index ") || StartsWith(l, "dissimilarity index ") ||
                 StartsWith(l, "index ")) {
        // Informational (blob ids are used by git apply --3way itself).
      } else if (StartsWith(l, "--- ")) {
        if (i_ + 1 >= lines_.size() || !StartsWith(lines_[i_ + 1], "+++ ")) {
          return Fail(SyntaxError(LineNo(), "'---' without a '+++' line"));
        }
        HONE_TRY(Names(l.substr(4), lines_[i_ + 1].substr(4), f));
        i_ += 2;
        have_minus_plus = true;
        break;
      } else if (StartsWith(l, "Binary files ")) {
        f.is_binary = true;
        ++i_;
        break;
      } else if (StartsWith(l, "GIT binary patch")) {
        f.is_binary = true;
        ++i_;
        while (i_ < lines_.size() && !StartsWith(lines_[i_], "diff --git ")) ++i_;
        break;
      } else {
        break;  // end of the extended headers
      }
      ++i_;
    }
    if (!have_minus_plus) {
      if (header_names.size() == 2) {
        f.old_path = f.is_new ? "/dev/null" : header_names[0];
        f.new_path = f.is_deleted ? "/dev/null" : header_names[1];
      } else if (!f.is_rename && !f.is_copy) {
        return Fail(SyntaxError(f.line, "cannot tell which file this 'diff --git' header names"));
      }
    }
    for (std::string& n : header_names) f.prefixed_names.push_back(std::move(n));
    AddPrefixed(f);
    if (f.old_path == "/dev/null") f.is_new = true;
    if (f.new_path == "/dev/null") f.is_deleted = true;
    if (f.is_new && f.is_deleted) return Fail(SyntaxError(f.line, "a file both created and deleted"));
    if (f.is_binary) return f;
    HONE_TRY(Hunks(f));
    bool header_only = f.is_rename || f.is_copy || f.is_new || f.is_deleted || f.old_mode != 0 || f.new_mode != 0;
    if (f.hunks.empty() && !header_only) return Fail(SyntaxError(f.line, "a file with no hunks and no header change"));
    if (f.hunks.empty() && have_minus_plus) return Fail(SyntaxError(f.line, "'---'/'+++' without any hunk"));
    return f;
  }

  Result<FileDiff> PlainFile() {
    FileDiff f;
    f.line = LineNo();
    HONE_TRY(Names(lines_[i_].substr(4), lines_[i_ + 1].substr(4), f));
    i_ += 2;
    AddPrefixed(f);
    f.is_new = f.old_path == "/dev/null";
    f.is_deleted = f.new_path == "/dev/null";
    if (f.is_new && f.is_deleted) return Fail(SyntaxError(f.line, "a file both created and deleted"));
    HONE_TRY(Hunks(f));
    if (f.hunks.empty()) return Fail(SyntaxError(f.line, "'---'/'+++' without any hunk"));
    return f;
  }

  // The names on a "---" / "+++" pair (the current line and the next).
  Status Names(std::string_view minus, std::string_view plus, FileDiff& f) const {
    auto old_name = HeaderName(minus);
    if (!old_name) return Fail(SyntaxError(LineNo(), old_name.error().message));
    auto new_name = HeaderName(plus);
    if (!new_name) return Fail(SyntaxError(LineNo() + 1, new_name.error().message));
    f.old_path = std::move(*old_name);
    f.new_path = std::move(*new_name);
    return Ok();
  }

  static void AddPrefixed(FileDiff& f) {
    for (const std::string* p : {&f.old_path, &f.new_path}) {
      if (p->empty() || *p == "/dev/null") continue;
      if (std::find(f.prefixed_names.begin(), f.prefixed_names.end(), *p) == f.prefixed_names.end()) {
        f.prefixed_names.push_back(*p);
      }
    }
  }

  Status Hunks(FileDiff& f) {
    while (i_ < lines_.size() && StartsWith(lines_[i_], "@@ ")) {
      Hunk h;
      if (!ParseHunkHeader(StripCr(lines_[i_]), h)) return Fail(SyntaxError(LineNo(), "malformed hunk header"));
      if (h.old_count == 0 && h.new_count == 0) return Fail(SyntaxError(LineNo(), "an empty hunk"));
      const int64_t header_line = LineNo();
      ++i_;
      int64_t old_left = h.old_count;
      int64_t new_left = h.new_count;
      while (old_left > 0 || new_left > 0) {
        if (i_ >= lines_.size()) {
          return Fail(SyntaxError(header_line, "hunk is truncated (" + std::to_string(old_left) + " old and " +
                                                   std::to_string(new_left) + " new lines missing)"));
        }
        std::string_view l = lines_[i_];
        char c = l.empty() ? ' ' : l.front();  // an empty line is an empty context line
        switch (c) {
          case ' ':
            --old_left;
            --new_left;
            break;
          case '-':
            --old_left;
            ++f.removed;
            break;
          case '+':
            --new_left;
            ++f.added;
            break;
          case '\\':
            break;  // "\ No newline at end of file"
          default:
            return Fail(SyntaxError(LineNo(), "unexpected line inside a hunk (expected ' ', '+', '-' or '\\')"));
        }
        if (old_left < 0 || new_left < 0) {
          return Fail(SyntaxError(header_line, "hunk has more lines than its header says"));
        }
        ++i_;
      }
      while (i_ < lines_.size() && StartsWith(lines_[i_], "\\")) ++i_;
      f.hunks.push_back(h);
    }
    return Ok();
  }

  std::vector<std::string_view> lines_;
  size_t i_ = 0;
};

}  // namespace

Result<Diff> ParseDiff(std::string_view text) {
  if (text.find('\0') != std::string_view::npos) {
    Error e{ErrorCode::kInvalidArgument, "the diff contains NUL bytes (binary data)", {}};
    e.With("kind", "binary");
    return Fail(std::move(e));
  }
  Parser p(text);
  HONE_ASSIGN_OR_RETURN(Diff d, p.Run());
  d.bytes = text.size();
  return d;
}

Result<std::string> StripPath(std::string_view path, int strip) {
  std::string_view rest = path;
  for (int k = 0; k < strip; ++k) {
    size_t slash = rest.find('/');
    if (slash == std::string_view::npos) {
      return InvalidArgument("'" + std::string(path.substr(0, 200)) + "' has fewer than " + std::to_string(strip + 1) +
                             " components");
    }
    rest.remove_prefix(slash + 1);
  }
  if (rest.empty())
    return InvalidArgument("'" + std::string(path.substr(0, 200)) + "' is empty after -p" + std::to_string(strip));
  return std::string(rest);
}

std::string DiffStat(const Diff& diff) {
  auto plural = [](int n, const char* one, const char* many) {
    return std::to_string(n) + " " + (n == 1 ? one : many);
  };
  std::string out = " " + plural(static_cast<int>(diff.files.size()), "file changed", "files changed");
  if (diff.added > 0 || diff.removed == 0) out += ", " + plural(diff.added, "insertion(+)", "insertions(+)");
  if (diff.removed > 0) out += ", " + plural(diff.removed, "deletion(-)", "deletions(-)");
  return out;
}

}  // namespace hone::patch
