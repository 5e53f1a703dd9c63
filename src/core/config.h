// Config: one serving configuration as an ordered set of knob -> value strings.
//
// Knob names are the catalog's names ("threads", "flash_attn", "env:GGML_NUM_THREADS"),
// never raw flags; the target adapter maps them to a command line. Values are kept as
// the text a user would write ("on", "512", "q8_0") so that a Config prints, hashes and
// compares the same way everywhere. A Config is a value type; copying is cheap enough
// for the sizes involved (tens of knobs).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace hone {

class Config {
 public:
  Config() = default;
  Config(std::initializer_list<std::pair<const std::string, std::string>> init) : values_(init) {}

  void Set(const std::string& knob, std::string value) { values_[knob] = std::move(value); }
  void Erase(const std::string& knob) { values_.erase(knob); }
  bool Has(const std::string& knob) const { return values_.contains(knob); }
  std::optional<std::string> Get(const std::string& knob) const;
  std::string GetOr(const std::string& knob, std::string fallback) const;

  bool empty() const { return values_.empty(); }
  size_t size() const { return values_.size(); }
  const std::map<std::string, std::string>& values() const { return values_; }

  // This config with every knob of `delta` set to delta's value.
  Config Merged(const Config& delta) const;
  // The knobs whose values differ from `base` (including knobs base lacks).
  Config DeltaFrom(const Config& base) const;

  // "k1=v1 k2=v2" in knob order; "(stock)" when empty.
  std::string ToString() const;
  // Stable short id for the config (hash of ToString()).
  std::string Hash() const;

  friend bool operator==(const Config&, const Config&) = default;

 private:
  std::map<std::string, std::string> values_;  // ordered: canonical form is deterministic
};

}  // namespace hone
