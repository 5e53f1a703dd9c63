#include "measure/model_store.h"

#include <filesystem>
#include <thread>

#include "core/strings.h"
#include "model/gguf.h"
#include "sys/files.h"
#include "target/llamacpp.h"

namespace hone::measure {

namespace fs = std::filesystem;

ModelStore::ModelStore(std::string base, std::string quantize, std::string variants_dir)
    : base_(std::move(base)), quantize_(std::move(quantize)), variants_dir_(std::move(variants_dir)) {}

Result<std::string> ModelStore::BaseType() const {
  HONE_ASSIGN_OR_RETURN(model::GgufFile f, model::ReadGguf(base_));
  // general.file_type: llama_ftype values.
  switch (f.Int("general.file_type").value_or(-1)) {
    case 0: return std::string("f32");
    case 1: return std::string("f16");
    case 2: return std::string("q4_0");
    case 7: return std::string("q8_0");
    case 8: return std::string("q5_0");
    case 15: return std::string("q4_k_m");
    case 17: return std::string("q5_k_m");
    case 18: return std::string("q6_k");
    case 32: return std::string("bf16");
    default: return std::string("unknown");
  }
}

Result<std::string> ModelStore::Resolve(const Config& config) {
  auto weights = config.Get("weights");
  if (!weights || *weights == "source") return base_;
  HONE_ASSIGN_OR_RETURN(std::string base_type, BaseType());
  if (*weights == base_type) return base_;
  if (base_type != "f16" && base_type != "f32" && base_type != "bf16") {
    return FailedPrecondition("the base model is " + base_type + ": weights=" + *weights +
                              " would re-quantize an already quantized model");
  }
  return Variant(*weights);
}

Result<std::string> ModelStore::Variant(const std::string& type) {
  if (quantize_.empty()) return FailedPrecondition("a " + type + " copy of the model needs llama-quantize");
  HONE_TRY(sys::EnsureDir(variants_dir_));
  fs::path out = fs::path(variants_dir_) / (fs::path(base_).stem().string() + "-" + type + ".gguf");
  HONE_ASSIGN_OR_RETURN(auto lock, sys::FileLock::Acquire(out.string() + ".lock"));
  if (sys::FileExists(out)) return out.string();
  int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  HONE_TRY(target::QuantizeModel(quantize_, base_, out.string(), type, threads));
  return out.string();
}

Result<Config> ModelStore::LaunchConfig(const Config& config) {
  Config out = config;
  auto draft = config.Get("spec_draft_weights");
  if (!draft || draft->empty()) return out;
  HONE_ASSIGN_OR_RETURN(std::string base_type, BaseType());
  std::string file = base_;
  if (*draft != base_type) {
    HONE_ASSIGN_OR_RETURN(file, Variant(*draft));
  }
  out.Erase("spec_draft_weights");
  out.Set("spec_draft_model", file);
  if (!config.Get("spec_type")) out.Set("spec_type", "draft-simple");
  return out;
}

}  // namespace hone::measure
