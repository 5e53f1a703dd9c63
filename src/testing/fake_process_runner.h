// FakeProcessRunner: the process seam for tests. It records every command it is asked
// to run and answers with canned output: the first rule whose program (argv[0]'s
// file name) matches, else exit 0 with no output. Not thread-safe.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "sys/process.h"

namespace hone::testing {

class FakeProcessRunner final : public sys::ProcessRunner {
 public:
  struct Rule {
    std::string program;  // argv[0]'s file name ("llama-perplexity")
    sys::CommandOutput output;
  };

  Result<sys::CommandOutput> Run(const sys::ProcessSpec& spec, std::chrono::milliseconds) override {
    commands.push_back(spec.argv);
    const std::string program = spec.argv.empty() ? "" : std::filesystem::path(spec.argv[0]).filename().string();
    for (const Rule& r : rules) {
      if (r.program == program) return r.output;
    }
    sys::CommandOutput ok;
    ok.status.code = 0;
    return ok;
  }

  std::vector<Rule> rules;
  std::vector<std::vector<std::string>> commands;  // argv of every command run
};

}  // namespace hone::testing
