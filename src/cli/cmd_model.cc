#include <chrono>
#include <cstdio>
#include <filesystem>
#include <thread>

#include "cli/commands.h"
#include "core/strings.h"
#include "model/gguf.h"
#include "model/synth.h"
#include "sys/files.h"
#include "sys/term.h"
#include "target/llamacpp.h"

namespace hone::cli {

namespace fs = std::filesystem;

namespace {

struct SynthOpts {
  std::string preset = "small";
  std::string shape_file;
  uint64_t seed = 42;
  std::string vocab;
  std::string type = "f16";
  std::vector<std::string> quants;
  std::string out;
  bool force = false;
  int threads = 0;
};

int RunSynth(const SynthOpts& o, const Context& ctx) {
  Result<model::ModelShape> shape = o.shape_file.empty()
                                        ? model::LoadShapePreset(o.preset, ctx.data_dir + "/data/synth_presets.yaml")
                                        : model::LoadShapeFile(o.shape_file);
  if (!shape) return ReportError(shape.error());
  if (o.type != "f16" && o.type != "bf16" && o.type != "f32") {
    return ReportError(Error{ErrorCode::kInvalidArgument, "--type must be f16, bf16 or f32 (quantize with --quant)", {}});
  }
  std::string vocab_name = o.vocab.empty() ? shape->vocab : o.vocab;
  std::string vocab_path = vocab_name;
  auto prov = target::FindProvisioned(ctx.cache_dir, ctx.data_dir);
  if (vocab_name.find('/') == std::string::npos && !vocab_name.ends_with(".gguf")) {
    if (!prov) return ReportError(prov.error());
    vocab_path = prov->VocabPath(vocab_name);
  }
  if (!o.quants.empty() && !prov) return ReportError(prov.error());

  fs::path out = o.out;
  std::string stem = "hone-" + shape->name + "-s" + std::to_string(o.seed);
  if (out.empty()) {
    if (auto s = sys::EnsureDir(ctx.cache_dir / "models"); !s) return ReportError(s.error());
    out = ctx.cache_dir / "models" / (stem + "-" + o.type + ".gguf");
  }
  if (o.force || !sys::FileExists(out)) {
    sys::Progress progress("synthesizing " + shape->name + " model");
    progress.Update(-1, "writing " + out.filename().string());
    auto start = std::chrono::steady_clock::now();
    const model::GgmlType type = o.type == "f32"    ? model::GgmlType::kF32
                                 : o.type == "bf16" ? model::GgmlType::kBF16
                                                    : model::GgmlType::kF16;
    auto r = model::SynthesizeModel({.shape = *shape, .seed = o.seed, .vocab_path = vocab_path, .out_path = out.string(),
                                     .type = type, .threads = o.threads,
                                     .progress = [&](double f) { progress.Update(f, out.filename().string()); }});
    if (!r) return ReportError(r.error());
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    char rate[96];
    std::snprintf(rate, sizeof rate, "done in %.1f s (%.2f GB/s)", secs, static_cast<double>(r->file_bytes) / 1e9 / secs);
    progress.Done(rate);
  }
  auto info = model::ReadGguf(out.string());
  if (!info) return ReportError(info.error());
  std::printf("%s  %s  %.1fM parameters  %s\n", o.type.c_str(), out.string().c_str(),
              static_cast<double>(info->ParameterCount()) / 1e6, HumanBytes(info->file_size).c_str());
  for (const std::string& q : o.quants) {
    fs::path qout = out.parent_path() / (stem + "-" + ToLower(q) + ".gguf");
    if (!o.out.empty()) qout = out.parent_path() / (out.stem().string() + "-" + ToLower(q) + ".gguf");
    if (o.force || !sys::FileExists(qout)) {
      sys::Progress progress("quantizing to " + q);
      progress.Update(-1, qout.filename().string());
      int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
      auto bytes = target::QuantizeModel(prov->quantize, out.string(), qout.string(), q, threads);
      if (!bytes) return ReportError(bytes.error());
      progress.Done("done");
    }
    auto qinfo = model::ReadGguf(qout.string());
    if (!qinfo) return ReportError(qinfo.error());
    std::printf("%s  %s  %s\n", ToLower(q).c_str(), qout.string().c_str(), HumanBytes(qinfo->file_size).c_str());
  }
  return 0;
}

int RunInfo(const std::string& path) {
  auto f = model::ReadGguf(path);
  if (!f) return ReportError(f.error());
  std::printf("file          %s (%s, GGUF v%u)\n", path.c_str(), HumanBytes(f->file_size).c_str(), f->version);
  std::printf("architecture  %s\n", f->Str("general.architecture").value_or("?").c_str());
  std::printf("name          %s\n", f->Str("general.name").value_or("?").c_str());
  std::printf("parameters    %.2fM\n", static_cast<double>(f->ParameterCount()) / 1e6);
  std::map<std::string, uint64_t> by_type;
  for (const auto& t : f->tensors) by_type[model::GgmlTypeName(t.type)] += t.bytes;
  std::printf("tensors       %zu:", f->tensors.size());
  for (const auto& [type, bytes] : by_type) std::printf(" %s %s;", type.c_str(), HumanBytes(bytes).c_str());
  std::printf("\n");
  std::string arch = f->Str("general.architecture").value_or("llama");
  for (const char* key : {"block_count", "embedding_length", "attention.head_count", "attention.head_count_kv",
                          "feed_forward_length", "context_length"}) {
    if (auto v = f->Int(arch + "." + key)) std::printf("%-13s %lld\n", key, static_cast<long long>(*v));
  }
  return 0;
}

}  // namespace

Action RegisterModel(CLI::App& app, const Context& ctx) {
  auto* cmd = app.add_subcommand("model", "Synthesize and inspect models");
  cmd->require_subcommand(1);
  auto* synth = cmd->add_subcommand("synth", "Write a llama-architecture GGUF with random weights (deterministic)");
  auto so = std::make_shared<SynthOpts>();
  synth->add_option("--preset", so->preset,
                    "Shape preset from data/synth_presets.yaml (tiny, small, medium, llama-3.2-1b, llama-3.1-8b)");
  synth->add_option("--shape", so->shape_file, "HF config.json or shape YAML instead of a preset");
  synth->add_option("--seed", so->seed, "Random seed (same seed, same bytes)");
  synth->add_option("--vocab", so->vocab, "Vocab name (models/ggml-vocab-NAME.gguf) or a GGUF path");
  synth->add_option("--type", so->type, "Matrix type of the written file: f16, bf16 or f32");
  synth->add_option("--threads", so->threads, "Generator threads (default: all CPUs; the file is the same)");
  synth->add_option("--quant", so->quants, "Also quantize with llama-quantize (e.g. q8_0 q4_0)")->delimiter(',');
  synth->add_option("--out", so->out, "Output path (default: <cache>/models/hone-<preset>-s<seed>-<type>.gguf)");
  synth->add_flag("--force", so->force, "Rewrite files that already exist");
  auto* info = cmd->add_subcommand("info", "Show a GGUF file's architecture, size and tensor types");
  auto info_path = std::make_shared<std::string>();
  info->add_option("path", *info_path, "GGUF file")->required();
  return [synth, info, so, info_path, &ctx]() -> int {
    if (synth->parsed()) return RunSynth(*so, ctx);
    if (info->parsed()) return RunInfo(*info_path);
    return 2;
  };
}

}  // namespace hone::cli
