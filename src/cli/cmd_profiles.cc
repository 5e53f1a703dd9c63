#include "cli/context.h"
#include "cli/profiles.h"
#include "target/llamacpp.h"

namespace hone::cli {

Result<bench::ServerProfile> BenchProfileFor(const std::string& framework) {
  bench::ServerProfile p;
  p.framework = framework;
  if (framework == "llama.cpp" || framework == "llamacpp") {
    HONE_ASSIGN_OR_RETURN(auto adapter, target::LlamaCppAdapter::Create(ResolveDataDir(), "0.4.0"));
    p.exact_length_fields = adapter->ExactLengthFields();
    p.metrics = adapter->metric_names();
    return p;
  }
  if (framework == "generic") {
    p.exact_length_fields = {{"ignore_eos", "true"}};
    return p;
  }
  return InvalidArgument("unknown framework '" + framework + "' (llama.cpp, generic)");
}

}  // namespace hone::cli
