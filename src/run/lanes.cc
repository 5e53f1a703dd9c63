#include "run/lanes.h"

#include <algorithm>
#include <filesystem>

#include "patch/build.h"

namespace hone::run {

namespace fs = std::filesystem;

Result<std::unique_ptr<session::PatchLane>> BuildPatchLane(const spec::SessionSpec& spec, const Engine& engine,
                                                            const std::string& run_dir, const RunContext& ctx,
                                                            const Agents* agents) {
  const bool written = agents && agents->writer && !agents->goals.empty();
  if (spec.patches.empty() && !written) return std::unique_ptr<session::PatchLane>();
  // A patched build repeats the engine's own configure arguments (CPU or CUDA, its arch).
  std::vector<std::string> args = engine.provisioned.cmake_args;
  if (args.empty()) {
    return FailedPrecondition(std::string(spec.patches.empty() ? "the specialist's diffs" : "patches") +
                              " need a llama.cpp built by hone (this engine came from PATH: " +
                              engine.provisioned.server + "); run hone provision llama.cpp --no-path");
  }
  session::PatchLaneOptions po;
  po.diff_files = spec.patches;
  if (written) {
    po.goals = agents->goals;
    po.writer = agents->writer.get();
  }
  po.repo = engine.provisioned.src_dir.string();
  po.run_dir = run_dir;
  po.rules_path = ctx.data_dir + "/data/policy/rules.yaml";
  // llama-perplexity too: the accuracy gate measures a patched build's KL divergence
  // with the patched code, not the stock's.
  po.recipe = patch::CMakeRecipe("llama.cpp llama-server", args, {"llama-server", "llama-perplexity"},
                                 {"bin/llama-server", "bin/llama-perplexity"});
  po.clock = ctx.clock;
  po.runner = ctx.runner;
  if (ctx.progress) po.progress = [progress = ctx.progress](const std::string& l) { progress("  patch " + l); };
  HONE_ASSIGN_OR_RETURN(auto lane, session::ExecutorPatchLane::Create(po));
  return std::unique_ptr<session::PatchLane>(std::move(lane));
}

Result<std::vector<std::string>> KernelTaskFiles(const spec::SessionSpec& spec, const std::string& data_dir) {
  if (!spec.kernel.tasks.empty()) return spec.kernel.tasks;
  const fs::path dir = fs::path(data_dir) / "data" / "kernel";
  std::vector<std::string> files;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    std::string name = e.path().filename().string();
    if (e.path().extension() == ".yaml" && name != "ops.yaml" && name != "integration.yaml") {
      files.push_back(e.path().string());
    }
  }
  if (ec) return NotFound("kernel task specs: cannot read " + dir.string() + ": " + ec.message());
  std::sort(files.begin(), files.end());
  return files;
}

Result<std::unique_ptr<session::KernelLane>> BuildKernelLane(const spec::SessionSpec& spec,
                                                              const sys::MachineInfo& machine,
                                                              const std::string& run_dir, const RunContext& ctx) {
  if (spec.kernel.backend.empty()) return std::unique_ptr<session::KernelLane>();
  session::KernelLaneOptions ko;
  ko.backend = spec.kernel.backend;
  HONE_ASSIGN_OR_RETURN(ko.task_files, KernelTaskFiles(spec, ctx.data_dir));
  ko.ops_path = ctx.data_dir + "/data/kernel/ops.yaml";
  ko.integration_path = ctx.data_dir + "/data/kernel/integration.yaml";
  ko.framework = spec.target.adapter;
  ko.run_dir = run_dir;
  ko.workload = spec.workload.kind + " c" + std::to_string(spec.workload.concurrency) + " isl" +
                std::to_string(spec.workload.isl) + " osl" + std::to_string(spec.workload.osl);
  ko.device = machine.gpus.empty() ? machine.cpu_model : machine.gpus[0];
  ko.arch = spec.kernel.arch;
  ko.runner = ctx.runner;
  return std::unique_ptr<session::KernelLane>(std::make_unique<session::BackendKernelLane>(ko));
}

}  // namespace hone::run
