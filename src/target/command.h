// The "command" target: any server a user can start, described in the session spec.
//
// The spec names a launch template (target.command: argv with {port}, {host}, {model}
// and {knob} placeholders), the health path, and a knob table (target.knobs: the
// same fields as a catalog file's knobs; a knob is a flag, an environment variable, or
// a {name} in the template). A placeholder knob takes the Config's value or its
// default; flag and env knobs are rendered as for every adapter (AppendKnobs). The
// server is launched through target::Server like the others and classified with the
// "command" rules of data/failures.yaml; it has no metric names (hone reads what the
// benchmark measures). "weights" is refused as a knob name: hone quantizes GGUF
// weights only for llama.cpp; a user's precision knob picks files in the template.
// Immutable after Create; safe to share.
#pragma once

#include <memory>
#include <set>
#include <string>

#include "core/error.h"
#include "spec/session_spec.h"
#include "target/adapter.h"

namespace hone::target {

class CommandAdapter final : public Adapter {
 public:
  static Result<std::unique_ptr<CommandAdapter>> Create(const spec::TargetSpec& target, const std::string& data_dir);

  std::string name() const override { return "command"; }
  const KnobCatalog& catalog() const override { return catalog_; }
  const std::vector<FailureRule>& failure_rules() const override { return rules_; }
  // ctx.server_binary, when set, replaces the template's program (a patched or
  // stand-in binary); ctx.extra_args follow the template.
  Result<LaunchSpec> BuildLaunch(const Config& config, const LaunchContext& ctx) const override;
  MetricNames metric_names() const override { return {}; }
  std::map<std::string, std::string> ExactLengthFields() const override { return {{"ignore_eos", "true"}}; }

 private:
  CommandAdapter(KnobCatalog c, std::vector<FailureRule> r, std::vector<std::string> command, std::string health,
                 std::set<std::string> placeholders)
      : catalog_(std::move(c)), rules_(std::move(r)), command_(std::move(command)), health_path_(std::move(health)),
        placeholders_(std::move(placeholders)) {}
  KnobCatalog catalog_;
  std::vector<FailureRule> rules_;
  std::vector<std::string> command_;
  std::string health_path_;
  std::set<std::string> placeholders_;  // knob names used as {name} in the template
};

// The {name} placeholders of a template, in order of appearance.
std::vector<std::string> TemplatePlaceholders(const std::vector<std::string>& argv);

}  // namespace hone::target
