// FleetSpec: many optimization sessions, run unattended as one fleet (`hone fleet run
// FLEET.yaml`), each profiling, searching, validating and reporting on its own, all
// reading and writing one knowledge base. docs/fleet.md describes the file.
//
// A fleet file lists workload entries; an entry's model, precision and workload may
// each be a list, and the entry expands into their cross product: one session per
// (model, precision, workload). Every session gets a complete session spec (YAML, the
// format of docs/session-spec.md): the fleet's `defaults`, then the entry's `session`
// block, then what the entry's axes set (target.model, target.adapter,
// target.base_config.weights, target.num_gpus, workload, budget.wall) and the fleet's
// knowledge base. Each generated spec is validated like a `hone run` spec before
// anything starts, and errors name the fleet file's line and the session.
//
// Plain values after loading; no I/O but reading the file.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/error.h"
#include "kb/recipe.h"
#include "spec/session_spec.h"

namespace hone::fleet {

// What a session's job needs from the machine that runs it.
struct JobResources {
  int cpus = 4;            // cores, pinned (local) or requested (--cpus-per-task)
  int gpus = 0;            // GPUs (CUDA_VISIBLE_DEVICES locally, --gres on Slurm)
  int64_t mem_mb = 0;      // 0: the scheduler's default
  double time_limit_s = 0; // the session's budget plus the executor's margin
};

struct ExecutorSpec {
  std::string kind = "local";  // local | slurm
  double poll_s = 5;           // how often the driver looks at its jobs
  double time_margin_s = 600;  // added to a session's budget for its job's time limit
  // local: how many sessions at once (0: as many as the CPUs and GPUs allow).
  int max_parallel = 0;
  // slurm
  std::string partition;
  std::string account;
  std::string qos;
  std::string gpu_request = "--gres=gpu:{n}";  // how a job asks for n GPUs
  std::vector<std::string> sbatch_args;         // extra sbatch arguments, verbatim
  std::vector<std::string> setup;               // shell lines run before hone in every job
  std::string hone;                             // hone on the nodes (default: this binary)
  std::string cache_dir;                        // --cache-dir on the nodes (default: this one)
};

// One session of the fleet, after expansion.
struct FleetSession {
  std::string name;          // unique in the fleet; names its spec, run dir and job
  int entry = 0;             // index of the workloads entry it came from
  std::string engine;        // target.adapter
  std::string model;         // the preset or the model file's stem
  std::string precision;     // the stock's weight precision ("" = the model file's own)
  std::string workload;      // the workload's label (its `name`, else its kind)
  std::string workload_kind; // fixed | agentic
  double budget_s = 0;
  JobResources resources;
  std::string spec_yaml;     // the complete session spec
  spec::SessionSpec spec;    // the same, parsed
  // How the knowledge base will see it (for warm-up ordering; kb/match.h).
  kb::Identity identity;
  kb::Workload kb_workload;
};

struct FleetSpec {
  std::string source;
  std::string name = "fleet";
  std::string output_dir;     // default hone-fleets/<name>-<UTC time>
  ExecutorSpec executor;
  std::string kb_url;         // postgresql://... (shared by every node)
  std::string kb_path;        // a SQLite file (one host); both empty: <cache>/kb.sqlite
  int retries = 1;            // a failed session is run again (resumed) this many times
  std::vector<FleetSession> sessions;

  const std::string& KbLocation() const { return kb_url.empty() ? kb_path : kb_url; }
};

// Overrides from the command line (`hone fleet run --executor slurm --kb URL ...`),
// applied before the sessions are generated.
struct FleetOverrides {
  std::string executor;               // local | slurm
  std::string partition;
  std::string kb;                     // a URL or a path
  double budget_s = 0;                // every session's budget
  std::vector<std::string> only;      // keep only these sessions (names, or prefixes ending in '*')
  std::string hone;                   // hone binary for jobs

  // As key/value pairs (kept in fleet.json), and back.
  std::vector<std::pair<std::string, std::string>> ToPairs() const;
  static FleetOverrides FromPairs(const std::vector<std::pair<std::string, std::string>>& pairs);
};

// `known_metrics`: the bench metric names (objective and SLO fields).
Result<FleetSpec> LoadFleetSpec(const std::string& path, const std::vector<std::string>& known_metrics,
                                const FleetOverrides& overrides = {});
Result<FleetSpec> ParseFleetSpec(const std::string& text, const std::string& source,
                                 const std::vector<std::string>& known_metrics, const FleetOverrides& overrides = {});

// The knowledge base's view of a session's workload (as a session reports it).
kb::Workload KbWorkload(const spec::SessionSpec& spec);

}  // namespace hone::fleet
