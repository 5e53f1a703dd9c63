#include "fleet/executor.h"

namespace hone::fleet {

std::string_view JobPhaseName(JobPhase p) {
  switch (p) {
    case JobPhase::kPending: return "pending";
    case JobPhase::kRunning: return "running";
    case JobPhase::kFinished: return "finished";
    case JobPhase::kUnknown: return "unknown";
  }
  return "?";
}

std::string ShellQuote(const std::string& word) {
  std::string out = "'";
  for (char c : word) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

}  // namespace hone::fleet
