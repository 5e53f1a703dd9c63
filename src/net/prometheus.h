// Prometheus text exposition format (version 0.0.4) parser, for the /metrics
// endpoints of llama-server, vLLM and SGLang. Comment and TYPE/HELP lines are
// skipped; each sample line gives a name, its labels and a value (+Inf/NaN accepted).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"

namespace hone::net {

struct MetricSample {
  std::string name;
  std::map<std::string, std::string> labels;
  double value = 0;
};

class MetricSet {
 public:
  std::vector<MetricSample> samples;
  // Sum of all samples with this name (over label sets); nullopt when absent.
  std::optional<double> Sum(std::string_view name) const;
  // The sample with this name whose labels include all of `match`.
  std::optional<double> Find(std::string_view name, const std::map<std::string, std::string>& match) const;
};

// The Prometheus names under which a serving framework exposes the quantities hone
// scrapes during a run. Empty names are quantities the framework does not export.
// Each target adapter fills one; the benchmark reads it.
struct ServingMetricNames {
  std::string prompt_tokens_total;
  std::string generation_tokens_total;
  std::string cached_prompt_tokens_total;  // llama.cpp / SGLang style cached-token counter
  std::string cache_queries_total;         // vLLM style hit-rate pair (tokens)
  std::string cache_hits_total;
  std::string requests_running;
  std::string requests_waiting;
  std::string kv_usage;                    // 0..1 gauge
  std::string preemptions_total;
};

// Malformed sample lines are an error naming the line number.
Result<MetricSet> ParsePrometheusText(std::string_view text);

}  // namespace hone::net
