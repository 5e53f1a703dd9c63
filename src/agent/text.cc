#include "agent/text.h"

namespace hone::agent {

namespace {

// Length of the valid UTF-8 sequence starting at s[i], or 0 when invalid.
size_t SeqLen(std::string_view s, size_t i) {
  auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  unsigned char c = b(i);
  if (c < 0x80) return 1;
  size_t n = 0;
  uint32_t cp = 0;
  if ((c & 0xE0) == 0xC0) {
    n = 2;
    cp = c & 0x1F;
  } else if ((c & 0xF0) == 0xE0) {
    n = 3;
    cp = c & 0x0F;
  } else if ((c & 0xF8) == 0xF0) {
    n = 4;
    cp = c & 0x07;
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    if ((b(i + k) & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (b(i + k) & 0x3F);
  }
  // Overlong forms, surrogates and out-of-range code points are invalid.
  if ((n == 2 && cp < 0x80) || (n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) || cp > 0x10FFFF ||
      (cp >= 0xD800 && cp <= 0xDFFF)) {
    return 0;
  }
  return n;
}

}  // namespace

std::string SanitizeUtf8(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    size_t n = SeqLen(s, i);
    if (n == 0) {
      out += "\xEF\xBF\xBD";
      ++i;
    } else {
      out.append(s.substr(i, n));
      i += n;
    }
  }
  return out;
}

std::string ClipUtf8(std::string_view s, size_t max_bytes) {
  std::string v = SanitizeUtf8(s);
  if (v.size() <= max_bytes) return v;
  size_t end = max_bytes;
  while (end > 0 && (static_cast<unsigned char>(v[end]) & 0xC0) == 0x80) --end;
  return v.substr(0, end);
}

std::string OneLine(std::string_view s, size_t max_bytes) {
  std::string v = SanitizeUtf8(s);
  for (char& c : v) {
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
  }
  if (v.size() <= max_bytes) return v;
  return ClipUtf8(v, max_bytes > 3 ? max_bytes - 3 : 0) + "...";
}

}  // namespace hone::agent
