#include "sys/machine.h"

#include <algorithm>

#include <unistd.h>

#include <cctype>
#include <chrono>
#include <thread>

#include "core/strings.h"
#include "sys/files.h"
#include "sys/process.h"

namespace hone::sys {

namespace {

std::string Slugify(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (std::isalnum(static_cast<unsigned char>(c))) {
      out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    } else if (!out.empty() && out.back() != '-') {
      out += '-';
    }
  }
  while (!out.empty() && out.back() == '-') out.pop_back();
  return out;
}

}  // namespace

std::string MachineInfo::Slug() const { return SlugFor(static_cast<int>(gpus.size())); }

std::string MachineInfo::SlugFor(int num_gpus) const {
  if (num_gpus > 0 && !gpus.empty()) {
    int n = std::min(num_gpus, static_cast<int>(gpus.size()));
    return Slugify(gpus.front()) + (n > 1 ? "-x" + std::to_string(n) : "");
  }
  std::string model = cpu_model;
  for (const char* noise : {"(R)", "(TM)", "Processor", "CPU", "with Radeon Graphics"}) model = ReplaceAll(model, noise, "");
  size_t at = model.find('@');
  if (at != std::string::npos) model = model.substr(0, at);
  return "cpu-" + Slugify(model) + "-" + std::to_string(cpus) + "c";
}

MachineInfo DescribeMachine() {
  MachineInfo m;
  m.cpus = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  if (auto info = ReadFile("/proc/cpuinfo")) {
    for (const std::string& line : Split(*info, '\n')) {
      if (line.starts_with("model name")) {
        m.cpu_model = std::string(Trim(line.substr(line.find(':') + 1)));
        break;
      }
    }
  }
  if (m.cpu_model.empty()) m.cpu_model = "unknown";
  long pages = sysconf(_SC_PHYS_PAGES);
  long page = sysconf(_SC_PAGE_SIZE);
  if (pages > 0 && page > 0) m.memory_bytes = static_cast<uint64_t>(pages) * static_cast<uint64_t>(page);
  if (!FindOnPath("nvidia-smi").empty()) {
    auto out = RunCommand({.argv = {"nvidia-smi", "--query-gpu=name", "--format=csv,noheader"}},
                          std::chrono::seconds(20));
    if (out && out->status.success()) {
      for (const std::string& line : Split(out->output, '\n')) {
        if (!Trim(line).empty()) m.gpus.emplace_back(Trim(line));
      }
    }
  }
  return m;
}

}  // namespace hone::sys
