#include "run/engine.h"

#include <filesystem>

#include "model/synth.h"
#include "sys/files.h"
#include "sys/process.h"
#include "sys/term.h"
#include "target/command.h"
#include "target/sglang.h"
#include "target/vllm.h"

namespace hone::run {

namespace fs = std::filesystem;

namespace {

// The launcher a Python engine runs with: the spec's, or the engine's on PATH (a
// `python` program may be found as python3).
Result<std::string> Launcher(const spec::SessionSpec& spec, const std::string& program, const std::string& install) {
  std::string wanted = spec.target.command.empty() ? program : spec.target.command[0];
  std::string found = sys::FindOnPath(wanted);
  if (found.empty() && spec.target.command.empty() && program == "python") found = sys::FindOnPath("python3");
  if (found.empty()) {
    return NotFound("the " + spec.target.adapter + " adapter runs `" + wanted + "`, which is not " +
                    (spec.target.command.empty() ? "on PATH" : "executable") + ": " + install +
                    " (or name the launcher in target.command)");
  }
  return found;
}

// An engine hone does not build: where it runs from and its version.
target::Provisioned Installed(const std::string& launcher, const std::string& version) {
  target::Provisioned p;
  p.origin = "path";
  p.variant = "installed";
  p.server = launcher;
  p.version = version;
  return p;
}

// Another engine's session around `adapter`: the model is whatever the engine loads
// (a directory, a Hugging Face id or a file); a GGUF file's weight type is read.
Result<Engine> ForeignEngine(const spec::SessionSpec& spec, const RunContext& ctx, target::Provisioned provisioned,
                             std::unique_ptr<target::Adapter> adapter) {
  if (spec.target.model.path.empty()) {
    return InvalidArgument("target.model: the " + spec.target.adapter +
                           " adapter serves a model path or id (synthetic presets are llama.cpp GGUF files)");
  }
  Engine e;
  e.provisioned = std::move(provisioned);
  e.adapter = std::move(adapter);
  e.model_path = spec.target.model.path;
  std::string stem = fs::path(e.model_path).filename().string();
  e.model_name = fs::path(e.model_path).extension() == ".gguf" ? fs::path(e.model_path).stem().string() : stem;
  e.models = std::make_unique<measure::ModelStore>(e.model_path, "", (ctx.cache_dir / "models" / "variants").string());
  auto base = e.models->BaseType();
  e.base_precision = base ? *base : "source";
  return e;
}

}  // namespace

Result<Engine> BuildEngine(const spec::SessionSpec& spec, const RunContext& ctx) {
  const std::string& adapter = spec.target.adapter;
  if (adapter == "llama.cpp") {
    HONE_ASSIGN_OR_RETURN(target::Provisioned p,
                          target::FindProvisioned(ctx.cache_dir, ctx.data_dir, spec.target.num_gpus > 0));
    return BuildEngine(spec, ctx, std::move(p));
  }
  if (adapter == "vllm") {
    HONE_ASSIGN_OR_RETURN(std::string launcher, Launcher(spec, "vllm", "pip install vllm"));
    HONE_ASSIGN_OR_RETURN(std::string version, target::ProbeVllmBinaryVersion(launcher));
    HONE_ASSIGN_OR_RETURN(auto a, target::VllmAdapter::Create(ctx.data_dir, version));
    return ForeignEngine(spec, ctx, Installed(launcher, version), std::move(a));
  }
  if (adapter == "sglang") {
    HONE_ASSIGN_OR_RETURN(std::string launcher, Launcher(spec, "python", "pip install \"sglang[all]\""));
    HONE_ASSIGN_OR_RETURN(std::string version, target::ProbeSglangBinaryVersion(launcher));
    HONE_ASSIGN_OR_RETURN(auto a, target::SglangAdapter::Create(ctx.data_dir, version));
    return ForeignEngine(spec, ctx, Installed(launcher, version), std::move(a));
  }
  if (adapter == "command") {
    HONE_ASSIGN_OR_RETURN(auto a, target::CommandAdapter::Create(spec.target, ctx.data_dir));
    return ForeignEngine(spec, ctx, Installed(spec.target.command[0], spec.target.version.empty() ? "unknown" : spec.target.version),
                         std::move(a));
  }
  return InvalidArgument("unknown adapter '" + adapter + "' (llama.cpp, vllm, sglang, command)");
}

Result<Engine> BuildEngine(const spec::SessionSpec& spec, const RunContext& ctx, target::Provisioned provisioned) {
  Engine e;
  e.provisioned = std::move(provisioned);
  HONE_ASSIGN_OR_RETURN(e.adapter, target::LlamaCppAdapter::Create(ctx.data_dir, e.provisioned.version));
  // The model: a file, or a synthesized preset (made once in the cache).
  if (!spec.target.model.path.empty()) {
    e.model_path = spec.target.model.path;
    if (!sys::FileExists(e.model_path)) return NotFound("model file not found: " + e.model_path);
    e.model_name = fs::path(e.model_path).stem().string();
  } else {
    HONE_ASSIGN_OR_RETURN(model::ModelShape shape,
                          model::LoadShapePreset(spec.target.model.preset, ctx.data_dir + "/data/synth_presets.yaml"));
    HONE_TRY(sys::EnsureDir(ctx.cache_dir / "models"));
    e.model_name = "hone-" + shape.name + "-s" + std::to_string(spec.target.model.seed);
    e.model_path = (ctx.cache_dir / "models" / (e.model_name + "-f16.gguf")).string();
    if (!sys::FileExists(e.model_path)) {
      sys::Progress p("synthesizing the " + shape.name + " model");
      p.Update(-1, e.model_path);
      HONE_TRY(model::SynthesizeModel({.shape = shape,
                                       .seed = spec.target.model.seed,
                                       .vocab_path = e.provisioned.VocabPath(shape.vocab),
                                       .out_path = e.model_path}));
      p.Done("done");
    }
  }
  e.models = std::make_unique<measure::ModelStore>(e.model_path, e.provisioned.quantize,
                                                   (ctx.cache_dir / "models" / "variants").string());
  HONE_ASSIGN_OR_RETURN(e.base_precision, e.models->BaseType());
  return e;
}

std::string LaunchCommand(const Engine& engine, const spec::SessionSpec& spec, const Config& config,
                          const std::string& binary) {
  auto model = engine.models->Resolve(config);
  auto served = engine.models->LaunchConfig(config);  // as the executor launches it (a draft model's file)
  target::LaunchContext lc{.server_binary = binary.empty() ? engine.provisioned.server : binary,
                           .model_path = model ? *model : engine.model_path,
                           .port = 8080,
                           .extra_args = spec.target.server_args};
  auto launch = engine.adapter->BuildLaunch(served ? *served : config, lc);
  return launch ? launch->ShellCommand() : "(cannot render: " + launch.error().message + ")";
}

}  // namespace hone::run
