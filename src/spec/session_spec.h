// SessionSpec: what one optimization session is asked to do, parsed from YAML.
//
// The file names the target (serving adapter, model, fixed server arguments, the
// stock configuration), the workload (one operating point plus a sweep grid), the
// objective with optional SLO constraints, the accuracy gate, the budget, the
// measurement protocol, the knowledge base and the agents. Every field has a
// documented default (docs/session-spec.md); every error names the file, line,
// column and field. Plain value types, no I/O after loading.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/config.h"
#include "core/error.h"

namespace hone::spec {

struct ModelRef {
  std::string path;      // a model file, or empty when synthesized
  std::string preset;    // synthesize this preset (tiny, small, ...)
  uint64_t seed = 42;
  std::string Describe() const { return path.empty() ? "synth:" + preset + ":s" + std::to_string(seed) : path; }
};

struct TargetSpec {
  std::string adapter = "llama.cpp";      // llama.cpp | vllm | sglang | command
  ModelRef model;
  std::vector<std::string> server_args;   // fixed, never searched
  Config base_config;                     // the stock configuration (usually empty)
  // adapter "command": argv with {port} {model} {host} and {knob} placeholders;
  // vllm/sglang: the launcher to use instead of the one on PATH (one element).
  std::vector<std::string> command;
  std::string knobs_yaml;                 // adapter "command": the knob table (YAML), as written
  std::string version;                    // adapter "command": the server's version, for the KB ("" = unknown)
  std::string health_path = "/health";
  std::string hardware;                   // override the detected hardware name
  int num_gpus = 0;                       // 0 = CPU
};

struct SloConstraint {
  std::string metric;   // a bench metric name (p90_intvty, p99_ttft_ms, ...)
  bool at_least = true; // ">=" (true) or "<=" (false)
  double value = 0;
  std::string ToString() const;
};

// The objective, and its SLOs. An SLO on a percentile or interactivity
// ("p90_itl_ms <= 50", "p90_intvty >= 20") is a constraint on every KEEP, judged on
// the requests pooled over all of a configuration's trials in that comparison. An
// SLO on one request ("ttft_ms <= 500", "tpot_ms <= 50", "e2el_ms <= 2000", vLLM's
// --goodput keys) defines a good request: goodput (metric "goodput", an alias of
// "goodput_rps") = requests meeting every per-request SLO per second of window.
struct ObjectiveSpec {
  std::string metric = "total_tps_per_gpu";
  bool maximize = true;
  std::vector<SloConstraint> slos;   // aggregate constraints
  double good_ttft_ms = 0;           // per-request SLOs (0 = none)
  double good_tpot_ms = 0;
  double good_e2el_ms = 0;
  bool any_goodput_slo() const { return good_ttft_ms > 0 || good_tpot_ms > 0 || good_e2el_ms > 0; }
};

struct WorkloadSpec {
  std::string kind = "fixed";  // fixed | agentic
  std::string endpoint = "completions";
  int64_t isl = 128;
  int64_t osl = 32;
  double range_ratio = 0;
  std::string range_semantics = "vllm";
  int concurrency = 2;
  int num_prompts = 16;
  int warmups = 2;
  // Fixed workloads: 0 = every prompt runs to completion. > 0: a measurement window
  // of this many seconds; prompts are sent (from a pool of num_prompts) until it
  // ends, and requests still running then are cut, their tokens so far counted. The
  // trial takes the same time whatever the configuration: a server that queues most
  // of the load (4 slots at concurrency 64) cannot stretch it.
  double window_s = 0;
  double ramp_s = 0;  // with window: load before the window opens (steady state)
  std::string load = "closed";
  uint64_t seed = 42;
  // agentic
  std::string trace;              // a trace file; empty: generate
  std::string trace_preset = "cpu";
  int trace_sessions = 8;
  double duration_s = 30;
  double think_scale = 1.0;
  // sweep grid (re-measured in the Sweep phase)
  std::vector<int> sweep_concurrency;
  std::vector<std::pair<int64_t, int64_t>> sweep_isl_osl;
  // Per sweep point, at most this many re-tuned variants of the point's winner (the
  // knobs that track the load set to the point's concurrency), each measured paired
  // against it; 0: stock vs best only.
  int sweep_retune = 1;
  // With SLOs: per ISL/OSL and arm (stock, best), at most this many probes bisecting
  // the concurrency between the grid's highest load within the SLO and the next grid
  // load that missed it; 0: the grid's answer only.
  int sweep_slo_search = 4;
};

struct AccuracySpec {
  bool enabled = true;
  int probes = 8;
  int probe_tokens = 16;
  double min_token_agreement = 0.90;  // teacher-forced greedy top-1 agreement with the baseline
  bool kld = true;                    // KL divergence: llama-perplexity's, else the top-k estimate
  double max_kld = 0.01;
  double max_ppl_delta = 0.05;        // llama-perplexity: |PPL(candidate)/PPL(stock) - 1|
  bool aa = true;                     // check the stock against its own reference after a restart
};

struct BudgetSpec {
  double wall_s = 600;
  int max_trials = 0;   // 0 = no limit
  int max_cycles = 3;
};

struct MeasurementSpec {
  int min_pairs = 3;
  int max_pairs = 9;
  int pair_step = 3;        // pairs added per look while inconclusive
  double confidence = 0.95;
  double min_gain = 0.01;   // smallest relative gain worth keeping
  bool screen = true;       // one unpaired screening trial drops clear losers early
  double screen_drop = 0.10;
  // The screen's reference is the incumbent's latest measurements (the baseline's, a
  // KEEP's, then any fresh incumbent trial), as many as it started with. After this many
  // screen drops in a row, the next drop first measures the incumbent once more: a host
  // that slowed down since the reference was taken makes every change look worse, and
  // the fresh trial moves the reference with it. 0: the reference is never re-checked.
  int screen_recheck = 2;
  int aa_pairs = 3;
  // A candidate measured again against the same incumbent (the same configuration and
  // builds) after an INCONCLUSIVE comparison continues it: its verdict is judged on the
  // earlier pairs and its own together, Bonferroni-corrected over every look taken.
  bool pool_retests = true;
  double health_timeout_s = 180;
  double request_timeout_s = 120;  // a request that receives nothing for this long is stalled
};

struct KbSpec {
  bool enabled = true;
  std::string path;         // a SQLite file; default <cache>/kb.sqlite
  std::string url;          // postgresql://user@host:port/db: the knowledge base a cluster shares
  // Where the session's knowledge base lives: the URL, else the path ("" = default).
  const std::string& Location() const { return url.empty() ? path : url; }
  double min_confidence = 0.5;
  double reproduce_fraction = 0.5;
};

struct SearchSpec {
  std::string strategy = "planner";  // planner | random | grid | tpe
  std::vector<std::string> knobs;    // restrict the search to these (empty = catalog)
  std::vector<std::string> exclude;
  uint64_t seed = 1;
  // The framework phase of a cycle ends after this many candidates in a row without a
  // KEEP (0: only the budget, the trial limit or the proposer running dry end it).
  int plateau = 8;
};

struct KernelSpec {
  std::vector<std::string> backend;  // a backend command; empty = phase skipped
  std::vector<std::string> tasks;    // kernel task specs (default: data/kernel/*.yaml)
  std::string arch = "sm_90a";
};

// The session's LLM agents (docs/agents.md). mode: none | openai | anthropic | cli
// (claude and codex name the CLI presets directly).
// A source change the specialist is asked to write (agents.specialist_tasks): its diff
// goes through the session's patch lane like a spec patch.
struct SpecialistTaskSpec {
  std::string title;                // one line
  std::string goal;                 // what to change and why
  std::vector<std::string> files;   // repository-relative files shown to a chat backend
};

struct AgentsSpec {
  std::string mode = "none";
  std::string endpoint;
  std::string model;
  std::string api_key_env;
  double max_cost_usd = 0;
  int max_tokens = 0;
  // orchestrator | critic | robustness | specialist; empty: orchestrator, critic, robustness.
  std::vector<std::string> roles;
  // false: a backend that cannot be built or reached is a warning and the planner runs alone.
  bool required = true;
  std::string preset;                // mode cli: claude | codex
  std::vector<std::string> command;  // mode cli: a custom argv ({prompt} / {prompt_file})
  // price: {input, output} in USD per million tokens, instead of data/agent/agents.yaml's
  // (a loopback proxy to a paid API; loopback endpoints are otherwise free). 0: unset.
  double price_input_usd_per_mtok = 0;
  double price_output_usd_per_mtok = 0;
  // With role specialist: the source changes it writes (one diff each), in order.
  std::vector<SpecialistTaskSpec> specialist_tasks;
};

struct SessionSpec {
  std::string source;  // the spec file
  std::string name = "session";
  std::string output_dir;  // default ./hone-runs/<name>-<time>
  TargetSpec target;
  WorkloadSpec workload;
  ObjectiveSpec objective;
  AccuracySpec accuracy;
  BudgetSpec budget;
  MeasurementSpec measurement;
  KbSpec kb;
  SearchSpec search;
  KernelSpec kernel;
  AgentsSpec agents;
  std::vector<std::string> patches;  // diff files (own changes or upstream backports) to try
};

// `known_metrics` are the bench metric names objective/SLO fields may use.
Result<SessionSpec> LoadSessionSpec(const std::string& path, const std::vector<std::string>& known_metrics);
Result<SessionSpec> ParseSessionSpec(const std::string& text, const std::string& source,
                                     const std::vector<std::string>& known_metrics);

// "90s", "10m", "1.5h", "600" -> seconds.
Result<double> ParseDurationSeconds(const std::string& text);

}  // namespace hone::spec
