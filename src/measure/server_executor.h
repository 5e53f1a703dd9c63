// ServerTrialExecutor: runs trials against real servers (TrialExecutor's real side).
//
// It owns nothing global: the adapter, binaries, base model and run directory come
// from the session. Each Run() starts a fresh server for the configuration (through
// the adapter and ModelStore), benchmarks the session's workload at the requested
// operating point, stops the server and writes the trial directory. The accuracy
// gate runs its own short-lived servers: a teacher-forced greedy-token agreement
// check against the stock configuration's outputs on fixed probe prompts, and, for
// configurations that change numerics (weights, KV cache types), a KL divergence: on
// llama.cpp that of their logits from the stock ones via llama-perplexity; on engines
// that serve the OpenAI completions API with logprobs (vLLM, SGLang, a command's
// server) an estimate from the top-k logprobs at the same teacher-forced positions.
// The outcome's detail names the method used.
// Not thread-safe: one trial at a time (the machine is being measured).
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bench/openai.h"
#include "bench/tokens.h"
#include "bench/trace.h"
#include "chaos/plan.h"
#include "measure/model_store.h"
#include "measure/trial.h"
#include "spec/session_spec.h"
#include "sys/clock.h"
#include "sys/process.h"
#include "target/adapter.h"

namespace hone::measure {

struct ExecutorSetup {
  const target::Adapter* adapter = nullptr;
  std::string server_binary;
  std::string perplexity_binary;  // llama.cpp only; empty: no KLD check
  std::string perplexity_text;    // text for the KLD check
  ModelStore* models = nullptr;
  std::string run_dir;
  spec::SessionSpec spec;
  bench::ServerProfile profile;
  std::vector<bench::Trace> traces;  // agentic workloads
  std::string hardware;
  std::string token_cache_dir;       // agentic: where token plans are kept ("" = run_dir/tokens)
  chaos::FaultPlan* faults = nullptr;  // test runs only (HONE_CHAOS_PLAN): faults to inject
  // Time stamps and durations, and llama-perplexity runs; the real ones when null.
  sys::Clock* clock = nullptr;
  sys::ProcessRunner* runner = nullptr;
};

// Where a session's accuracy checks keep their files (the reference, the KLD text and
// logits, each check's outputs): <run_dir>/accuracy.
std::filesystem::path AccuracyDir(const std::string& run_dir);

// llama-perplexity --kl-divergence's statistics: mean KLD, "same top" percentage and,
// where printed, Mean PPL(Q)/PPL(base).
struct KldStats {
  double kld = 0;
  double same_top = 100;
  std::optional<double> ppl_ratio;
};
Result<KldStats> ParseKlDivergenceOutput(const std::string& output);

// The gate's thresholds from the spec and the measured A/A spread: a stock whose
// greedy outputs differ across restarts is nondeterministic, and the thresholds widen
// to what the stock achieves against itself (said in `note`).
AccuracyGateInfo GateThresholds(const spec::AccuracySpec& spec, AccuracyGateInfo gate);

class ServerTrialExecutor final : public TrialExecutor {
 public:
  explicit ServerTrialExecutor(ExecutorSetup setup);
  Result<TrialOutcome> Run(const TrialRequest& request) override;
  // Test runs only (HONE_CHAOS_PLAN): the faults to inject from now on (null: none).
  void SetFaultPlan(chaos::FaultPlan* plan) { s_.faults = plan; }
  Status PrepareAccuracy(const Config& stock) override;
  Result<AccuracyOutcome> CheckAccuracy(const Config& config, const std::string& label,
                                        const std::string& server_binary = "") override;
  AccuracyGateInfo AccuracyGate() const override { return gate_; }

 private:
  // Top-k log-probabilities at one position: token id -> logprob.
  using TopLogprobs = std::map<int32_t, double>;
  struct Probe {
    std::vector<int32_t> prompt;
    std::vector<int32_t> reference;  // the stock config's greedy tokens
    std::vector<TopLogprobs> top;    // their top-k logprobs (OpenAI-API engines that give them)
  };
  struct Reply {
    std::vector<int32_t> tokens;
    std::vector<TopLogprobs> top;  // empty: the engine gave no logprobs
    bool ids = false;              // tokens are the engine's ids (else a hash of the text)
  };
  // A candidate's outputs against the reference, on a fresh server of its own.
  struct Comparison {
    int compared = 0, matched = 0, kl_positions = 0;
    double agreement = 1;
    std::optional<double> kl_estimate;
    bool by_text = false;
  };
  Result<Reply> Greedy(const std::string& host, int port, const std::vector<int32_t>& prompt, int n);
  Result<std::vector<int32_t>> Tokenize(const std::string& host, int port, const std::string& text);
  Result<Comparison> Compare(const Config& config, const std::string& label, const std::string& server_binary);
  std::string MethodName(const Comparison& c) const;
  // llama-perplexity's full-vocabulary KLD runs for this candidate (numerics-changing
  // knobs, or a patched build with its own llama-perplexity).
  bool NeedsKld(const Config& config, const std::string& server_binary) const;
  // A build other than the provisioned server (a kept or tried source patch).
  bool Patched(const std::string& server_binary) const;
  std::string PerplexityFor(const std::string& server_binary) const;
  void PrepareTokens(const std::string& host, int port, const std::string& model_path);
  std::vector<std::string> RuntimeFlags(const Config& config) const;
  Result<KldStats> RunKld(const Config& config, bool make_base, const std::string& server_binary);
  // llama-perplexity's PPL(Q)/PPL(base) divides by a perplexity recomputed from the
  // base file's 16-bit logits, biased by a factor of its own (2% on a 32k vocabulary,
  // x1185 on a random 8B model's 128k one): the stock against the base measures that
  // factor once (kept in accuracy/reference-ppl.json), and a candidate's ratio over it is
  // PPL(candidate)/PPL(stock) exactly. Empty when llama-perplexity prints no ratio.
  Result<std::optional<double>> StockPplRatio();

  ExecutorSetup s_;
  sys::Clock& clock_;
  sys::ProcessRunner& runner_;
  std::vector<Probe> probes_;
  std::string kld_base_;
  Config stock_;                                 // the accuracy reference's configuration
  std::optional<std::optional<double>> stock_ppl_ratio_;  // measured once (StockPplRatio)
  std::map<std::string, AccuracyOutcome> accuracy_cache_;  // config hash -> outcome
  AccuracyGateInfo gate_;
  // Agentic replays: the served model's token plan, calibrated on the first trial's
  // server (then read from the cache); empty with a note when it cannot be made.
  std::optional<bench::TokenPlan> tokens_;
  std::string tokens_note_;
};

}  // namespace hone::measure
