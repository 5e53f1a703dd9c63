#include "testing/llama_env.h"

#include <cstdlib>
#include <map>
#include <mutex>
#include <thread>

#include "model/synth.h"
#include "sys/files.h"
#include "testing/test_util.h"

namespace hone::testing {
namespace {

struct State {
  std::once_flag once;
  std::optional<target::Provisioned> prov;
  std::string reason;
  std::unique_ptr<sys::TempDir> dir;
  std::mutex mu;
  std::map<std::string, std::string> models;
};

State& S() {
  static State* s = new State();  // leaked on purpose: lives until exit
  return *s;
}

}  // namespace

const target::Provisioned* Llama() {
  State& s = S();
  std::call_once(s.once, [&] {
    auto p = target::FindProvisioned(sys::DefaultCacheDir(), SourceDir().string());
    if (p) {
      s.prov = *p;
    } else {
      s.reason = "llama.cpp not provisioned: " + p.error().message;
    }
  });
  return s.prov ? &*s.prov : nullptr;
}

std::string LlamaUnavailableReason() { return S().reason; }

std::string SynthModel(const std::string& preset, const std::string& type) {
  const target::Provisioned* p = Llama();
  if (!p) return "";
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mu);
  std::string key = preset + "/" + type;
  if (auto it = s.models.find(key); it != s.models.end()) return it->second;
  if (!s.dir) {
    auto d = sys::TempDir::Create("hone-test-models");
    if (!d) return "";
    s.dir = std::move(*d);
    // The state itself is never destroyed; its models go when the test binary exits
    // (each run left up to 457 MB in /tmp).
    std::atexit([] { S().dir.reset(); });
  }
  std::string f16 = (s.dir->path() / (preset + "-f16.gguf")).string();
  if (!s.models.contains(preset + "/f16")) {
    auto shape = model::LoadShapePreset(preset, (SourceDir() / "data/synth_presets.yaml").string());
    if (!shape) return "";
    auto r = model::SynthesizeModel({.shape = *shape, .seed = 42, .vocab_path = p->VocabPath(shape->vocab), .out_path = f16});
    if (!r) return "";
    s.models[preset + "/f16"] = f16;
  }
  if (type == "f16") return f16;
  std::string out = (s.dir->path() / (preset + "-" + type + ".gguf")).string();
  if (!target::QuantizeModel(p->quantize, f16, out, type, 2)) return "";
  s.models[key] = out;
  return out;
}

}  // namespace hone::testing
