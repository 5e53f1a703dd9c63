// HTML escaping for text hone writes into its HTML pages (reports, fleet tables):
// names, configurations and log text come from outside and are never markup.
#pragma once

#include <string>
#include <string_view>

namespace hone {

inline std::string HtmlEscape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '&': out += "&amp;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

}  // namespace hone
