// `hone catalog check`: the knob catalog against a real engine binary (the provisioned
// build, a CUDA build, or a user's own llama-server).
#include <cstdio>

#include "cli/commands.h"
#include "sys/files.h"
#include "target/catalog_check.h"
#include "target/llamacpp.h"

namespace hone::cli {

Action RegisterCatalog(CLI::App& app, const Context& ctx) {
  auto* cmd = app.add_subcommand("catalog", "Knob catalogs");
  cmd->require_subcommand(1);
  auto* check = cmd->add_subcommand("check", "Check the llama.cpp catalog against a llama-server binary: flags in "
                                             "--help, values the parser accepts, environment variables it reads");
  struct Opts {
    std::string binary;
    bool cuda = false;
    std::string save_help;
    bool quick = false;
  };
  auto o = std::make_shared<Opts>();
  check->add_option("--binary", o->binary, "llama-server to check (default: the provisioned one)");
  check->add_flag("--cuda", o->cuda, "Check the provisioned CUDA build");
  check->add_option("--save-help", o->save_help, "Also write the binary's --help text to this file");
  check->add_flag("--quick", o->quick, "Flags and environment variables only (no parser run per value)");
  return [o, &ctx]() -> int {
    std::string binary = o->binary;
    std::string version;
    if (binary.empty()) {
      auto prov = target::FindProvisioned(ctx.cache_dir, ctx.data_dir, o->cuda);
      if (!prov) return ReportError(prov.error());
      binary = prov->server;
      version = prov->version;
    } else {
      auto v = target::ProbeLlamaVersion(binary);
      if (!v) return ReportError(v.error());
      version = *v;
    }
    auto catalog = target::LoadCatalogFor(ctx.data_dir + "/catalogs", "llama.cpp", target::NumericVersion(version));
    if (!catalog) return ReportError(catalog.error());
    std::printf("catalog %s (llama.cpp %s)\n", catalog->path().c_str(), version.c_str());
    auto c = target::CheckCatalog(*catalog, binary, !o->quick);
    if (!c) return ReportError(c.error());
    if (!o->save_help.empty()) {
      if (auto s = sys::WriteFileAtomic(o->save_help, c->help_text); !s) return ReportError(s.error());
    }
    for (const std::string& p : c->problems) std::printf("  problem: %s\n", p.c_str());
    std::printf("%s\n", c->Summary().c_str());
    return c->ok() ? 0 : 1;
  };
}

}  // namespace hone::cli
