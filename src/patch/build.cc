#include "patch/build.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <thread>

#include "core/strings.h"
#include "patch/git.h"
#include "sys/clock.h"
#include "sys/compiler_cache.h"
#include "sys/files.h"
#include "sys/process.h"

namespace hone::patch {
namespace {

namespace fs = std::filesystem;

constexpr char kConfiguredMarker[] = ".hone-configured";
constexpr char kStateFile[] = ".hone-build-state";
// 2001-09-09: older than anything a build produced, newer than zero (some tools treat 0 as "missing").
constexpr time_t kOldMtime = 1000000000;

std::string Expand(std::string s, const BuildPaths& p) {
  int jobs = p.jobs > 0 ? p.jobs : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  s = ReplaceAll(std::move(s), "{src}", p.src.string());
  s = ReplaceAll(std::move(s), "{build}", p.build.string());
  s = ReplaceAll(std::move(s), "{slot}", p.slot.string());
  return ReplaceAll(std::move(s), "{jobs}", std::to_string(jobs));
}

}  // namespace

std::string BuildRecipe::Digest() const {
  std::string text = name + "\n";
  for (const auto* steps : {&configure, &build}) {
    for (const auto& argv : *steps) text += ShellJoin(argv) + "\n";
    text += "--\n";
  }
  for (const auto& [k, v] : env) text += k + "=" + v + "\n";
  for (const auto& a : artifacts) text += a + "\n";
  return StableHash(text);
}

BuildRecipe CMakeRecipe(std::string name, const std::vector<std::string>& cmake_args,
                        const std::vector<std::string>& targets, const std::vector<std::string>& artifacts) {
  BuildRecipe r;
  r.name = std::move(name);
  std::vector<std::string> configure = {"cmake", "-S", "{src}", "-B", "{build}", "-G", "Ninja"};
  // Relative paths in cache keys: a cache entry made in one worktree serves the next.
  const sys::CompilerCache cache = sys::CMakeCompilerCache("{slot}");
  configure.insert(configure.end(), cache.cmake_args.begin(), cache.cmake_args.end());
  configure.insert(configure.end(), cmake_args.begin(), cmake_args.end());
  r.configure.push_back(std::move(configure));
  std::vector<std::string> build = {"cmake", "--build", "{build}", "-j", "{jobs}"};
  for (const std::string& t : targets) {
    build.push_back("--target");
    build.push_back(t);
  }
  r.build.push_back(std::move(build));
  r.env = cache.env;
  r.artifacts = artifacts;
  return r;
}

BuildResult RunBuild(const BuildRecipe& recipe, const BuildPaths& paths, std::chrono::milliseconds timeout,
                     sys::ProcessRunner& runner, sys::Clock& clock) {
  BuildResult result;
  const double start = clock.MonoSeconds();
  const double limit_s =
      std::min<double>(static_cast<double>(recipe.timeout.count()), static_cast<double>(timeout.count()) / 1000.0);
  std::error_code ec;
  fs::create_directories(paths.build, ec);
  if (ec) {
    result.message = "cannot create the build directory " + paths.build.string() + ": " + ec.message();
    return result;
  }
  std::map<std::string, std::string> env;
  for (const auto& [k, v] : recipe.env) env[k] = Expand(v, paths);

  auto run_steps = [&](const std::vector<std::vector<std::string>>& steps) -> bool {
    for (const auto& raw : steps) {
      sys::ProcessSpec spec;
      for (const std::string& a : raw) spec.argv.push_back(Expand(a, paths));
      spec.env = env;
      spec.cwd = paths.build.string();
      spec.log_path = paths.log.string();
      spec.ring_bytes = 64 * 1024;
      double left_s = limit_s - (clock.MonoSeconds() - start);
      if (left_s <= 0) {
        result.timed_out = true;
        result.message = "the build ran past its " + HumanSeconds(limit_s) + " limit";
        return false;
      }
      (void)sys::AppendLineSync(paths.log, "$ " + ShellJoin(spec.argv));
      auto out = runner.Run(spec, std::chrono::milliseconds(static_cast<int64_t>(left_s * 1000)));
      if (!out) {
        result.timed_out = out.error().code == ErrorCode::kDeadlineExceeded;
        result.message = result.timed_out ? "the build ran past its " + HumanSeconds(limit_s) + " limit and was killed"
                                          : out.error().message;
        result.log_tail = std::string(out.error().Get("output_tail"));
        return false;
      }
      if (!out->status.success()) {
        result.message = fs::path(spec.argv[0]).filename().string() + " failed (" + out->status.ToString() + ")";
        for (const std::string& line : Split(out->output, '\n')) {
          if (Contains(line, "error:") || Contains(line, "Error ") || Contains(line, "FAILED:")) {
            result.message += ": " + std::string(Trim(line)).substr(0, 240);
            break;
          }
        }
        result.log_tail = LastLines(out->output, 20);
        return false;
      }
    }
    return true;
  };

  fs::path marker = paths.build / kConfiguredMarker;
  if (!fs::exists(marker, ec)) {
    result.configured = true;
    if (!run_steps(recipe.configure)) {
      result.seconds = clock.MonoSeconds() - start;
      return result;
    }
    (void)sys::WriteFileAtomic(marker, recipe.Digest() + "\n");
  }
  bool ok = run_steps(recipe.build);
  result.seconds = clock.MonoSeconds() - start;
  if (!ok) return result;
  for (const std::string& a : recipe.artifacts) {
    if (!fs::exists(paths.build / a, ec)) {
      result.message = "the build succeeded but did not produce " + a;
      return result;
    }
  }
  result.ok = true;
  return result;
}

Result<BuildState> ReadBuildState(const fs::path& build_dir) {
  HONE_ASSIGN_OR_RETURN(std::string text, sys::ReadFile(build_dir / kStateFile));
  BuildState s;
  for (const std::string& line : Split(text, '\n')) {
    if (line.rfind("recipe ", 0) == 0)
      s.recipe_digest = line.substr(7);
    else if (line.rfind("base ", 0) == 0)
      s.base = line.substr(5);
    else if (line.rfind("dirty ", 0) == 0)
      s.dirty.insert(line.substr(6));
  }
  if (s.recipe_digest.empty() || s.base.empty())
    return DataLoss("build state in " + build_dir.string() + " is incomplete");
  return s;
}

Status WriteBuildState(const fs::path& build_dir, const BuildState& state) {
  std::string text = "recipe " + state.recipe_digest + "\nbase " + state.base + "\n";
  for (const std::string& d : state.dirty) {
    if (d.find('\n') == std::string::npos) text += "dirty " + d + "\n";
  }
  std::error_code ec;
  fs::create_directories(build_dir, ec);
  return sys::WriteFileAtomic(build_dir / kStateFile, text);
}

Result<int> PrepareIncremental(const fs::path& src, const fs::path& build_dir, const std::string& recipe_digest,
                               const std::string& new_base, const std::vector<std::string>& touched) {
  // Files that may differ from what the outputs were built from.
  std::set<std::string> changed(touched.begin(), touched.end());
  auto prev = ReadBuildState(build_dir);
  bool usable = prev && prev->recipe_digest == recipe_digest && !prev->dirty.contains("*");
  if (usable) {
    changed.insert(prev->dirty.begin(), prev->dirty.end());
    auto diff = GitOut(src, {"diff", "--name-only", "-z", "--no-renames", prev->base, new_base});
    if (diff) {
      for (const std::string& n : Split(*diff, '\0')) {
        if (!n.empty()) changed.insert(n);
      }
    } else {
      usable = false;  // e.g. the old base is gone: fall back to a full build
    }
  }
  // Written before the build: until it succeeds, everything that changed is dirty, and
  // with no usable record the outputs correspond to nothing known ("*").
  BuildState next{recipe_digest, new_base, usable ? changed : std::set<std::string>{"*"}};
  HONE_TRY(WriteBuildState(build_dir, next));
  if (!usable) return -1;

  HONE_ASSIGN_OR_RETURN(std::string files, GitOut(src, {"ls-files", "-z"}));
  const struct timespec times[2] = {{kOldMtime, 0}, {kOldMtime, 0}};
  int left_new = 0;
  for (const std::string& name : Split(files, '\0')) {
    if (name.empty()) continue;
    if (changed.contains(name)) {
      ++left_new;
      continue;
    }
    fs::path p = src / name;
    // AT_SYMLINK_NOFOLLOW: never touch what a symlink in the tree points at.
    (void)utimensat(AT_FDCWD, p.c_str(), times, AT_SYMLINK_NOFOLLOW);
  }
  return left_new;
}

Status FinishBuildState(const fs::path& build_dir, const std::string& recipe_digest, const std::string& base,
                        const std::vector<std::string>& touched) {
  return WriteBuildState(build_dir, BuildState{recipe_digest, base, {touched.begin(), touched.end()}});
}

}  // namespace hone::patch
