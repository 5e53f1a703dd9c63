// Recipe: one validated winning configuration and everything learned on the way to
// it, as plain value types (no JSON, no SQL). This is what the recipe knowledge base
// stores, matches, exports and hands to the session as warm-start and priors.
//
// Identity is the seven match fields (model, hardware, framework, model type,
// architecture, framework version, precision); Workload is the operating point the
// result was measured at. Recipe::Key() (identity + workload + config) is the dedup
// key: the store never holds two recipes with the same key. Every number carries the
// ids of the trials that measured it. All types are values; copy freely.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/config.h"
#include "core/error.h"

namespace hone::kb {

// The seven identity fields, in canonical order.
enum class MatchField { kModel, kHardware, kFramework, kModelType, kArchitecture, kFrameworkVersion, kPrecision };
inline constexpr std::array<MatchField, 7> kMatchFields = {
    MatchField::kModel,        MatchField::kHardware,         MatchField::kFramework, MatchField::kModelType,
    MatchField::kArchitecture, MatchField::kFrameworkVersion, MatchField::kPrecision};
// "model", "hardware", "framework", "model_type", "architecture", "framework_version", "precision".
std::string_view MatchFieldName(MatchField f);
std::optional<MatchField> ParseMatchField(std::string_view name);

struct Identity {
  std::string model;              // "llama-3.1-8b-instruct" (a name, not a path)
  std::string hardware;           // "nvidia-h200", "cpu-x86_64-avx2-2c"
  std::string framework;          // "llama.cpp", "vllm"
  std::string model_type;         // HF model_type / GGUF general.architecture: "llama"
  std::string architecture;       // HF architectures, sorted, '+'-joined: "LlamaForCausalLM"
  std::string framework_version;  // "0.4.0"
  std::string precision;          // "q8_0", "bf16", "fp8"

  const std::string& Get(MatchField f) const;
  std::string& Mutable(MatchField f);
  // "inference:{model}:{hardware}:{framework}:{model_type}:{architecture}:{framework_version}:{precision}".
  std::string CanonicalId() const;
  friend bool operator==(const Identity&, const Identity&) = default;
};

// The operating point: a closed-loop load (concurrency, input/output lengths) or a
// replayed trace. Zero means "not recorded" for a dimension.
struct Workload {
  std::string kind;  // e.g. "fixed" or "trace"; empty: not given (queries only)
  int64_t concurrency = 0;
  int64_t isl = 0;  // input tokens
  int64_t osl = 0;  // output tokens
  std::string trace_id;

  bool empty() const { return kind.empty(); }
  // "fixed c=4 isl=512 osl=128" / "trace t-17"
  std::string ToString() const;
  friend bool operator==(const Workload&, const Workload&) = default;
};

// The measured objective of the winning config (re-measured at close).
struct Objective {
  std::string name;  // "output_tok_per_s", "ttft_p99_ms"
  double value = 0;
  double ci_lo = 0;
  double ci_hi = 0;
  std::string unit;  // "tok/s", "ms"
  bool higher_is_better = true;
  std::vector<std::string> trial_ids;
  friend bool operator==(const Objective&, const Objective&) = default;
};

// The stock baseline the recipe beat, at the same operating point.
struct Baseline {
  double value = 0;
  std::vector<std::string> trial_ids;
  friend bool operator==(const Baseline&, const Baseline&) = default;
};

// A knob setting that moved the objective; effect is the relative change of the
// objective in the good direction (+0.12: 12% better, -0.05: 5% worse).
struct Learning {
  std::string knob;
  std::string value;
  double effect = 0;
  double effect_ci_lo = 0;
  double effect_ci_hi = 0;
  std::vector<std::string> trial_ids;
  friend bool operator==(const Learning&, const Learning&) = default;
};

// kConflict: the values of the config delta do not launch together, each of them may
// alone (a session learned it: a value failed to launch, and launched once a knob it
// interacts with took another value); a later session never proposes them together.
enum class FailureKind {
  kCrashed,
  kBadFlag,
  kOutOfMemory,
  kTimeout,
  kRegressed,
  kAccuracyFailed,
  kUnsupported,
  kConflict,
};
// "crashed", "bad_flag", "out_of_memory", "timeout", "regressed", "accuracy_failed", "unsupported",
// "conflict".
std::string_view FailureKindName(FailureKind k);
Result<FailureKind> ParseFailureKind(std::string_view name);

// A config (as a delta from stock) that failed, and how.
struct Failure {
  Config config_delta;
  FailureKind kind = FailureKind::kCrashed;
  std::string detail;  // the classifier's words: "context_create: quantized V cache needs flash_attn"
  std::vector<std::string> trial_ids;
  friend bool operator==(const Failure&, const Failure&) = default;
};

// What a reviewer learned from one of the recipe's session's decisions, in words (the
// critic's learning); offered to a later session's orchestrator, never a measurement.
struct Note {
  std::string source;   // "critic"
  std::string subject;  // the decision: "c003 threads=4 REVERT"
  std::string text;
  std::string session_id;
  friend bool operator==(const Note&, const Note&) = default;
};

struct Provenance {
  std::string hone_version;
  std::string session_id;
  std::string date;  // UTC, "2026-12-02T14:56:32Z"
  friend bool operator==(const Provenance&, const Provenance&) = default;
};

enum class RecipeStatus { kActive, kDemoted };
std::string_view RecipeStatusName(RecipeStatus s);  // "active", "demoted"

// A session that admits no recipe (its stock won; its best was not re-validated, was
// refused admission or runs a patched build) has nothing to replay, but what it learned
// on the way (values that crashed, failed the gate or regressed, launch conflicts) is
// kept: as the stock's record, a recipe with an empty config, stored demoted with this
// reason (RecipeStore::KeepStockRecord). It is never matched or replayed; its failures
// reach a later session's priors like any recipe's.
inline constexpr std::string_view kStockRecordReason =
    "no recipe was admitted (the stock won, or the best was not): kept for what its sessions learned, never replayed";

// One entry of a recipe's history: what happened to it, when, and with which numbers.
struct HistoryEvent {
  std::string event;  // "admitted", "updated", "reproduced", "not_reproduced", "inconclusive", "demoted", "imported", "migrated"
  std::string session_id;
  std::string hone_version;
  std::string date;
  double objective_value = 0;
  double baseline_value = 0;
  std::vector<std::string> trial_ids;
  std::string detail;
  friend bool operator==(const HistoryEvent&, const HistoryEvent&) = default;
};

struct Recipe {
  int64_t id = 0;  // the store's row id; 0 until stored (not portable between stores)
  Identity identity;
  Workload workload;
  Config config;  // the winning config (knob -> value), as a delta from stock
  Objective objective;
  Baseline baseline;
  std::vector<Learning> learnings;
  std::vector<Failure> failures;
  std::vector<Note> notes;
  Provenance provenance;
  RecipeStatus status = RecipeStatus::kActive;
  std::string demoted_reason;
  int64_t reproduce_count = 0;        // independent confirmations after admission
  std::vector<HistoryEvent> history;  // oldest first; filled by the store

  // The stock's record (kStockRecordReason): no config, demoted, never replayed.
  bool IsStockRecord() const { return config.empty() && status == RecipeStatus::kDemoted; }
  // Stable dedup key over identity, workload and config (hex).
  std::string Key() const;
  // Relative gain over the baseline in the objective's good direction: +0.2 = 20% better.
  double GainFraction() const;
};

// Relative gain of `value` over `baseline` in the good direction (0 when baseline is 0).
double GainFraction(double value, double baseline, bool higher_is_better);

// Checks the fields every stored recipe needs (non-empty identity, a config (empty only
// for a demoted recipe: the stock's record), an
// objective with trial ids and a consistent CI, a positive baseline with trial ids,
// well-formed trial ids). Used by admission and import; the message names the field.
Status CheckRecipeShape(const Recipe& r, int64_t min_objective_trials = 1, int64_t min_baseline_trials = 1);

// Trial ids are stored as a comma-separated list: they must be non-empty and hold no
// comma or whitespace.
std::string JoinTrialIds(const std::vector<std::string>& ids);
std::vector<std::string> SplitTrialIds(std::string_view joined);

}  // namespace hone::kb
