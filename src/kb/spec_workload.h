// What a session's recipes are filed under in the knowledge base: its workload's
// shape (kind, concurrency, ISL/OSL, and for agentic workloads the trace). One
// definition for the session (run/knowledge) and the fleet's warm-up plan.
#pragma once

#include "kb/recipe.h"
#include "spec/session_spec.h"

namespace hone::kb {

inline Workload WorkloadOf(const spec::SessionSpec& spec) {
  Workload wl;
  wl.kind = spec.workload.kind;
  wl.concurrency = spec.workload.concurrency;
  wl.isl = spec.workload.isl;
  wl.osl = spec.workload.osl;
  if (spec.workload.kind == "agentic") {
    wl.trace_id = spec.workload.trace.empty() ? spec.workload.trace_preset : spec.workload.trace;
  }
  return wl;
}

}  // namespace hone::kb
