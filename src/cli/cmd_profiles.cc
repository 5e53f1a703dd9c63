#include "cli/context.h"
#include "cli/profiles.h"
#include "target/llamacpp.h"
#include "target/sglang.h"
#include "target/vllm.h"

namespace hone::cli {

Result<bench::ServerProfile> BenchProfileFor(const std::string& framework) {
  bench::ServerProfile p;
  p.framework = framework;
  std::unique_ptr<target::Adapter> adapter;
  if (framework == "llama.cpp" || framework == "llamacpp") {
    HONE_ASSIGN_OR_RETURN(adapter, target::LlamaCppAdapter::Create(ResolveDataDir(), "0.4.0"));
  } else if (framework == "vllm") {
    HONE_ASSIGN_OR_RETURN(adapter, target::VllmAdapter::Create(ResolveDataDir(), "0.12.0"));
    p.send_min_tokens = true;
  } else if (framework == "sglang") {
    HONE_ASSIGN_OR_RETURN(adapter, target::SglangAdapter::Create(ResolveDataDir(), "0.5.0"));
    p.send_min_tokens = true;  // SGLang maps min_tokens to min_new_tokens
  } else if (framework == "generic") {
    p.exact_length_fields = {{"ignore_eos", "true"}};
    return p;
  } else {
    return InvalidArgument("unknown framework '" + framework + "' (llama.cpp, vllm, sglang, generic)");
  }
  p.exact_length_fields = adapter->ExactLengthFields();
  p.metrics = adapter->metric_names();
  return p;
}

}  // namespace hone::cli
