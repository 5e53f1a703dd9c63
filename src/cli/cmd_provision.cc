#include <cstdio>

#include "cli/commands.h"
#include "core/strings.h"
#include "target/llamacpp.h"

namespace hone::cli {

Action RegisterProvision(CLI::App& app, const Context& ctx) {
  auto* cmd = app.add_subcommand("provision", "Fetch and build a serving engine into the cache (once)");
  struct Opts {
    std::string engine;
    bool cuda = false;
    std::string cuda_arch;
    bool no_path = false;
    int jobs = 0;
    std::string source;
  };
  auto o = std::make_shared<Opts>();
  cmd->add_option("engine", o->engine, "Engine to provision (llama.cpp)")->required();
  cmd->add_flag("--cuda", o->cuda, "Build with CUDA (needs nvcc and a GPU, or --cuda-arch)");
  cmd->add_option("--cuda-arch", o->cuda_arch, "CUDA architecture, e.g. 90 (default: from nvidia-smi)");
  cmd->add_flag("--no-path", o->no_path, "Build even when llama-server is on PATH");
  cmd->add_option("-j,--jobs", o->jobs, "Parallel build jobs (default: all CPUs)");
  cmd->add_option("--source", o->source,
                  "Build this local llama.cpp git checkout instead of fetching the pinned source "
                  "(hosts without the npm registry)");
  return [o, &ctx]() -> int {
    if (o->engine != "llama.cpp" && o->engine != "llamacpp") {
      return ReportError(Error{ErrorCode::kInvalidArgument,
                               "unknown engine '" + o->engine + "' (hone provisions llama.cpp; vLLM and SGLang are "
                               "used from the user's installation)", {}});
    }
    target::ProvisionOptions opts{.cache_dir = ctx.cache_dir, .data_dir = ctx.data_dir, .cuda = o->cuda,
                                  .cuda_arch = o->cuda_arch, .use_path = !o->no_path, .jobs = o->jobs,
                                  .source = o->source};
    auto p = target::ProvisionLlamaCpp(opts);
    if (!p) return ReportError(p.error());
    std::printf("llama.cpp %s (%s, %s)\n", p->version.c_str(), p->origin.c_str(), p->variant.c_str());
    std::printf("  llama-server      %s\n", p->server.c_str());
    std::printf("  llama-quantize    %s\n", p->quantize.c_str());
    std::printf("  llama-bench       %s\n", p->bench.c_str());
    std::printf("  llama-perplexity  %s\n", p->perplexity.c_str());
    std::printf("  source            %s (commit %s)\n", p->src_dir.string().c_str(), p->commit.substr(0, 7).c_str());
    if (p->build_seconds > 0) std::printf("  built in          %s\n", HumanSeconds(p->build_seconds).c_str());
    return 0;
  };
}

}  // namespace hone::cli
