#include "core/config.h"

#include "core/strings.h"

namespace hone {

std::optional<std::string> Config::Get(const std::string& knob) const {
  auto it = values_.find(knob);
  if (it == values_.end()) return std::nullopt;
  return it->second;
}

std::string Config::GetOr(const std::string& knob, std::string fallback) const {
  auto it = values_.find(knob);
  return it == values_.end() ? fallback : it->second;
}

Config Config::Merged(const Config& delta) const {
  Config out = *this;
  for (const auto& [k, v] : delta.values_) out.values_[k] = v;
  return out;
}

Config Config::DeltaFrom(const Config& base) const {
  Config out;
  for (const auto& [k, v] : values_) {
    auto it = base.values_.find(k);
    if (it == base.values_.end() || it->second != v) out.values_[k] = v;
  }
  return out;
}

std::string Config::ToString() const {
  if (values_.empty()) return "(stock)";
  std::string out;
  for (const auto& [k, v] : values_) {
    if (!out.empty()) out += ' ';
    out += k;
    out += '=';
    out += v;
  }
  return out;
}

std::string Config::Hash() const { return StableHash(ToString()).substr(0, 12); }

}  // namespace hone
