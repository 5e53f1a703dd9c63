#include "target/adapter.h"

#include "core/strings.h"
#include "spec/yaml.h"

namespace hone::target {

std::string_view FailureKindName(FailureKind k) {
  switch (k) {
    case FailureKind::kNone: return "none";
    case FailureKind::kBadFlag: return "bad_flag";
    case FailureKind::kOutOfMemory: return "out_of_memory";
    case FailureKind::kModelLoad: return "model_load";
    case FailureKind::kPortInUse: return "port_in_use";
    case FailureKind::kContextCreate: return "context_create";
    case FailureKind::kUnsupported: return "unsupported";
    case FailureKind::kCrashed: return "crashed";
    case FailureKind::kExited: return "exited";
    case FailureKind::kHealthTimeout: return "health_timeout";
    case FailureKind::kNotFound: return "not_found";
  }
  return "unknown";
}

namespace {

Result<FailureKind> ParseKind(const spec::Field& f) {
  HONE_ASSIGN_OR_RETURN(std::string s, f.Str());
  for (FailureKind k : {FailureKind::kBadFlag, FailureKind::kOutOfMemory, FailureKind::kModelLoad,
                        FailureKind::kPortInUse, FailureKind::kContextCreate, FailureKind::kUnsupported,
                        FailureKind::kCrashed, FailureKind::kExited}) {
    if (FailureKindName(k) == s) return k;
  }
  return Fail(f.Err("unknown failure kind '" + s + "'"));
}

}  // namespace

Result<std::vector<FailureRule>> LoadFailureRules(const std::string& path, const std::string& framework) {
  HONE_ASSIGN_OR_RETURN(spec::Field root, spec::Field::LoadFile(path));
  spec::Field list = root[framework];
  if (!list.is_seq()) return Fail(list.Err("no failure rules for '" + framework + "'"));
  std::vector<FailureRule> rules;
  for (const spec::Field& r : list.Items()) {
    HONE_TRY(r.CheckKeys({"kind", "patterns", "hint"}));
    FailureRule rule;
    HONE_ASSIGN_OR_RETURN(rule.kind, ParseKind(r["kind"]));
    HONE_ASSIGN_OR_RETURN(rule.patterns, r["patterns"].StrList());
    for (auto& p : rule.patterns) p = ToLower(p);
    HONE_ASSIGN_OR_RETURN(rule.hint, r["hint"].StrOr(""));
    rules.push_back(std::move(rule));
  }
  return rules;
}

Classification Classify(const std::vector<FailureRule>& rules, std::string_view log, int exit_code, int signal) {
  // Rules are tried in priority order (data/failures.yaml orders them so that a
  // specific cause beats a generic one: a context failure also ends in "model loading
  // error"); within a rule the latest matching line is the excerpt.
  auto lines = Split(log, '\n');
  for (const FailureRule& rule : rules) {
    for (auto line = lines.rbegin(); line != lines.rend(); ++line) {
      std::string lower = ToLower(*line);
      for (const std::string& p : rule.patterns) {
        if (Contains(lower, p)) return Classification{rule.kind, rule.hint, std::string(Trim(*line))};
      }
    }
  }
  Classification c;
  c.excerpt = LastLines(log, 3);
  if (signal != 0) {
    c.kind = FailureKind::kCrashed;
    c.hint = "the server was killed by a signal";
  } else if (exit_code != 0) {
    c.kind = FailureKind::kExited;
    c.hint = "the server exited with status " + std::to_string(exit_code);
  }
  return c;
}

std::string LaunchSpec::ShellCommand() const {
  std::string out;
  for (const auto& [k, v] : env) out += k + "=" + ShellQuote(v) + " ";
  return out + ShellJoin(argv);
}

Status AppendKnobs(const KnobCatalog& catalog, const Config& config, LaunchSpec& spec, bool validate) {
  if (validate) HONE_TRY(catalog.Validate(config));
  for (const auto& [name, value] : config.values()) {
    const Knob* k = catalog.Find(name);
    if (k->artifact) continue;
    if (!k->env.empty()) {
      spec.env[k->env] = value;
      continue;
    }
    if (k->type == KnobType::kBool) {
      bool on = *ParseBool(value);
      if (on) {
        spec.argv.push_back(k->flag);
      } else if (!k->negative_flag.empty()) {
        spec.argv.push_back(k->negative_flag);
      }
      continue;
    }
    spec.argv.push_back(k->flag);
    spec.argv.push_back(value);
  }
  return Ok();
}

}  // namespace hone::target
