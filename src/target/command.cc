#include "target/command.h"

#include <algorithm>

#include "core/strings.h"
#include "spec/yaml.h"

namespace hone::target {

namespace {

constexpr const char* kBuiltins[] = {"port", "host", "model"};

bool IsBuiltin(const std::string& name) {
  for (const char* b : kBuiltins) {
    if (name == b) return true;
  }
  return false;
}

// Replaces every {name} of `arg` with values.at(name).
std::string Substitute(const std::string& arg, const std::map<std::string, std::string>& values) {
  std::string out;
  size_t i = 0;
  while (i < arg.size()) {
    size_t open = arg.find('{', i);
    size_t close = open == std::string::npos ? std::string::npos : arg.find('}', open);
    if (close == std::string::npos) {
      out += arg.substr(i);
      break;
    }
    out += arg.substr(i, open - i);
    auto it = values.find(arg.substr(open + 1, close - open - 1));
    out += it != values.end() ? it->second : arg.substr(open, close - open + 1);
    i = close + 1;
  }
  return out;
}

}  // namespace

std::vector<std::string> TemplatePlaceholders(const std::vector<std::string>& argv) {
  std::vector<std::string> out;
  for (const std::string& arg : argv) {
    size_t i = 0;
    while ((i = arg.find('{', i)) != std::string::npos) {
      size_t close = arg.find('}', i);
      if (close == std::string::npos) break;
      std::string name = arg.substr(i + 1, close - i - 1);
      if (!name.empty() && std::find(out.begin(), out.end(), name) == out.end()) out.push_back(name);
      i = close + 1;
    }
  }
  return out;
}

Result<std::unique_ptr<CommandAdapter>> CommandAdapter::Create(const spec::TargetSpec& target,
                                                               const std::string& data_dir) {
  if (target.command.empty()) return InvalidArgument("adapter 'command' needs target.command (the launch template)");
  std::set<std::string> placeholders;
  for (const std::string& name : TemplatePlaceholders(target.command)) {
    if (!IsBuiltin(name)) placeholders.insert(name);
  }
  KnobCatalog catalog;
  const std::string source = "target.knobs";
  HONE_ASSIGN_OR_RETURN(spec::Field knobs, spec::Field::Parse(target.knobs_yaml.empty() ? "[]" : target.knobs_yaml, source));
  HONE_ASSIGN_OR_RETURN(catalog, KnobCatalog::FromKnobList(knobs, {.framework = "command",
                                                                   .versions = target.version.empty() ? "*" : target.version,
                                                                   .path = source,
                                                                   .default_category = "command",
                                                                   .placeholders = placeholders}));
  if (catalog.Find("weights")) {
    return InvalidArgument(source + ": 'weights' is reserved (hone quantizes GGUF weights for llama.cpp only); "
                           "name your precision knob otherwise and pick its file in the command, e.g. {quant}");
  }
  for (const std::string& name : placeholders) {
    const Knob* k = catalog.Find(name);
    if (!k) {
      return InvalidArgument("target.command: {" + name + "} is neither {port}, {host}, {model} nor a knob of target.knobs");
    }
    if (k->default_value.empty()) {
      return InvalidArgument(source + ": knob '" + name + "' is a placeholder of the command and needs a default");
    }
    if (!k->flag.empty() || !k->env.empty()) {
      return InvalidArgument(source + ": knob '" + name + "' is both {" + name + "} in the command and a flag or env");
    }
  }
  HONE_ASSIGN_OR_RETURN(auto rules, LoadFailureRules(data_dir + "/data/failures.yaml", "command"));
  return std::unique_ptr<CommandAdapter>(
      new CommandAdapter(std::move(catalog), std::move(rules), target.command, target.health_path, placeholders));
}

Result<LaunchSpec> CommandAdapter::BuildLaunch(const Config& config, const LaunchContext& ctx) const {
  HONE_TRY(catalog_.Validate(config));
  LaunchSpec spec;
  spec.host = ctx.host;
  spec.port = ctx.port;
  spec.health_path = health_path_;
  std::map<std::string, std::string> values = {
      {"port", std::to_string(ctx.port)}, {"host", ctx.host}, {"model", ctx.model_path}};
  Config flags;
  for (const Knob& k : catalog_.knobs()) {
    if (placeholders_.contains(k.name)) {
      values[k.name] = catalog_.ValueOf(config, k);
    } else if (auto v = config.Get(k.name)) {
      flags.Set(k.name, *v);
    }
  }
  for (const std::string& arg : command_) spec.argv.push_back(Substitute(arg, values));
  if (!ctx.server_binary.empty()) spec.argv[0] = ctx.server_binary;
  for (const auto& a : ctx.extra_args) spec.argv.push_back(a);
  HONE_TRY(AppendKnobs(catalog_, flags, spec, /*validate=*/false));
  return spec;
}

}  // namespace hone::target
