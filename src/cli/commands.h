// The subcommands. Each registers its flags on a CLI11 app and returns the exit code
// when run. Errors print one line "hone: error: <cause>" and return a non-zero code.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "cli/context.h"
#include "core/config.h"
#include "core/error.h"

namespace hone::cli {

// A registered subcommand's action (run after parsing).
using Action = std::function<int()>;

Action RegisterProvision(CLI::App& app, const Context& ctx);
Action RegisterModel(CLI::App& app, const Context& ctx);
Action RegisterBench(CLI::App& app, const Context& ctx);
Action RegisterRun(CLI::App& app, const Context& ctx);
Action RegisterServe(CLI::App& app, const Context& ctx);
Action RegisterPatch(CLI::App& app, const Context& ctx);
Action RegisterKernel(CLI::App& app, const Context& ctx);
Action RegisterKb(CLI::App& app, const Context& ctx);
Action RegisterRoofline(CLI::App& app, const Context& ctx);
Action RegisterSearch(CLI::App& app, const Context& ctx);
Action RegisterChaos(CLI::App& app, const Context& ctx);
Action RegisterCatalog(CLI::App& app, const Context& ctx);
Action RegisterFleet(CLI::App& app, const Context& ctx);

// Prints an error line (with the log excerpt / hint when present) and returns 1
// (2 for invalid arguments, 130 for interrupts).
int ReportError(const Error& e);

// KNOB=VALUE settings from the command line (`hone serve --set`, `hone kb forget`,
// `hone search record --stock`, `hone search noise --candidate`): each needs a knob and
// a value, and no knob twice. `what` names the flag in the error ("--set wants
// KNOB=VALUE, got 'threads'").
Result<Config> ParseSettings(const std::vector<std::string>& settings, std::string_view what);

}  // namespace hone::cli
