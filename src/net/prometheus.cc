#include "net/prometheus.h"

#include <cmath>
#include <limits>

#include "core/strings.h"

namespace hone::net {

std::optional<double> MetricSet::Sum(std::string_view name) const {
  std::optional<double> total;
  for (const auto& s : samples) {
    if (s.name == name) total = total.value_or(0.0) + s.value;
  }
  return total;
}

std::optional<double> MetricSet::Find(std::string_view name, const std::map<std::string, std::string>& match) const {
  for (const auto& s : samples) {
    if (s.name != name) continue;
    bool ok = true;
    for (const auto& [k, v] : match) {
      auto it = s.labels.find(k);
      ok = ok && it != s.labels.end() && it->second == v;
    }
    if (ok) return s.value;
  }
  return std::nullopt;
}

Result<MetricSet> ParsePrometheusText(std::string_view text) {
  MetricSet set;
  int line_no = 0;
  for (const std::string& raw : Split(text, '\n')) {
    ++line_no;
    std::string_view line = Trim(raw);
    if (line.empty() || line[0] == '#') continue;
    MetricSample s;
    size_t i = 0;
    while (i < line.size() && line[i] != '{' && line[i] != ' ' && line[i] != '\t') ++i;
    s.name = std::string(line.substr(0, i));
    auto bad = [&](std::string why) {
      return InvalidArgument("metrics line " + std::to_string(line_no) + ": " + why + ": '" +
                             std::string(line.substr(0, 120)) + "'");
    };
    if (s.name.empty()) return bad("no metric name");
    if (i < line.size() && line[i] == '{') {
      ++i;
      while (true) {
        while (i < line.size() && (line[i] == ' ' || line[i] == ',')) ++i;
        if (i < line.size() && line[i] == '}') {
          ++i;
          break;
        }
        size_t eq = line.find('=', i);
        if (eq == std::string_view::npos) return bad("label without '='");
        std::string key(Trim(line.substr(i, eq - i)));
        i = eq + 1;
        if (i >= line.size() || line[i] != '"') return bad("label value not quoted");
        ++i;
        std::string value;
        while (i < line.size() && line[i] != '"') {
          if (line[i] == '\\' && i + 1 < line.size()) {
            ++i;
            value += line[i] == 'n' ? '\n' : line[i];
          } else {
            value += line[i];
          }
          ++i;
        }
        if (i >= line.size()) return bad("unterminated label value");
        ++i;
        s.labels[key] = value;
      }
    }
    std::string_view rest = Trim(line.substr(i));
    std::string_view value_text = rest.substr(0, rest.find_first_of(" \t"));
    if (value_text == "+Inf" || value_text == "Inf") {
      s.value = std::numeric_limits<double>::infinity();
    } else if (value_text == "-Inf") {
      s.value = -std::numeric_limits<double>::infinity();
    } else if (value_text == "NaN") {
      s.value = std::nan("");
    } else {
      auto v = ParseDouble(value_text);
      if (!v) return bad("bad value");
      s.value = *v;
    }
    set.samples.push_back(std::move(s));
  }
  return set;
}

}  // namespace hone::net
