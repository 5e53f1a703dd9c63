// CommandRunner: the fleet's seam for the scheduler's command-line tools (sbatch,
// squeue, sacct, scontrol, scancel). The real one runs them as children
// (sys::RunCommand: own process group, bounded by a timeout); tests hand the Slurm
// executor a fake that records every command and answers from a script, so the
// executor's parsing and decisions are tested without a cluster. Not thread-safe.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "core/error.h"
#include "sys/process.h"

namespace hone::fleet {

class CommandRunner {
 public:
  virtual ~CommandRunner() = default;
  // Runs argv to completion (a non-zero exit is not an error here: see status).
  virtual Result<sys::CommandOutput> Run(const std::vector<std::string>& argv, std::chrono::milliseconds timeout) = 0;
};

class RealCommandRunner final : public CommandRunner {
 public:
  Result<sys::CommandOutput> Run(const std::vector<std::string>& argv, std::chrono::milliseconds timeout) override {
    return sys::RunCommand({.argv = argv, .ring_bytes = 1 << 20}, timeout);
  }
};

// Single-quotes a word for a POSIX shell ("it's" -> 'it'\''s').
std::string ShellQuote(const std::string& word);

}  // namespace hone::fleet
