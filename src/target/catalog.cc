#include "target/catalog.h"

#include <algorithm>
#include <filesystem>

#include "core/strings.h"
#include "spec/yaml.h"

namespace hone::target {
namespace {

Result<Condition> ParseCondition(const spec::Field& f) {
  HONE_ASSIGN_OR_RETURN(std::string text, f.Str());
  Condition c;
  size_t ne = text.find("!=");
  size_t eq = text.find('=');
  if (ne != std::string::npos) {
    c.knob = std::string(Trim(text.substr(0, ne)));
    c.value = std::string(Trim(text.substr(ne + 2)));
    c.negate = true;
  } else if (eq != std::string::npos) {
    c.knob = std::string(Trim(text.substr(0, eq)));
    c.value = std::string(Trim(text.substr(eq + 1)));
  } else {
    return Fail(f.Err("expected 'knob=value' or 'knob!=value'"));
  }
  return c;
}

Result<KnobType> ParseType(const spec::Field& f) {
  HONE_ASSIGN_OR_RETURN(std::string t, f.Str());
  if (t == "int") return KnobType::kInt;
  if (t == "float") return KnobType::kFloat;
  if (t == "bool") return KnobType::kBool;
  if (t == "enum") return KnobType::kEnum;
  if (t == "string") return KnobType::kString;
  return Fail(f.Err("unknown knob type '" + t + "' (int, float, bool, enum, string)"));
}

}  // namespace

std::string_view KnobTypeName(KnobType t) {
  switch (t) {
    case KnobType::kInt: return "int";
    case KnobType::kFloat: return "float";
    case KnobType::kBool: return "bool";
    case KnobType::kEnum: return "enum";
    case KnobType::kString: return "string";
  }
  return "?";
}

Status Knob::ValidateValue(const std::string& value) const {
  auto bad = [&](const std::string& why) { return InvalidArgument("knob " + name + "=" + value + ": " + why); };
  switch (type) {
    case KnobType::kInt: {
      auto v = ParseInt(value);
      if (!v) return bad("not an integer");
      if (min && static_cast<double>(*v) < *min) return bad("below the minimum " + std::to_string(static_cast<int64_t>(*min)));
      if (max && static_cast<double>(*v) > *max) return bad("above the maximum " + std::to_string(static_cast<int64_t>(*max)));
      return Ok();
    }
    case KnobType::kFloat: {
      auto v = ParseDouble(value);
      if (!v) return bad("not a number");
      if ((min && *v < *min) || (max && *v > *max)) return bad("out of range");
      return Ok();
    }
    case KnobType::kBool:
      if (!ParseBool(value)) return bad("not a boolean (on/off)");
      return Ok();
    case KnobType::kEnum:
      if (std::find(choices.begin(), choices.end(), value) == choices.end()) {
        return bad("not one of: " + Join(choices, ", "));
      }
      return Ok();
    case KnobType::kString:
      return Ok();
  }
  return Ok();
}

bool IsHostValue(std::string_view expr) { return expr == "cores" || expr == "cpus"; }

Result<KnobCatalog> KnobCatalog::Load(const std::string& path) {
  HONE_ASSIGN_OR_RETURN(spec::Field root, spec::Field::LoadFile(path));
  HONE_TRY(root.RequireMap());
  HONE_TRY(root.CheckKeys({"framework", "versions", "source", "knobs"}));
  HONE_ASSIGN_OR_RETURN(std::string framework, root["framework"].Str());
  HONE_ASSIGN_OR_RETURN(std::string versions, root["versions"].StrOr("*"));
  return FromKnobList(root["knobs"], {.framework = framework, .versions = versions, .path = path});
}

Result<KnobCatalog> KnobCatalog::FromKnobList(const spec::Field& knobs, const KnobListOptions& options) {
  KnobCatalog cat;
  cat.path_ = options.path;
  cat.framework_ = options.framework;
  cat.versions_ = options.versions;
  const std::string& path = options.path;
  if (!knobs.is_seq()) return Fail(knobs.Err("expected a list of knobs"));
  for (const spec::Field& k : knobs.Items()) {
    HONE_TRY(k.CheckKeys({"name", "flag", "negative_flag", "env", "type", "choices", "min", "max", "search",
                          "default", "category", "accuracy_risk", "requires", "conflicts", "applies_to", "why",
                          "artifact", "searchable", "auto_means", "effect_scale"}));
    Knob knob;
    HONE_ASSIGN_OR_RETURN(knob.name, k["name"].Str());
    HONE_ASSIGN_OR_RETURN(knob.flag, k["flag"].StrOr(""));
    HONE_ASSIGN_OR_RETURN(knob.negative_flag, k["negative_flag"].StrOr(""));
    HONE_ASSIGN_OR_RETURN(knob.env, k["env"].StrOr(""));
    HONE_ASSIGN_OR_RETURN(knob.type, ParseType(k["type"]));
    HONE_ASSIGN_OR_RETURN(knob.choices, k["choices"].StrList());
    if (k["min"].defined()) {
      HONE_ASSIGN_OR_RETURN(double v, k["min"].Double());
      knob.min = v;
    }
    if (k["max"].defined()) {
      HONE_ASSIGN_OR_RETURN(double v, k["max"].Double());
      knob.max = v;
    }
    HONE_ASSIGN_OR_RETURN(knob.search_values, k["search"].StrList());
    HONE_ASSIGN_OR_RETURN(knob.default_value, k["default"].StrOr(""));
    HONE_ASSIGN_OR_RETURN(knob.auto_means, k["auto_means"].StrOr(""));
    if (!knob.auto_means.empty() && knob.default_value.empty()) {
      return Fail(k["auto_means"].Err("auto_means says what the default resolves to: the knob needs a default"));
    }
    HONE_ASSIGN_OR_RETURN(knob.category,
                          options.default_category.empty() ? k["category"].Str() : k["category"].StrOr(options.default_category));
    if (k["effect_scale"].defined()) {
      HONE_ASSIGN_OR_RETURN(double v, k["effect_scale"].Double());
      if (!(v > 0) || v > 2) return Fail(k["effect_scale"].Err("must be in (0, 2]: the sd of a log objective ratio"));
      knob.effect_scale = v;
    }
    HONE_ASSIGN_OR_RETURN(std::string risk, k["accuracy_risk"].StrOr("none"));
    auto parsed_risk = ParseAccuracyRisk(risk);
    if (!parsed_risk) return Fail(k["accuracy_risk"].Err("must be none, low, medium or high"));
    knob.accuracy_risk = *parsed_risk;
    HONE_ASSIGN_OR_RETURN(knob.applies_to, k["applies_to"].StrOr("any"));
    HONE_ASSIGN_OR_RETURN(knob.why, k["why"].StrOr(""));
    HONE_ASSIGN_OR_RETURN(knob.artifact, k["artifact"].BoolOr(false));
    HONE_ASSIGN_OR_RETURN(knob.searchable, k["searchable"].BoolOr(true));
    for (const spec::Field& c : k["requires"].Items()) {
      HONE_ASSIGN_OR_RETURN(Condition cond, ParseCondition(c));
      knob.requires_.push_back(cond);
    }
    for (const spec::Field& c : k["conflicts"].Items()) {
      HONE_ASSIGN_OR_RETURN(Condition cond, ParseCondition(c));
      knob.conflicts.push_back(cond);
    }
    if (knob.flag.empty() && knob.env.empty() && !knob.artifact && !options.placeholders.contains(knob.name)) {
      return Fail(k.Err("knob '" + knob.name + "' needs a flag, an env or artifact: true (in target.knobs: or a {" +
                        knob.name + "} in target.command)"));
    }
    if (knob.type == KnobType::kEnum && knob.choices.empty()) return Fail(k.Err("enum knob without choices"));
    for (const std::string& v : knob.search_values) {
      if (auto s = knob.ValidateValue(v); !s) return Fail(k["search"].Err(s.error().message));
    }
    if (cat.Find(knob.name)) return Fail(k["name"].Err("duplicate knob '" + knob.name + "'"));
    cat.knobs_.push_back(std::move(knob));
  }
  // Conditions must name knobs that exist; so must an auto_means that is no host value.
  for (const Knob& knob : cat.knobs_) {
    if (!knob.auto_means.empty() && !IsHostValue(knob.auto_means) && !cat.Find(knob.auto_means)) {
      return InvalidArgument(path + ": knob " + knob.name + ": auto_means '" + knob.auto_means +
                             "' is neither a host value (" + std::string(kHostValues) + ") nor a knob");
    }
    // A chain of knobs must end at a host value or a knob without auto_means.
    std::vector<std::string> chain = {knob.name};
    for (const Knob* at = &knob; !at->auto_means.empty() && !IsHostValue(at->auto_means);) {
      at = cat.Find(at->auto_means);
      if (!at) break;  // an unknown knob: refused on its own line
      chain.push_back(at->name);
      if (std::find(chain.begin(), chain.end() - 1, at->name) != chain.end() - 1) {
        return InvalidArgument(path + ": knob " + knob.name + ": auto_means " + Join(chain, " -> ") +
                               " is a cycle: the default never resolves");
      }
    }
    for (const auto* list : {&knob.requires_, &knob.conflicts}) {
      for (const Condition& c : *list) {
        if (!cat.Find(c.knob)) {
          return InvalidArgument(path + ": knob " + knob.name + " refers to unknown knob '" + c.knob + "'");
        }
      }
    }
  }
  return cat;
}

std::string_view AccuracyRiskName(AccuracyRisk risk) {
  switch (risk) {
    case AccuracyRisk::kNone: return "none";
    case AccuracyRisk::kLow: return "low";
    case AccuracyRisk::kMedium: return "medium";
    case AccuracyRisk::kHigh: return "high";
  }
  return "?";
}

Result<AccuracyRisk> ParseAccuracyRisk(std::string_view name) {
  for (AccuracyRisk r : {AccuracyRisk::kNone, AccuracyRisk::kLow, AccuracyRisk::kMedium, AccuracyRisk::kHigh}) {
    if (AccuracyRiskName(r) == name) return r;
  }
  return InvalidArgument("unknown accuracy risk '" + std::string(name) + "'");
}

bool ChangesNumerics(AccuracyRisk risk) {
  switch (risk) {
    case AccuracyRisk::kNone:
    case AccuracyRisk::kLow:
      return false;
    case AccuracyRisk::kMedium:
    case AccuracyRisk::kHigh:
      return true;
  }
  return false;
}

bool KnobCatalog::ChangesNumerics(const Config& delta) const {
  for (const auto& [k, v] : delta.values()) {
    const Knob* knob = Find(k);
    if (knob && target::ChangesNumerics(knob->accuracy_risk)) return true;
  }
  return false;
}

const Knob* KnobCatalog::Find(const std::string& name) const {
  for (const Knob& k : knobs_) {
    if (k.name == name) return &k;
  }
  return nullptr;
}

std::string KnobCatalog::ValueOf(const Config& config, const Knob& knob) const {
  return config.GetOr(knob.name, knob.default_value);
}

bool KnobCatalog::Holds(const Config& config, const Condition& c) const {
  const Knob* k = Find(c.knob);
  std::string v = k ? ValueOf(config, *k) : config.GetOr(c.knob, "");
  // Booleans compare by meaning ("on" == "true").
  if (k && k->type == KnobType::kBool) {
    auto a = ParseBool(v);
    auto b = ParseBool(c.value);
    if (a && b) return (*a == *b) != c.negate;
  }
  return (v == c.value) != c.negate;
}

Status KnobCatalog::Validate(const Config& config) const {
  for (const auto& [name, value] : config.values()) {
    const Knob* k = Find(name);
    if (!k) return InvalidArgument("unknown knob '" + name + "' for " + framework_ + " (see " + path_ + ")");
    HONE_TRY(k->ValidateValue(value));
  }
  for (const auto& [name, value] : config.values()) {
    const Knob* k = Find(name);
    for (const Condition& c : k->requires_) {
      if (!Holds(config, c)) {
        return InvalidArgument("knob " + name + "=" + value + " requires " + c.ToString());
      }
    }
    for (const Condition& c : k->conflicts) {
      if (Holds(config, c)) {
        return InvalidArgument("knob " + name + "=" + value + " conflicts with " + c.ToString());
      }
    }
  }
  return Ok();
}

int CompareVersions(const std::string& a, const std::string& b) {
  auto pa = Split(a, '.');
  auto pb = Split(b, '.');
  for (size_t i = 0; i < std::max(pa.size(), pb.size()); ++i) {
    int64_t x = i < pa.size() ? ParseInt(pa[i]).value_or(0) : 0;
    int64_t y = i < pb.size() ? ParseInt(pb[i]).value_or(0) : 0;
    if (x != y) return x < y ? -1 : 1;
  }
  return 0;
}

bool VersionInRange(const std::string& version, const std::string& range) {
  if (Trim(range) == "*" || Trim(range).empty()) return true;
  for (const std::string& part : Split(range, ',')) {
    std::string_view p = Trim(part);
    int cmp;
    if (p.starts_with(">=")) {
      cmp = CompareVersions(version, std::string(Trim(p.substr(2))));
      if (cmp < 0) return false;
    } else if (p.starts_with("<=")) {
      if (CompareVersions(version, std::string(Trim(p.substr(2)))) > 0) return false;
    } else if (p.starts_with(">")) {
      if (CompareVersions(version, std::string(Trim(p.substr(1)))) <= 0) return false;
    } else if (p.starts_with("<")) {
      if (CompareVersions(version, std::string(Trim(p.substr(1)))) >= 0) return false;
    } else if (p.starts_with("==")) {
      if (CompareVersions(version, std::string(Trim(p.substr(2)))) != 0) return false;
    } else if (CompareVersions(version, std::string(p)) != 0) {
      return false;
    }
  }
  return true;
}

Result<KnobCatalog> LoadCatalogFor(const std::string& catalogs_dir, const std::string& framework,
                                   const std::string& version) {
  std::filesystem::path dir = std::filesystem::path(catalogs_dir) / framework;
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) {
    return NotFound("no knob catalog for framework '" + framework + "' in " + catalogs_dir);
  }
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    if (entry.path().extension() == ".yaml") files.push_back(entry.path().string());
  }
  std::sort(files.begin(), files.end());
  std::optional<KnobCatalog> newest;
  for (const std::string& f : files) {
    HONE_ASSIGN_OR_RETURN(KnobCatalog cat, KnobCatalog::Load(f));
    if (VersionInRange(version, cat.versions())) return cat;
    newest = std::move(cat);
  }
  if (!newest) return NotFound("no knob catalog files in " + dir.string());
  return *newest;
}

}  // namespace hone::target
