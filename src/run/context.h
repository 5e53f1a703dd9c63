// RunContext: what `hone` hands the session's composition root (src/run/): the data
// and cache directories, the clock and the process runner (the real ones from
// cli/main.cc; fakes in tests), and where progress lines go. Builders read it; none
// reaches for a global clock or runner of its own.
#pragma once

#include <filesystem>
#include <functional>
#include <string>

#include "sys/clock.h"
#include "sys/process.h"

namespace hone::run {

struct RunContext {
  std::string data_dir;                 // catalogs/ and data/ live here
  std::filesystem::path cache_dir;      // provisioned engines, synthesized models, the knowledge base
  sys::Clock* clock = nullptr;          // required
  sys::ProcessRunner* runner = nullptr; // required
  std::function<void(const std::string&)> progress;  // the session's progress lines (optional)
};

}  // namespace hone::run
