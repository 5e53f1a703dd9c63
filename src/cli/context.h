// What every hone subcommand receives from main(): the resolved data directory, the
// cache directory, output preferences, and the real clock and process runner. Built
// once in main.cc; subcommands hand them down (an optimization session through
// src/run/'s RunContext).
#pragma once

#include <filesystem>
#include <string>

#include "sys/clock.h"
#include "sys/process.h"

namespace hone::cli {

struct Context {
  std::string data_dir;             // catalogs/, data/ live here
  std::filesystem::path cache_dir;  // provisioned engines, synthesized models
  bool json_output = false;         // machine-readable output where supported
  sys::Clock* clock = nullptr;            // the real clock
  sys::ProcessRunner* runner = nullptr;   // the real process runner
};

// HONE_DATA_DIR, else the source tree hone was built from, else <exe>/../share/hone.
std::string ResolveDataDir();

}  // namespace hone::cli
