// The llama.cpp target: the llama-server adapter, provisioning of a pinned llama.cpp
// build, and the helper tools (llama-quantize) hone drives.
//
// Provisioning is idempotent and shared between sessions: the source comes from the
// npm package pinned in data/llama.cpp.yaml (version + tarball SHA-256; the package
// holds a git bundle of llama.cpp), is cloned into <cache>/llama.cpp/<tag>-<commit>/src
// and built (CPU Release, or CUDA with --cuda) into build-<variant>/. A stamp file
// written last marks a finished build, so a second call returns at once and an
// interrupted build resumes (ninja is incremental). A file lock serializes concurrent
// provisioners. A llama-server already on PATH is used instead of building when the
// caller allows it (its version is recorded); the source is still fetched, since the
// vocab files and the patch executor need it. On a host that cannot reach the npm
// registry (an air-gapped GPU node), `source` names a local llama.cpp git checkout to
// clone and build instead; a checkout at another commit than the pinned one is built
// into its own <cache>/llama.cpp/local-<commit>/ and recorded as such.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "core/error.h"
#include "target/adapter.h"

namespace hone::target {

struct LlamaCppSource {
  std::string npm_package;
  std::string npm_version;
  std::string tarball_sha256;
  std::string bundle_path;  // inside the tarball
  std::string tag;
  std::string commit;
  std::vector<std::string> targets;
  std::vector<std::string> cmake_args;       // for every build
  std::vector<std::string> cpu_cmake_args;   // CPU builds
  std::vector<std::string> cuda_cmake_args;  // CUDA builds
  std::string short_id() const { return tag + "-" + commit.substr(0, 7); }
};
Result<LlamaCppSource> LoadLlamaCppSource(const std::string& path);

struct ProvisionOptions {
  std::filesystem::path cache_dir;
  std::string data_dir;      // where data/llama.cpp.yaml lives
  bool cuda = false;
  std::string cuda_arch;     // "90"; empty = ask nvidia-smi
  bool use_path = true;      // use a llama-server on PATH instead of building
  int jobs = 0;              // 0 = number of CPUs
  std::string source;        // a local llama.cpp git checkout to build instead of fetching
};

struct Provisioned {
  std::string origin;        // "built", "path" or "source" (built from a local checkout)
  std::string variant;       // "cpu" or "cuda-sm90"
  std::vector<std::string> cmake_args;  // the configure arguments of this build (a patch rebuild repeats them)
  std::filesystem::path root;
  std::filesystem::path src_dir;
  std::string server;        // absolute paths of the tools
  std::string quantize;
  std::string bench;
  std::string perplexity;
  std::string version;       // "0.4.0-dev (build 1, commit 80fb11a)"
  std::string tag;
  std::string commit;
  double build_seconds = 0;
  std::string VocabPath(const std::string& vocab) const;  // models/ggml-vocab-<vocab>.gguf
};

// Provisions (or finds) llama.cpp; shows progress on stderr.
Result<Provisioned> ProvisionLlamaCpp(const ProvisionOptions& options);
// Finds an existing provision without building anything (kNotFound otherwise). The
// pinned source's builds come first, then builds of local checkouts (newest first).
// `cuda`: a CUDA build, else one on PATH. Without it: a CPU build, else one on PATH,
// else a CUDA build (tools that only need the source or a server take any).
Result<Provisioned> FindProvisioned(const std::filesystem::path& cache_dir, const std::string& data_dir,
                                    bool cuda = false);
// The configure arguments a build of `variant` ("cpu", "cuda-sm90") uses.
std::vector<std::string> BuildArgs(const LlamaCppSource& src, const std::string& variant);

// `llama-server --version` -> "0.4.0-dev (build 1, commit 80fb11a)".
Result<std::string> ProbeLlamaVersion(const std::string& binary);
// "0.4.0" from a version string or tag.
std::string NumericVersion(const std::string& version);

// Runs llama-quantize in -> out as `type` (e.g. "q8_0"); returns the output size.
Result<uint64_t> QuantizeModel(const std::string& quantize_binary, const std::string& in, const std::string& out,
                               const std::string& type, int threads);

class LlamaCppAdapter final : public Adapter {
 public:
  // Loads the catalog matching `version` and the failure rules from the data dir.
  static Result<std::unique_ptr<LlamaCppAdapter>> Create(const std::string& data_dir, const std::string& version);
  std::string name() const override { return "llama.cpp"; }
  const KnobCatalog& catalog() const override { return catalog_; }
  const std::vector<FailureRule>& failure_rules() const override { return rules_; }
  Result<LaunchSpec> BuildLaunch(const Config& config, const LaunchContext& ctx) const override;
  MetricNames metric_names() const override;
  std::map<std::string, std::string> ExactLengthFields() const override { return {{"ignore_eos", "true"}}; }

 private:
  LlamaCppAdapter(KnobCatalog c, std::vector<FailureRule> r) : catalog_(std::move(c)), rules_(std::move(r)) {}
  KnobCatalog catalog_;
  std::vector<FailureRule> rules_;
};

}  // namespace hone::target
