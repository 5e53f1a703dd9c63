// The fleet table: one row per session, in the shape of Hyperloom's Table 4
// (workload, engine, size, precision, stock, best, validated gain with its interval,
// accuracy, trials, wall time, warm or cold start), with the median and the range of
// the validated gains, as Markdown, a self-contained HTML page and JSON
// (fleet-report.md, fleet-report.html, fleet-report.json in the fleet directory).
//
// Rows come from the fleet's state (labels, status, plan) and each session's run
// directory (summary.json at close, state.json before) and job record (wall time).
// A session's validated gain is the close's re-measured ratio when the close kept it
// (KEEP), else 1.00x: a session that found nothing, or could not prove it, counts as
// no gain. The median and range are over the sessions that closed having measured
// their stock baseline (one that closed before it has no gain to count either way). Every number
// comes from a session's own files; nothing is estimated here.
#pragma once

#include <string>
#include <vector>

#include "core/error.h"
#include "fleet/record.h"

namespace hone::fleet {

struct FleetRow {
  SessionEntry session;
  RunOutcome outcome;
  double wall_s = 0;
  int attempts = 0;
  int restarts = 0;  // scheduler requeues
  std::string size;  // "4.4M", "156M", "1.5B" (the model's parameters), or the model label
};

struct FleetSummary {
  int sessions = 0, closed = 0, failed = 0, running = 0, cancelled = 0;
  std::vector<double> ratios;  // validated ratios of the closed sessions, table order
  double median = 0, min = 0, max = 0;
  int unmeasured = 0;          // closed before measuring the stock (budget, a failing stock)
  int kept = 0;                // sessions whose close kept a gain (KEEP)
  int warm = 0;                // sessions that started from the knowledge base
};

struct FleetTable {
  FleetState state;
  std::vector<FleetRow> rows;
  FleetSummary summary;
};

// Reads the fleet directory (fleet.json, runs/, jobs/).
Result<FleetTable> LoadFleetTable(const std::string& fleet_dir, int64_t now_unix_us);

std::string RenderFleetMarkdown(const FleetTable& t);
std::string RenderFleetHtml(const FleetTable& t);
std::string RenderFleetJson(const FleetTable& t);
// A compact progress view for `hone fleet status` (plain text).
std::string RenderFleetStatus(const FleetTable& t);

// Writes fleet-report.md, fleet-report.html and fleet-report.json.
Status WriteFleetReports(const FleetTable& t, const std::string& fleet_dir);

// "1.5B", "156M", "4.4M".
std::string HumanParameters(uint64_t n);

}  // namespace hone::fleet
