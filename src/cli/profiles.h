// The benchmark's view of a serving framework (exact-length request fields and the
// Prometheus names to scrape), taken from the framework's target adapter.
#pragma once

#include <string>

#include "bench/openai.h"
#include "core/error.h"

namespace hone::cli {

Result<bench::ServerProfile> BenchProfileFor(const std::string& framework);

}  // namespace hone::cli
