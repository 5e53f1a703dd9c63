// hone: the one composition root. Parses the command line, resolves directories,
// installs the interrupt handlers and runs one subcommand.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <vector>

#include "cli/commands.h"
#include "cli/context.h"
#include "core/strings.h"
#include "sys/files.h"
#include "sys/signals.h"

#ifndef HONE_VERSION
#define HONE_VERSION "0.0.0"
#endif

namespace hone::cli {

std::string ResolveDataDir() {
  if (const char* d = std::getenv("HONE_DATA_DIR"); d && *d) return d;
  if (std::filesystem::exists(std::filesystem::path(HONE_SOURCE_DATA_DIR) / "data")) return HONE_SOURCE_DATA_DIR;
  char exe[4096];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n > 0) {
    exe[n] = 0;
    auto share = std::filesystem::path(exe).parent_path().parent_path() / "share" / "hone";
    if (std::filesystem::exists(share / "data")) return share.string();
  }
  return HONE_SOURCE_DATA_DIR;
}

Result<Config> ParseSettings(const std::vector<std::string>& settings, std::string_view what) {
  Config c;
  for (const std::string& kv : settings) {
    const size_t eq = kv.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == kv.size()) {
      return InvalidArgument(std::string(what) + " wants KNOB=VALUE, got '" + kv + "'");
    }
    if (c.Get(kv.substr(0, eq))) return InvalidArgument(std::string(what) + " names " + kv.substr(0, eq) + " twice");
    c.Set(kv.substr(0, eq), kv.substr(eq + 1));
  }
  return c;
}

int ReportError(const Error& e) {
  std::fprintf(stderr, "hone: error: %s\n", e.message.c_str());
  std::string excerpt(e.Get("log_excerpt"));
  if (excerpt.empty()) excerpt = std::string(e.Get("output_tail"));
  if (!excerpt.empty()) {
    for (const std::string& line : Split(LastLines(excerpt, 6), '\n')) {
      std::fprintf(stderr, "hone:   | %s\n", line.c_str());
    }
  }
  switch (e.code) {
    case ErrorCode::kInvalidArgument: return 2;
    case ErrorCode::kCancelled: return 130;
    default: return 1;
  }
}

int Main(int argc, char** argv) {
  CLI::App app{"hone: an autonomous, closed-loop optimizer for LLM inference serving"};
  app.set_version_flag("--version", std::string("hone ") + HONE_VERSION);
  app.require_subcommand(1);
  std::string cache_dir;
  app.add_option("--cache-dir", cache_dir, "Cache for engines and models (default: $HONE_CACHE_DIR or ~/.cache/hone)");
  Context ctx;
  ctx.data_dir = ResolveDataDir();
  ctx.cache_dir = sys::DefaultCacheDir();
  ctx.clock = &sys::DefaultClock();
  ctx.runner = &sys::DefaultProcessRunner();

  // Subcommands read ctx when they run (after parsing), so --cache-dir applies.
  std::vector<std::pair<CLI::App*, Action>> actions;
  // A registration may add several subcommands sharing one action.
  auto add = [&](Action (*reg)(CLI::App&, const Context&)) {
    size_t before = app.get_subcommands({}).size();
    Action a = reg(app, ctx);
    auto subs = app.get_subcommands({});
    for (size_t i = before; i < subs.size(); ++i) actions.emplace_back(subs[i], a);
  };
  add(RegisterProvision);
  add(RegisterModel);
  add(RegisterBench);
  add(RegisterRun);
  add(RegisterServe);
  add(RegisterCatalog);
  add(RegisterPatch);
  add(RegisterKernel);
  add(RegisterKb);
  add(RegisterRoofline);
  add(RegisterSearch);
  add(RegisterFleet);
  add(RegisterChaos);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  if (!cache_dir.empty()) ctx.cache_dir = cache_dir;
  sys::InstallInterruptHandlers();
  for (auto& [sub, action] : actions) {
    if (sub->parsed()) return action();
  }
  return 2;
}

}  // namespace hone::cli

int main(int argc, char** argv) {
  try {
    return hone::cli::Main(argc, argv);
  } catch (const std::exception& e) {
    // Backstop: a bug escaped as an exception. Children are reaped by their guards.
    std::fprintf(stderr, "hone: internal error: %s\n", e.what());
    return 70;
  }
}
