// Result files of a benchmark run, at the edge (JSON lives only here):
//  - result.json, schema "hone-bench/1" (documented in docs/bench.md), with a
//    "compat" section carrying vLLM `bench serve` key names and the InferenceX
//    aggregate tree, so tools that diff against the anchors need no remapping;
//  - records.jsonl, one line per request (warm-ups included, marked by phase);
//  - a readable table for the terminal.
// ReadResultJson parses result.json back into a BenchResult (for resume and reports).
#pragma once

#include <string>
#include <vector>

#include "bench/metrics.h"
#include "core/error.h"

namespace hone::bench {

std::string ResultToJson(const BenchResult& r);
Result<BenchResult> ResultFromJson(const std::string& text);
Status WriteResultJson(const std::string& path, const BenchResult& r);
Result<BenchResult> ReadResultJson(const std::string& path);
Status WriteRecordsJsonl(const std::string& path, const std::vector<RequestRecord>& records);
std::string FormatTable(const BenchResult& r);

}  // namespace hone::bench
