// Adapter: what hone needs to know to run one serving framework.
//
// An adapter turns a Config into a launch (argv + environment) through its knob
// catalog, names its health and metrics endpoints and its Prometheus metric names,
// and classifies a failed launch from the server log into a FailureKind (rules from
// data/failures.yaml). Adapters are stateless after construction; the running server
// itself is a target::Server. Implementations: llama.cpp (llamacpp.h), vLLM
// (vllm.h), SGLang (sglang.h) and "command" for any server a user can start
// (command.h); run::BuildEngine picks one from the spec, and nothing after it knows
// which.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/config.h"
#include "core/error.h"
#include "net/prometheus.h"
#include "target/catalog.h"

namespace hone::target {

enum class FailureKind {
  kNone,
  kBadFlag,        // the framework rejected a flag or value
  kOutOfMemory,
  kModelLoad,      // missing, corrupt or unsupported model file
  kPortInUse,
  kContextCreate,  // the engine refused the configuration (e.g. quantized V without FA)
  kUnsupported,    // a feature or kernel this build lacks
  kCrashed,        // killed by a signal
  kExited,         // exited with an error we could not classify
  kHealthTimeout,  // never became healthy
  kNotFound,       // the server binary is missing
};
std::string_view FailureKindName(FailureKind k);

struct FailureRule {
  FailureKind kind;
  std::vector<std::string> patterns;  // case-insensitive substrings
  std::string hint;
};

struct Classification {
  FailureKind kind = FailureKind::kNone;
  std::string hint;
  std::string excerpt;  // the log lines that matched (or the tail)
};

// Loads the rules for one framework from data/failures.yaml.
Result<std::vector<FailureRule>> LoadFailureRules(const std::string& path, const std::string& framework);
// First matching rule wins; no match gives kCrashed for a signal, else kExited.
Classification Classify(const std::vector<FailureRule>& rules, std::string_view log, int exit_code, int signal);

struct LaunchSpec {
  std::vector<std::string> argv;
  std::map<std::string, std::string> env;
  std::string host = "127.0.0.1";
  int port = 0;
  std::string health_path = "/health";
  std::string ShellCommand() const;  // "ENV=v llama-server -m ..." ready to paste
};

struct LaunchContext {
  std::string server_binary;
  std::string model_path;   // resolved model file (after any weight-precision change)
  std::string host = "127.0.0.1";
  int port = 0;
  std::vector<std::string> extra_args;  // fixed user args (never searched)
};

// Prometheus names for the quantities hone scrapes during a run (net/prometheus.h).
using MetricNames = net::ServingMetricNames;

class Adapter {
 public:
  virtual ~Adapter() = default;
  virtual std::string name() const = 0;
  virtual const KnobCatalog& catalog() const = 0;
  virtual const std::vector<FailureRule>& failure_rules() const = 0;
  // Builds the launch for `config` (validated against the catalog first).
  virtual Result<LaunchSpec> BuildLaunch(const Config& config, const LaunchContext& ctx) const = 0;
  virtual MetricNames metric_names() const = 0;
  // Request-body fields that force an exact output length for this framework.
  virtual std::map<std::string, std::string> ExactLengthFields() const = 0;
};

// Shared flag rendering for catalog knobs: bools use flag/negative_flag, env knobs set
// the environment, others append "flag value". Artifact knobs are skipped (the caller
// resolved them into ctx.model_path). `validate`: check `config` against the catalog
// first (off when the caller validated a larger config that this one is part of).
Status AppendKnobs(const KnobCatalog& catalog, const Config& config, LaunchSpec& spec, bool validate = true);

}  // namespace hone::target
