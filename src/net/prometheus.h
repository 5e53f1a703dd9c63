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

// Malformed sample lines are an error naming the line number.
Result<MetricSet> ParsePrometheusText(std::string_view text);

}  // namespace hone::net
