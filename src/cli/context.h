// What every hone subcommand receives from main(): the resolved data directory, the
// cache directory and output preferences. Built once in main.cc (the composition root).
#pragma once

#include <filesystem>
#include <string>

namespace hone::cli {

struct Context {
  std::string data_dir;             // catalogs/, data/ live here
  std::filesystem::path cache_dir;  // provisioned engines, synthesized models
  bool json_output = false;         // machine-readable output where supported
};

// HONE_DATA_DIR, else the source tree hone was built from, else <exe>/../share/hone.
std::string ResolveDataDir();

}  // namespace hone::cli
