#include "target/catalog_check.h"

#include <optional>
#include <regex>
#include <set>

#include "core/strings.h"
#include "sys/files.h"
#include "sys/process.h"

namespace hone::target {

using namespace std::chrono_literals;

std::string CatalogCheck::Summary() const {
  char buf[320];
  std::snprintf(buf, sizeof buf,
                "%s (%s backend): %d options in --help; %d flags, %d values, %d environment variables checked%s; %zu "
                "problem(s)",
                binary.c_str(), cuda_backend ? "CUDA" : "CPU", help_options, flags_checked, values_checked, env_checked,
                env_skipped > 0 ? (", " + std::to_string(env_skipped) + " GPU-only skipped").c_str() : "",
                problems.size());
  return buf;
}

std::vector<std::string> HelpOptions(const std::string& help_text) {
  std::set<std::string> options;
  static const std::regex word("(^|[ ,])(--?[a-zA-Z0-9][a-zA-Z0-9-]*)");
  for (const std::string& line : Split(help_text, '\n')) {
    if (!line.starts_with("-")) continue;
    // Short options are padded ("-t,    --threads"); the description starts after the
    // next wide gap, or on the following line when the option column is long.
    size_t gap = line.find("   ", 8);
    std::string column = line.substr(0, gap);
    for (auto it = std::sregex_iterator(column.begin(), column.end(), word); it != std::sregex_iterator(); ++it) {
      options.insert((*it)[2].str());
    }
  }
  return {options.begin(), options.end()};
}

Result<CatalogCheck> CheckCatalog(const KnobCatalog& catalog, const std::string& binary, bool check_values) {
  CatalogCheck c;
  c.binary = binary;
  auto run = [&](std::vector<std::string> args) -> Result<sys::CommandOutput> {
    args.insert(args.begin(), binary);
    return sys::RunCommand({.argv = args}, 60s);
  };
  HONE_ASSIGN_OR_RETURN(sys::CommandOutput help, run({"--help"}));
  if (!help.status.success()) {
    return Fail(Error{ErrorCode::kFailedPrecondition, binary + " --help failed (" + help.status.ToString() + ")",
                      {{"output_tail", LastLines(help.output, 4)}}});
  }
  c.help_text = help.output;
  std::vector<std::string> listed = HelpOptions(help.output);
  std::set<std::string> options(listed.begin(), listed.end());
  c.help_options = static_cast<int>(options.size());
  for (const Knob& k : catalog.knobs()) {
    for (const std::string& f : {k.flag, k.negative_flag}) {
      if (f.empty()) continue;
      ++c.flags_checked;
      if (!options.contains(f)) c.problems.push_back(f + " (knob " + k.name + ") is not in --help");
    }
  }
  // Values: every one a search may try, the default, and each bool form.
  for (const Knob& k : catalog.knobs()) {
    if (k.flag.empty() || !check_values) continue;
    std::vector<std::vector<std::string>> cases;
    if (k.type == KnobType::kBool) {
      cases.push_back({k.flag});
      if (!k.negative_flag.empty()) cases.push_back({k.negative_flag});
    } else {
      std::vector<std::string> values = k.search_values;
      if (k.type == KnobType::kEnum) values.insert(values.end(), k.choices.begin(), k.choices.end());
      if (!k.default_value.empty() && k.default_value != "source") values.push_back(k.default_value);
      if (values.empty() && k.min) values.push_back(std::to_string(static_cast<int64_t>(*k.min)));
      for (const std::string& v : values) {
        if (v == "auto" && k.type == KnobType::kInt) continue;  // "auto" means "leave the flag out"
        cases.push_back({k.flag, v});
      }
    }
    for (std::vector<std::string> args : cases) {
      std::string shown = Join(args, " ");
      args.push_back("--version");
      HONE_ASSIGN_OR_RETURN(sys::CommandOutput out, run(args));
      ++c.values_checked;
      if (!out.status.success()) {
        c.problems.push_back(shown + " (knob " + k.name + ") is refused: " + std::string(Trim(LastLines(out.output, 1))));
      }
    }
  }
  // Environment variables: in the binary's strings (or OpenMP's, for OMP_/GOMP_).
  HONE_ASSIGN_OR_RETURN(std::string bytes, sys::ReadFile(binary));
  const bool gomp = bytes.find("libgomp.so") != std::string::npos;
  c.cuda_backend = bytes.find("ggml_cuda") != std::string::npos;
  for (const Knob& k : catalog.knobs()) {
    if (k.env.empty()) continue;
    if (k.env.starts_with("GGML_CUDA_") && !c.cuda_backend) {
      ++c.env_skipped;
      if (k.applies_to != "gpu") c.problems.push_back(k.env + " (knob " + k.name + ") is CUDA-only but not marked gpu");
      continue;
    }
    ++c.env_checked;
    if (k.env.starts_with("OMP_") || k.env.starts_with("GOMP_")) {
      if (!gomp) c.problems.push_back(k.env + " (knob " + k.name + "): the binary does not use libgomp");
    } else if (bytes.find(k.env) == std::string::npos) {
      c.problems.push_back(k.env + " (knob " + k.name + ") is not read by the binary");
    }
  }
  return c;
}

std::vector<std::string> HelpTextProblems(const KnobCatalog& catalog, const std::string& help_text) {
  std::vector<std::string> problems;
  std::vector<std::string> lines = Split(help_text, '\n');
  // The choices listed as "--flag {a,b,c}" (nullopt: the flag takes no choice list).
  auto help_choices = [&](const std::string& flag) -> std::optional<std::set<std::string>> {
    for (const std::string& line : lines) {
      std::string_view l = Trim(line);
      if (!l.starts_with(flag + " ") && !l.starts_with(flag + ",") && l != flag) continue;
      size_t open = l.find('{');
      if (open != flag.size() + 1) return std::nullopt;
      size_t close = l.find('}', open);
      std::set<std::string> out;
      for (const std::string& c : Split(l.substr(open + 1, close - open - 1), ',')) out.insert(std::string(Trim(c)));
      return out;
    }
    return std::set<std::string>{};
  };
  for (const Knob& k : catalog.knobs()) {
    for (const std::string& flag : {k.flag, k.negative_flag}) {
      if (flag.empty()) continue;
      bool found = false;
      for (const std::string& line : lines) {
        std::string_view l = Trim(line);
        found = found || l.starts_with(flag + " ") || l.starts_with(flag + ",") || l == flag ||
                Contains(line, ", " + flag + " ") || Contains(line, ", " + flag + "\n") || line.ends_with(", " + flag);
      }
      if (!found) problems.push_back(catalog.framework() + ": " + flag + " (knob " + k.name + ") is not in --help");
    }
    if (k.type == KnobType::kEnum && !k.flag.empty()) {
      auto choices = help_choices(k.flag);
      if (!choices) {
        problems.push_back(k.flag + " lists no choices in --help");
        continue;
      }
      for (const std::string& c : k.choices) {
        if (!choices->contains(c)) problems.push_back(k.flag + " has no choice '" + c + "' in --help");
      }
    }
  }
  return problems;
}

}  // namespace hone::target
