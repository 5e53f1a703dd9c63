// The engine a session serves with and the model it serves: for llama.cpp the
// provisioned build (the CUDA build for a GPU session), its adapter (knob catalog by
// version), the model file (a path, or a preset synthesized once into the cache) and
// the store of its quantized variants; for vLLM and SGLang the launcher on PATH (or
// target.command) and its installed version; for "command" the spec's template. The
// rest of the session sees only the adapter. Owns what it builds; not thread-safe.
#pragma once

#include <memory>
#include <string>

#include "core/config.h"
#include "core/error.h"
#include "measure/model_store.h"
#include "run/context.h"
#include "spec/session_spec.h"
#include "target/adapter.h"
#include "target/llamacpp.h"

namespace hone::run {

struct Engine {
  // llama.cpp: the provisioned build; other engines: origin "path", the launcher as
  // `server` and the installed version (no tools, no source).
  target::Provisioned provisioned;
  std::unique_ptr<target::Adapter> adapter;
  std::string model_path;
  std::string model_name;      // the file's stem, or "hone-<preset>-s<seed>"
  std::string base_precision;  // the model file's weight type ("f16", "q8_0", ...)
  std::unique_ptr<measure::ModelStore> models;
};

// Finds the engine the spec's adapter names (kNotFound says how to provision or
// install it) and builds the rest around it.
Result<Engine> BuildEngine(const spec::SessionSpec& spec, const RunContext& ctx);
// The adapter, model and model store around an already found engine.
Result<Engine> BuildEngine(const spec::SessionSpec& spec, const RunContext& ctx, target::Provisioned provisioned);

// The command line that serves `config` (with `binary`, "" = the engine's), for the
// report; a rendering error is shown in its place.
std::string LaunchCommand(const Engine& engine, const spec::SessionSpec& spec, const Config& config,
                          const std::string& binary);

}  // namespace hone::run
