#include "fleet/table.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/html.h"
#include "core/strings.h"
#include "fleet/driver.h"
#include "sys/files.h"

namespace hone::fleet {

namespace fs = std::filesystem;

namespace {

std::string F(const char* fmt, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

std::string Ratio(double r) { return F("%.2f", r) + "x"; }

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

std::string Engine(const FleetRow& r) {
  std::string v = r.outcome.framework_version;
  v = v.substr(0, v.find(' '));
  return r.session.engine + (v.empty() ? "" : " " + v);
}

std::string Precision(const FleetRow& r) {
  if (!r.session.precision.empty()) return r.session.precision;
  return r.outcome.precision.empty() ? "native" : r.outcome.precision;
}

std::string Value(double v) { return v > 0 ? F("%.4g", v) : ""; }

// The validated-gain cell.
std::string GainCell(const FleetRow& r) {
  const RunOutcome& o = r.outcome;
  const std::string& st = r.session.status;
  if (st == "done" && o.Closed()) {
    if (o.stock <= 0) return "no baseline: " + o.stop_reason;
    if (!o.validated) return "1.00x (stock kept)";
    return Ratio(1 + o.gain) + " [" + F("%.2f", o.ci_lo) + ", " + F("%.2f", o.ci_hi) + "] " + o.verdict;
  }
  if (st == "failed") return "failed";
  if (st == "cancelled") return "cancelled";
  if (o.has_state) return st + " (" + o.phase + ")";
  return st;
}

std::string AccuracyCell(const FleetRow& r) {
  std::string a = r.outcome.accuracy;
  if (a.empty()) return r.outcome.Closed() ? "-" : "";
  return a.size() > 60 ? a.substr(0, 57) + "..." : a;
}

std::string WallCell(const FleetRow& r) {
  if (r.wall_s <= 0) return "";
  std::string s = HumanSeconds(r.wall_s);
  if (r.attempts > 1) s += " (" + std::to_string(r.attempts) + " attempts)";
  if (r.restarts > 0) s += " (requeued " + std::to_string(r.restarts) + "x)";
  return s;
}

std::string StartCell(const FleetRow& r) { return r.outcome.has_state ? r.outcome.Start() : ""; }

std::string Cell(const std::string& s) { return ReplaceAll(s, "|", "\\|"); }

std::string MetricNote(const FleetTable& t) {
  std::string metric;
  for (const FleetRow& r : t.rows) {
    if (r.outcome.metric.empty()) continue;
    if (!metric.empty() && metric != r.outcome.metric) return "";
    metric = r.outcome.metric;
  }
  return metric;
}

std::string SummaryLine(const FleetSummary& s) {
  if (s.closed == 0) return "No session has closed yet.";
  if (s.ratios.empty()) {
    return "No closed session measured its stock baseline (" + std::to_string(s.unmeasured) + " closed before it).";
  }
  return "Median validated gain: **" + Ratio(s.median) + "** (range " + Ratio(s.min) + " to " + Ratio(s.max) +
         ") over " + std::to_string(s.ratios.size()) + " closed session(s) that measured their baseline" +
         (s.unmeasured ? " (" + std::to_string(s.unmeasured) + " more closed before measuring it)" : "") + "; " +
         std::to_string(s.kept) +
         " kept a validated gain (KEEP), " + std::to_string(s.warm) + " started warm from the knowledge base. A "
         "session without a kept gain counts as 1.00x.";
}

}  // namespace

std::string HumanParameters(uint64_t n) {
  if (n >= 1'000'000'000ULL) return F("%.1fB", static_cast<double>(n) / 1e9);
  if (n >= 10'000'000ULL) return F("%.0fM", static_cast<double>(n) / 1e6);
  if (n >= 1'000'000ULL) return F("%.1fM", static_cast<double>(n) / 1e6);
  return F("%.0fK", static_cast<double>(n) / 1e3);
}

Result<FleetTable> LoadFleetTable(const std::string& fleet_dir, int64_t now_unix_us) {
  FleetTable t;
  HONE_ASSIGN_OR_RETURN(t.state, ReadFleetState(fleet_dir));
  for (const SessionEntry& e : t.state.sessions) {
    FleetRow r;
    r.session = e;
    auto o = ReadRunOutcome(RunDir(fleet_dir, e.name));
    if (o) r.outcome = std::move(*o);
    if (auto rec = ReadJobRecord(JobRecordPath(fleet_dir, e.name))) {
      r.wall_s = rec->WallSeconds(e.Terminal() ? 0 : now_unix_us);
      r.attempts = static_cast<int>(rec->attempts.size());
      for (const Attempt& a : rec->attempts) r.restarts = std::max(r.restarts, a.restart);
    }
    r.size = r.outcome.model_parameters > 0 ? HumanParameters(r.outcome.model_parameters) : e.model;
    t.rows.push_back(std::move(r));
  }
  FleetSummary& s = t.summary;
  s.sessions = static_cast<int>(t.rows.size());
  for (const FleetRow& r : t.rows) {
    const std::string& st = r.session.status;
    if (st == "done" && r.outcome.Closed() && r.outcome.stock <= 0) {
      ++s.closed;
      ++s.unmeasured;  // closed before it measured its stock: no gain either way
    } else if (st == "done" && r.outcome.Closed()) {
      ++s.closed;
      s.ratios.push_back(r.outcome.ValidatedRatio());
      if (r.outcome.validated && r.outcome.verdict == "KEEP") ++s.kept;
      if (r.outcome.Start() != "cold") ++s.warm;
    } else if (st == "failed") {
      ++s.failed;
    } else if (st == "cancelled") {
      ++s.cancelled;
    } else {
      ++s.running;
    }
  }
  if (!s.ratios.empty()) {
    s.median = Median(s.ratios);
    s.min = *std::min_element(s.ratios.begin(), s.ratios.end());
    s.max = *std::max_element(s.ratios.begin(), s.ratios.end());
  }
  return t;
}

std::string RenderFleetMarkdown(const FleetTable& t) {
  std::string md;
  auto line = [&](const std::string& l) { md += l + "\n"; };
  const FleetState& f = t.state;
  const FleetSummary& s = t.summary;
  line("# Fleet " + f.name);
  line("");
  line(std::to_string(s.sessions) + " sessions on the " + f.executor + " executor (" + f.executor_detail +
       "), knowledge base " + (f.kb.empty() ? "<cache>/kb.sqlite" : f.kb) + ": " + std::to_string(s.closed) +
       " closed, " + std::to_string(s.failed) + " failed" +
       (s.cancelled ? ", " + std::to_string(s.cancelled) + " cancelled" : "") +
       (s.running ? ", " + std::to_string(s.running) + " not finished" : "") + ".");
  line("");
  line(SummaryLine(s));
  line("");
  std::string metric = MetricNote(t);
  line("| # | session | workload | engine | size | precision | stock | best | validated gain [" +
       std::string("95% CI] | accuracy | trials | wall | start |"));
  line("|---|---|---|---|---|---|---|---|---|---|---|---|---|");
  int idx = 0;
  for (const FleetRow& r : t.rows) {
    const SessionEntry& e = r.session;
    line("| " + std::to_string(++idx) + " | " + Cell(e.name) + " | " + Cell(e.workload + " " + e.workload_detail) +
         " | " + Cell(Engine(r)) + " | " + r.size + " | " + Cell(Precision(r)) + " | " + Value(r.outcome.stock) +
         " | " + Value(r.outcome.best) + " | " + Cell(GainCell(r)) + " | " + Cell(AccuracyCell(r)) + " | " +
         (r.outcome.has_state ? std::to_string(r.outcome.trials_run) : "") + " | " + WallCell(r) + " | " +
         Cell(StartCell(r)) + " |");
  }
  line("");
  if (!metric.empty()) line("Stock and best: `" + metric + "`, re-measured against each other in paired trials at close.");
  line("Validated gain: best / stock with its interval and the close's verdict; the median counts a verdict other "
       "than KEEP as 1.00x.");
  bool any_failed = false;
  for (const FleetRow& r : t.rows) {
    if (r.session.status != "failed" && r.session.status != "cancelled") continue;
    if (!any_failed) {
      line("");
      line("## Not closed");
      line("");
    }
    any_failed = true;
    line("- " + r.session.name + " (" + r.session.status + "): " + r.session.reason);
  }
  line("");
  line("## Order (knowledge-base warm-up)");
  line("");
  for (const std::string& p : f.plan) line("- " + p);
  line("");
  line("Each session's report: `runs/<session>/report.md`; its job's attempts: `jobs/<session>.json`; its log: "
       "`logs/<session>.log`.");
  return md;
}

std::string RenderFleetHtml(const FleetTable& t) {
  const FleetState& f = t.state;
  std::string h = "<!doctype html><html><head><meta charset=\"utf-8\"><title>hone fleet " + HtmlEscape(f.name) +
                  "</title><style>body{font-family:system-ui,sans-serif;margin:2em;color:#222}"
                  "table{border-collapse:collapse;font-size:14px}th,td{border:1px solid #ccc;padding:4px 8px;"
                  "text-align:left}th{background:#f3f3f3}td.n{text-align:right}tr.failed td{color:#a00}"
                  ".big{font-size:1.3em}</style></head><body>\n";
  h += "<h1>Fleet " + HtmlEscape(f.name) + "</h1>\n";
  std::string summary = SummaryLine(t.summary);
  summary = ReplaceAll(summary, "**", "");
  h += "<p class=\"big\">" + HtmlEscape(summary) + "</p>\n";
  h += "<p>" + std::to_string(t.summary.sessions) + " sessions on the " + HtmlEscape(f.executor) + " executor (" +
       HtmlEscape(f.executor_detail) + "), knowledge base " + HtmlEscape(f.kb.empty() ? "<cache>/kb.sqlite" : f.kb) +
       ".</p>\n<table><tr><th>#</th><th>session</th><th>workload</th><th>engine</th><th>size</th><th>precision</th>"
       "<th>stock</th><th>best</th><th>validated gain [95% CI]</th><th>accuracy</th><th>trials</th><th>wall</th>"
       "<th>start</th></tr>\n";
  int idx = 0;
  for (const FleetRow& r : t.rows) {
    const SessionEntry& e = r.session;
    std::string run = "runs/" + e.name + "/report.html";
    h += std::string("<tr") + (e.status == "failed" ? " class=\"failed\"" : "") + "><td class=\"n\">" +
         std::to_string(++idx) + "</td><td><a href=\"" + HtmlEscape(run) + "\">" + HtmlEscape(e.name) + "</a></td><td>" +
         HtmlEscape(e.workload + " " + e.workload_detail) + "</td><td>" + HtmlEscape(Engine(r)) + "</td><td>" + HtmlEscape(r.size) +
         "</td><td>" + HtmlEscape(Precision(r)) + "</td><td class=\"n\">" + Value(r.outcome.stock) +
         "</td><td class=\"n\">" + Value(r.outcome.best) + "</td><td>" + HtmlEscape(GainCell(r)) + "</td><td>" +
         HtmlEscape(AccuracyCell(r)) + "</td><td class=\"n\">" +
         (r.outcome.has_state ? std::to_string(r.outcome.trials_run) : "") + "</td><td>" + HtmlEscape(WallCell(r)) +
         "</td><td>" + HtmlEscape(StartCell(r)) + "</td></tr>\n";
  }
  h += "</table>\n<h2>Order (knowledge-base warm-up)</h2><ul>\n";
  for (const std::string& p : f.plan) h += "<li>" + HtmlEscape(p) + "</li>\n";
  h += "</ul>\n";
  for (const FleetRow& r : t.rows) {
    if (r.session.status == "failed" || r.session.status == "cancelled") {
      h += "<p>" + HtmlEscape(r.session.name + " (" + r.session.status + "): " + r.session.reason) + "</p>\n";
    }
  }
  return h + "</body></html>\n";
}

std::string RenderFleetJson(const FleetTable& t) {
  using json = nlohmann::ordered_json;
  json rows = json::array();
  for (const FleetRow& r : t.rows) {
    const SessionEntry& e = r.session;
    const RunOutcome& o = r.outcome;
    rows.push_back({{"session", e.name},
                    {"status", e.status},
                    {"workload", e.workload},
                    {"workload_kind", e.workload_kind},
                    {"workload_detail", e.workload_detail},
                    {"engine", e.engine},
                    {"framework_version", o.framework_version},
                    {"model", o.model.empty() ? e.model : o.model},
                    {"model_parameters", o.model_parameters},
                    {"precision", Precision(r)},
                    {"metric", o.metric},
                    {"stock", o.stock},
                    {"best", o.best},
                    {"validated", o.validated},
                    {"gain", o.validated ? o.gain : 0.0},
                    {"ci", o.validated ? json::array({o.ci_lo, o.ci_hi}) : json(nullptr)},
                    {"verdict", o.verdict},
                    {"validated_ratio", o.Closed() && o.stock > 0 ? json(o.ValidatedRatio()) : json(nullptr)},
                    {"accuracy", o.accuracy},
                    {"trials", o.trials_run},
                    {"wall_s", r.wall_s},
                    {"attempts", r.attempts},
                    {"restarts", r.restarts},
                    {"start", StartCell(r)},
                    {"warm_replay", o.warm_replay},
                    {"kb_result", o.kb_result},
                    {"wave", e.wave},
                    {"parent", e.parent},
                    {"jobs", e.job_ids},
                    {"reason", e.reason},
                    {"run_dir", "runs/" + e.name}});
  }
  const FleetSummary& s = t.summary;
  json j = {{"schema", "hone-fleet-report/1"},
            {"name", t.state.name},
            {"executor", t.state.executor},
            {"executor_detail", t.state.executor_detail},
            {"kb", t.state.kb},
            {"summary",
             {{"sessions", s.sessions},
              {"closed", s.closed},
              {"failed", s.failed},
              {"cancelled", s.cancelled},
              {"not_finished", s.running},
              {"kept", s.kept},
              {"warm", s.warm},
              {"unmeasured", s.unmeasured},
              {"median_validated_ratio", s.ratios.empty() ? json(nullptr) : json(s.median)},
              {"min_validated_ratio", s.ratios.empty() ? json(nullptr) : json(s.min)},
              {"max_validated_ratio", s.ratios.empty() ? json(nullptr) : json(s.max)}}},
            {"plan", t.state.plan},
            {"sessions", rows}};
  return j.dump(2) + "\n";
}

std::string RenderFleetStatus(const FleetTable& t) {
  const FleetState& f = t.state;
  const FleetSummary& s = t.summary;
  std::string out = "fleet " + f.name + " (" + f.executor + ", kb " + (f.kb.empty() ? "<cache>/kb.sqlite" : f.kb) +
                    "): " + std::to_string(s.closed) + "/" + std::to_string(s.sessions) + " closed, " +
                    std::to_string(s.failed) + " failed, " + std::to_string(s.running) + " to go" +
                    (f.cancelled ? " (cancelled)" : "") + "\n";
  char buf[512];
  std::snprintf(buf, sizeof buf, "%-28s %-4s %-11s %-12s %-10s %-10s %6s %-12s %s\n", "session", "wave", "status", "job",
                "node", "phase", "trials", "wall", "gain / note");
  out += buf;
  for (const FleetRow& r : t.rows) {
    const SessionEntry& e = r.session;
    std::string note = e.status == "done" ? GainCell(r) : e.reason;
    if (note.size() > 70) note = note.substr(0, 67) + "...";
    std::snprintf(buf, sizeof buf, "%-28s %-4d %-11s %-12s %-10s %-10s %6s %-12s %s\n", e.name.c_str(), e.wave,
                  e.status.c_str(), e.job_ids.empty() ? "-" : e.job_ids.back().c_str(),
                  e.node.empty() ? "-" : e.node.c_str(), r.outcome.has_state ? r.outcome.phase.c_str() : "-",
                  r.outcome.has_state ? std::to_string(r.outcome.trials_run).c_str() : "-",
                  r.wall_s > 0 ? HumanSeconds(r.wall_s).c_str() : "-", note.c_str());
    out += buf;
  }
  if (s.closed > 0) out += ReplaceAll(SummaryLine(s), "**", "") + "\n";
  return out;
}

Status WriteFleetReports(const FleetTable& t, const std::string& fleet_dir) {
  HONE_TRY(sys::WriteFileAtomic(fs::path(fleet_dir) / "fleet-report.md", RenderFleetMarkdown(t)));
  HONE_TRY(sys::WriteFileAtomic(fs::path(fleet_dir) / "fleet-report.html", RenderFleetHtml(t)));
  return sys::WriteFileAtomic(fs::path(fleet_dir) / "fleet-report.json", RenderFleetJson(t));
}

}  // namespace hone::fleet
