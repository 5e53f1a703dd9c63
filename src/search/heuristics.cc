#include "search/heuristics.h"

#include <algorithm>
#include <cstdio>

#include "core/strings.h"
#include "spec/yaml.h"

namespace hone::search {

namespace {

constexpr std::pair<Bottleneck, const char*> kNames[] = {
    {Bottleneck::kUnknown, "unknown"},       {Bottleneck::kDecode, "decode"},
    {Bottleneck::kPrefill, "prefill"},       {Bottleneck::kKvCapacity, "kv_capacity"},
    {Bottleneck::kQueueing, "queueing"},     {Bottleneck::kOverhead, "overhead"},
};

Result<Bottleneck> BottleneckField(const spec::Field& f) {
  HONE_ASSIGN_OR_RETURN(std::string s, f.Str());
  auto b = ParseBottleneck(s);
  if (!b) return Fail(f.Err("unknown bottleneck '" + s + "' (decode, prefill, kv_capacity, queueing, overhead)"));
  return *b;
}

Result<CategoryPrior> ParsePrior(const spec::Field& f) {
  HONE_TRY(f.CheckKeys({"scale", "cost"}));
  CategoryPrior p;
  HONE_ASSIGN_OR_RETURN(p.scale, f["scale"].Double(0, 5));
  HONE_ASSIGN_OR_RETURN(p.cost, f["cost"].DoubleOr(1.0, 0.01, 100));
  return p;
}

std::string Num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

}  // namespace

std::string_view BottleneckName(Bottleneck b) {
  for (const auto& [k, n] : kNames) {
    if (k == b) return n;
  }
  return "unknown";
}

std::optional<Bottleneck> ParseBottleneck(std::string_view name) {
  for (const auto& [k, n] : kNames) {
    if (name == n) return k;
  }
  return std::nullopt;
}

Result<Heuristics> Heuristics::Load(const std::string& path) {
  HONE_ASSIGN_OR_RETURN(spec::Field root, spec::Field::LoadFile(path));
  return ParseField(root);
}

Result<Heuristics> Heuristics::Parse(const std::string& yaml_text, const std::string& source_name) {
  HONE_ASSIGN_OR_RETURN(spec::Field root, spec::Field::Parse(yaml_text, source_name));
  return ParseField(root);
}

Result<Heuristics> Heuristics::ParseField(const spec::Field& root) {
  HONE_TRY(root.RequireMap());
  HONE_TRY(root.CheckKeys(
      {"categories", "default_category", "risk_penalty", "diagnosis", "bottlenecks", "devices", "frameworks", "tuned_on"}));
  Heuristics h;
  HONE_ASSIGN_OR_RETURN(h.tuned_on, root["tuned_on"].StrList());
  for (const auto& [name, f] : root["categories"].Entries()) {
    HONE_ASSIGN_OR_RETURN(h.categories[name], ParsePrior(f));
  }
  if (root["default_category"].defined()) {
    HONE_ASSIGN_OR_RETURN(h.default_category, ParsePrior(root["default_category"]));
  }
  for (const auto& [risk, f] : root["risk_penalty"].Entries()) {
    HONE_ASSIGN_OR_RETURN(h.risk_penalty[risk], f.Double(0, 1));
  }
  spec::Field d = root["diagnosis"];
  if (d.defined()) {
    HONE_TRY(d.CheckKeys({"kv_usage", "queue_depth", "running_fraction", "prefill_share", "roofline"}));
    HONE_ASSIGN_OR_RETURN(h.diagnosis.kv_usage, d["kv_usage"].DoubleOr(0.9, 0, 1));
    HONE_ASSIGN_OR_RETURN(h.diagnosis.queue_depth, d["queue_depth"].DoubleOr(0.5, 0, 1e9));
    HONE_ASSIGN_OR_RETURN(h.diagnosis.running_fraction, d["running_fraction"].DoubleOr(0.75, 0, 1));
    HONE_ASSIGN_OR_RETURN(h.diagnosis.prefill_share, d["prefill_share"].DoubleOr(0.5, 0, 1));
    for (const auto& [cls, f] : d["roofline"].Entries()) {
      HONE_ASSIGN_OR_RETURN(h.diagnosis.roofline[cls], BottleneckField(f));
    }
  }
  for (const auto& [name, f] : root["bottlenecks"].Entries()) {
    auto b = ParseBottleneck(name);
    if (!b) return Fail(f.Err("unknown bottleneck '" + name + "'"));
    for (const auto& [cat, m] : f.Entries()) {
      HONE_ASSIGN_OR_RETURN(h.bottlenecks[*b][cat], m.Double(0, 100));
    }
  }
  for (const auto& [device, f] : root["devices"].Entries()) {
    if (device != "cpu" && device != "gpu") return Fail(f.Err("unknown device '" + device + "' (cpu, gpu)"));
    for (const auto& [cat, m] : f.Entries()) {
      HONE_ASSIGN_OR_RETURN(h.devices[device][cat], m.Double(0, 100));
    }
  }
  for (const auto& [fw, f] : root["frameworks"].Entries()) {
    HONE_TRY(f.CheckKeys({"value_hints", "interactions", "bundles"}));
    FrameworkHeuristics& out = h.frameworks[fw];
    for (const auto& [knob, v] : f["value_hints"].Entries()) {
      HONE_ASSIGN_OR_RETURN(out.value_hints[knob], v.StrList());
    }
    for (const auto& [knob, v] : f["interactions"].Entries()) {
      HONE_ASSIGN_OR_RETURN(out.interactions[knob], v.StrList());
    }
    for (const spec::Field& b : f["bundles"].Items()) {
      HONE_TRY(b.CheckKeys({"title", "when", "category", "delta"}));
      Bundle bundle;
      HONE_ASSIGN_OR_RETURN(bundle.title, b["title"].Str());
      HONE_ASSIGN_OR_RETURN(bundle.category, b["category"].Str());
      for (const spec::Field& w : b["when"].Items()) {
        HONE_ASSIGN_OR_RETURN(Bottleneck when, BottleneckField(w));
        bundle.when.push_back(when);
      }
      for (const auto& [k, v] : b["delta"].Entries()) {
        HONE_ASSIGN_OR_RETURN(std::string value, v.Str());
        bundle.delta.Set(k, value);
      }
      if (bundle.delta.size() < 2) return Fail(b["delta"].Err("a bundle changes at least two knobs"));
      out.bundles.push_back(std::move(bundle));
    }
  }
  return h;
}

bool Heuristics::TunedOn(const std::string& surface) const {
  return std::find(tuned_on.begin(), tuned_on.end(), surface) != tuned_on.end();
}

const CategoryPrior& Heuristics::Category(const std::string& name) const {
  auto it = categories.find(name);
  return it == categories.end() ? default_category : it->second;
}

double Heuristics::RiskPenalty(target::AccuracyRisk risk) const {
  auto it = risk_penalty.find(std::string(target::AccuracyRiskName(risk)));
  return it == risk_penalty.end() ? 0.0 : it->second;
}

double Heuristics::BottleneckMultiplier(Bottleneck b, const std::string& category) const {
  auto it = bottlenecks.find(b);
  if (it == bottlenecks.end()) return 1.0;
  auto c = it->second.find(category);
  return c == it->second.end() ? 1.0 : c->second;
}

double Heuristics::DeviceMultiplier(bool gpu, const std::string& category) const {
  auto it = devices.find(gpu ? "gpu" : "cpu");
  if (it == devices.end()) return 1.0;
  auto c = it->second.find(category);
  return c == it->second.end() ? 1.0 : c->second;
}

const FrameworkHeuristics* Heuristics::Framework(const std::string& name) const {
  auto it = frameworks.find(name);
  return it == frameworks.end() ? nullptr : &it->second;
}

Diagnosis Diagnose(const std::string& roofline_class, const std::map<std::string, double>& metrics,
                   const DiagnosisRules& rules) {
  auto get = [&](const char* k) -> std::optional<double> {
    auto it = metrics.find(k);
    return it == metrics.end() ? std::nullopt : std::optional<double>(it->second);
  };
  // Measured limits first: a full KV cache or a server that queues the offered load
  // (fewer slots than requests in flight) binds before any roofline ceiling does; the
  // roofline class describes the load the server would run if it took all of it.
  if (auto kv = get("kv_usage_max"); kv && *kv >= rules.kv_usage) {
    return {Bottleneck::kKvCapacity, "KV usage " + Num(*kv) + " >= " + Num(rules.kv_usage)};
  }
  if (auto q = get("queue_depth_mean"); q && *q >= rules.queue_depth) {
    return {Bottleneck::kQueueing, "queue depth " + Num(*q) + " >= " + Num(rules.queue_depth)};
  }
  auto running = get("running_mean");
  auto conc = get("concurrency");
  // A zero running count means the scrape saw an idle server (a short run), not a limit.
  if (running && conc && *running > 0 && *conc > 1 && *running < rules.running_fraction * *conc) {
    return {Bottleneck::kQueueing, "running " + Num(*running) + " < " + Num(rules.running_fraction) + " x concurrency " +
                                       Num(*conc)};
  }
  if (!roofline_class.empty()) {
    if (auto it = rules.roofline.find(roofline_class); it != rules.roofline.end()) {
      return {it->second, "roofline: " + roofline_class + "-bound"};
    }
    if (auto b = ParseBottleneck(roofline_class)) return {*b, "given: " + roofline_class};
  }
  auto ttft = get("mean_ttft_ms");
  auto tpot = get("mean_tpot_ms");
  auto osl = get("osl");
  if (ttft && tpot && osl && *ttft + *osl * *tpot > 0) {
    double share = *ttft / (*ttft + *osl * *tpot);
    if (share >= rules.prefill_share) {
      return {Bottleneck::kPrefill, "prefill share of latency " + Num(share) + " >= " + Num(rules.prefill_share)};
    }
    return {Bottleneck::kDecode, "decode share of latency " + Num(1 - share)};
  }
  return {Bottleneck::kUnknown, "no baseline metrics"};
}

std::string ResolveValueExpression(const std::string& expr, int concurrency, int cpus, int cores) {
  if (expr == "concurrency") return std::to_string(concurrency);
  if (expr == "cpus") return std::to_string(cpus);
  if (expr == "cores" && cores > 0) return std::to_string(cores);
  if (expr == "2*cpus") return std::to_string(2 * cpus);
  if (expr == "2*concurrency") return std::to_string(2 * concurrency);
  return expr;
}

}  // namespace hone::search
