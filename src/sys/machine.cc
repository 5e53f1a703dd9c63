#include "sys/machine.h"

#include <algorithm>

#include <sched.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <set>
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

std::vector<int> AvailableCpus() {
  std::vector<int> out;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
      if (CPU_ISSET(cpu, &set)) out.push_back(cpu);
    }
  }
  if (out.empty()) {
    unsigned n = std::max(1u, std::thread::hardware_concurrency());
    for (unsigned cpu = 0; cpu < n; ++cpu) out.push_back(static_cast<int>(cpu));
  }
  return out;
}

int CountPhysicalCores(const std::string& sysfs_cpu) {
  std::set<std::string> siblings;
  for (int cpu = 0;; ++cpu) {
    auto line = ReadFile(sysfs_cpu + "/cpu" + std::to_string(cpu) + "/topology/thread_siblings");
    if (!line) break;
    siblings.insert(std::string(Trim(*line)));
  }
  return static_cast<int>(siblings.size());
}

MachineInfo DescribeMachine() {
  MachineInfo m;
  // The CPUs this process may run on: a session pinned to its share of a host (the
  // fleet's local executor, a Slurm allocation) sizes its threads and names its
  // hardware by that share.
  m.cpus = static_cast<int>(AvailableCpus().size());
  m.physical_cores = CountPhysicalCores();
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

namespace hone::sys {

std::optional<HostLoad> ReadHostLoad() {
  // "0.52 0.58 0.59 3/412 12345": 1, 5, 15-minute averages, runnable/total, last pid.
  auto text = ReadFile("/proc/loadavg");
  if (!text) return std::nullopt;
  std::vector<std::string> f = Split(*text, ' ');
  if (f.size() < 4) return std::nullopt;
  auto load = ParseDouble(f[0]);
  auto slash = f[3].find('/');
  auto runnable = ParseInt(f[3].substr(0, slash));
  if (!load || !runnable || slash == std::string::npos) return std::nullopt;
  return HostLoad{*load, std::max(0, static_cast<int>(*runnable) - 1)};  // the reader itself runs
}

}  // namespace hone::sys
