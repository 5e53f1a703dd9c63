// The enablement ladder (data/enablement.yaml): what to try, least invasive first,
// when the stock configuration does not launch, by framework and classified failure
// kind. Loaded once when the session is wired, so a broken file stops the session
// before it starts, naming the file; a failure kind the file does not list has no
// rungs. Plain value.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/config.h"
#include "core/error.h"
#include "target/catalog.h"

namespace hone::run {

class EnablementLadder {
 public:
  // The framework's ladders from `path`; errors name the file (and line).
  static Result<EnablementLadder> Load(const std::string& path, const std::string& framework);
  std::vector<Config> Rungs(const std::string& failure_kind) const;

 private:
  std::map<std::string, std::vector<Config>> rungs_;  // failure kind -> rungs
};

// The coordinator's "can this delta change outputs?" question, answered by the
// catalog's accuracy risk (medium and high change numerics).
std::function<bool(const Config& delta)> RiskyHook(const target::KnobCatalog& catalog);

}  // namespace hone::run
