// Profile ingestion: a PyTorch profiler / Kineto Chrome trace (what vLLM's and
// SGLang's /start_profile + /stop_profile write, plain or gzipped) aggregated per GPU
// kernel, each kernel mapped to an op class (gemm, attention, norm, rope, quant, comm,
// elementwise, other) by the name rules in data/op_classes.yaml, and ranked by its
// share of GPU time, so the kernel phase can pick its targets.
//
// Only device activity counts: complete events ("ph": "X") whose category is kernel,
// gpu_memcpy or gpu_memset. CPU ops, annotations and flow events are skipped while
// parsing (traces reach hundreds of MB), so memory stays proportional to the kernels.
// OpClassifier and ProfileSummary are immutable values; safe to share.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"

namespace hone::roofline {

class OpClassifier {
 public:
  struct Rule {
    std::string op_class;
    bool vendor = false;
    std::vector<std::string> patterns;  // lower-case substrings
  };
  struct Match {
    std::string op_class;  // "other" when no rule matches
    bool vendor = false;
  };

  static Result<OpClassifier> Load(const std::string& path);
  static Result<OpClassifier> Parse(const std::string& text, const std::string& source_name);

  // First matching rule, case-insensitively.
  Match Classify(std::string_view kernel_name) const;
  const std::vector<std::string>& classes() const { return classes_; }

 private:
  std::vector<std::string> classes_;
  std::vector<Rule> rules_;
};

struct KernelStat {
  std::string name;
  std::string op_class;
  bool vendor = false;
  int64_t count = 0;
  double total_us = 0;
  double share = 0;  // of all GPU time in the trace
  double mean_us() const { return count > 0 ? total_us / static_cast<double>(count) : 0; }
};

struct ClassStat {
  std::string op_class;
  int64_t count = 0;
  double total_us = 0;
  double share = 0;
};

struct ProfileSummary {
  int64_t events = 0;         // device events counted
  int devices = 0;            // distinct GPUs (trace pids) with device events
  double gpu_time_us = 0;     // sum of device event durations
  double span_us = 0;         // first device event start to last end
  // Time at least one kernel ran, over span x devices: low values mean the GPU waits
  // on the host (launch or scheduling overhead).
  double busy_fraction = 0;
  std::vector<KernelStat> kernels;  // by total time, descending
  std::vector<ClassStat> classes;   // by total time, descending; every class listed
};

// Reads a trace file (".json" or ".json.gz"). Errors: kNotFound, kDataLoss for
// malformed JSON or a trace without device events.
Result<ProfileSummary> SummarizeTraceFile(const std::string& path, const OpClassifier& classifier);
Result<ProfileSummary> SummarizeTrace(std::string_view json, const OpClassifier& classifier,
                                      const std::string& source_name = "trace");

struct TargetOptions {
  double min_share = 0.10;  // a kernel below this share of GPU time is not worth a lane
  size_t max_targets = 5;
  std::set<std::string> exclude_classes = {"comm", "other"};  // collectives have their own lane
  bool exclude_vendor = false;  // drop closed library kernels (cuBLAS, cuDNN, NCCL)
};

// The kernels worth optimizing, hottest first.
std::vector<KernelStat> KernelTargets(const ProfileSummary& summary, const TargetOptions& options = {});

// "void at::native::(anonymous namespace)::foo<...>(args)" -> "at::native::foo": the
// name without return type, template arguments and parameters, for reports.
std::string ShortKernelName(std::string_view name);

}  // namespace hone::roofline
