#include "run/engine.h"

#include <filesystem>

#include "model/synth.h"
#include "sys/files.h"
#include "sys/term.h"

namespace hone::run {

namespace fs = std::filesystem;

Result<Engine> BuildEngine(const spec::SessionSpec& spec, const RunContext& ctx) {
  if (spec.target.adapter != "llama.cpp") {
    return InvalidArgument("hone run drives llama.cpp targets on this machine; the " + spec.target.adapter +
                           " adapter needs its framework installed (see docs/adapters.md)");
  }
  HONE_ASSIGN_OR_RETURN(target::Provisioned p,
                        target::FindProvisioned(ctx.cache_dir, ctx.data_dir, spec.target.num_gpus > 0));
  return BuildEngine(spec, ctx, std::move(p));
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
