// CatalogCheck: a knob catalog against a real engine binary. Every flag must be one the
// binary's --help lists, its argument parser must accept every value a search may try
// (llama-server parses arguments in order and `--version` exits 0 after them, without
// loading a model), and every environment variable must be read by the binary (its
// strings) or by its OpenMP runtime. CUDA-only variables are checked only against a
// binary with the CUDA backend. Used by `hone catalog check` (a user's own build, the
// CUDA build on a GPU host) and the slow tests (the provisioned build).
#pragma once

#include <string>
#include <vector>

#include "core/error.h"
#include "target/catalog.h"

namespace hone::target {

struct CatalogCheck {
  std::string binary;
  bool cuda_backend = false;   // the binary has ggml's CUDA backend
  int help_options = 0;        // option names parsed from --help
  int flags_checked = 0;
  int values_checked = 0;
  int env_checked = 0;
  int env_skipped = 0;         // GPU-only variables on a binary without the GPU backend
  std::vector<std::string> problems;  // one line each: what is wrong and for which knob
  std::string help_text;       // the binary's --help, as printed
  bool ok() const { return problems.empty(); }
  std::string Summary() const;
};

// The option names (-t, --threads, ...) in a llama.cpp-style --help text.
std::vector<std::string> HelpOptions(const std::string& help_text);

// A catalog against an argparse-style --help text (vLLM's `vllm serve --help=all`,
// SGLang's `python -m sglang.launch_server --help`): every flag and negative flag must
// be listed, and every enum value must be one of the choices the help lists for its
// flag. One line per problem; empty when the catalog matches.
std::vector<std::string> HelpTextProblems(const KnobCatalog& catalog, const std::string& help_text);

// Runs the checks (a few hundred `binary FLAG VALUE --version` calls: seconds on a CPU
// build, minutes on a CUDA build, whose every start initializes the driver; `values`
// false skips them: flags and variables only). Errors only when the binary cannot run.
Result<CatalogCheck> CheckCatalog(const KnobCatalog& catalog, const std::string& binary, bool values = true);

}  // namespace hone::target
