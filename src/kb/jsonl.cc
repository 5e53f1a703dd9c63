#include "kb/jsonl.h"

#include <nlohmann/json.hpp>

#include "core/strings.h"

namespace hone::kb {

using nlohmann::json;

namespace {

json ConfigJson(const Config& c) {
  json o = json::object();
  for (const auto& [k, v] : c.values()) o[k] = v;
  return o;
}

// Typed reads that name the field on failure (no exception leaves this file).
struct Reader {
  const json& j;
  std::string path;

  Result<const json*> At(const char* key, json::value_t type, bool required = true) const {
    auto it = j.find(key);
    if (it == j.end() || it->is_null()) {
      if (required) return InvalidArgument("missing field " + Name(key));
      return static_cast<const json*>(nullptr);
    }
    bool ok = it->type() == type ||
              (type == json::value_t::number_float && it->is_number()) ||
              (type == json::value_t::number_integer && it->is_number_integer());
    if (!ok) return InvalidArgument("field " + Name(key) + " has the wrong type (" + it->type_name() + ")");
    return &*it;
  }
  std::string Name(const char* key) const { return path.empty() ? key : path + "." + key; }
  Result<std::string> Str(const char* key, bool required = true) const {
    HONE_ASSIGN_OR_RETURN(const json* v, At(key, json::value_t::string, required));
    return v ? v->get<std::string>() : std::string();
  }
  Result<double> Num(const char* key, bool required = true) const {
    HONE_ASSIGN_OR_RETURN(const json* v, At(key, json::value_t::number_float, required));
    return v ? v->get<double>() : 0.0;
  }
  Result<int64_t> Int(const char* key, bool required = true) const {
    HONE_ASSIGN_OR_RETURN(const json* v, At(key, json::value_t::number_integer, required));
    return v ? v->get<int64_t>() : int64_t{0};
  }
  Result<bool> Bool(const char* key, bool fallback) const {
    HONE_ASSIGN_OR_RETURN(const json* v, At(key, json::value_t::boolean, false));
    return v ? v->get<bool>() : fallback;
  }
  Result<Reader> Obj(const char* key, bool required = true) const {
    static const json kEmpty = json::object();
    HONE_ASSIGN_OR_RETURN(const json* v, At(key, json::value_t::object, required));
    return Reader{v ? *v : kEmpty, Name(key)};
  }
  Result<std::vector<Reader>> Arr(const char* key) const {
    HONE_ASSIGN_OR_RETURN(const json* v, At(key, json::value_t::array, false));
    std::vector<Reader> out;
    if (!v) return out;
    for (size_t i = 0; i < v->size(); ++i) {
      if (!(*v)[i].is_object()) return InvalidArgument("field " + Name(key) + "[" + std::to_string(i) + "] is not an object");
      out.push_back(Reader{(*v)[i], Name(key) + "[" + std::to_string(i) + "]"});
    }
    return out;
  }
  Result<std::vector<std::string>> Strs(const char* key) const {
    HONE_ASSIGN_OR_RETURN(const json* v, At(key, json::value_t::array, false));
    std::vector<std::string> out;
    if (!v) return out;
    for (const json& e : *v) {
      if (!e.is_string()) return InvalidArgument("field " + Name(key) + " must hold strings");
      out.push_back(e.get<std::string>());
    }
    return out;
  }
  Result<Config> Conf(const char* key) const {
    HONE_ASSIGN_OR_RETURN(const json* v, At(key, json::value_t::object, false));
    Config c;
    if (!v) return c;
    for (const auto& [k, val] : v->items()) {
      if (!val.is_string()) return InvalidArgument("field " + Name(key) + "." + k + " must be a string");
      c.Set(k, val.get<std::string>());
    }
    return c;
  }
};

Result<Recipe> FromJson(const json& j) {
  if (!j.is_object()) return InvalidArgument("a recipe line must be a JSON object");
  Reader root{j, ""};
  HONE_ASSIGN_OR_RETURN(std::string format, root.Str("format"));
  if (format != kRecipeFormat) {
    return InvalidArgument("unknown format '" + format + "' (this hone reads " + std::string(kRecipeFormat) + ")");
  }
  Recipe r;
  HONE_ASSIGN_OR_RETURN(Reader id, root.Obj("identity"));
  for (MatchField f : kMatchFields) {
    HONE_ASSIGN_OR_RETURN(r.identity.Mutable(f), id.Str(std::string(MatchFieldName(f)).c_str()));
  }
  HONE_ASSIGN_OR_RETURN(Reader w, root.Obj("workload"));
  HONE_ASSIGN_OR_RETURN(r.workload.kind, w.Str("kind"));
  HONE_ASSIGN_OR_RETURN(r.workload.concurrency, w.Int("concurrency", false));
  HONE_ASSIGN_OR_RETURN(r.workload.isl, w.Int("isl", false));
  HONE_ASSIGN_OR_RETURN(r.workload.osl, w.Int("osl", false));
  HONE_ASSIGN_OR_RETURN(r.workload.trace_id, w.Str("trace_id", false));
  HONE_ASSIGN_OR_RETURN(r.config, root.Conf("config"));
  HONE_ASSIGN_OR_RETURN(Reader o, root.Obj("objective"));
  HONE_ASSIGN_OR_RETURN(r.objective.name, o.Str("name"));
  HONE_ASSIGN_OR_RETURN(r.objective.value, o.Num("value"));
  HONE_ASSIGN_OR_RETURN(r.objective.ci_lo, o.Num("ci_lo"));
  HONE_ASSIGN_OR_RETURN(r.objective.ci_hi, o.Num("ci_hi"));
  HONE_ASSIGN_OR_RETURN(r.objective.unit, o.Str("unit", false));
  HONE_ASSIGN_OR_RETURN(r.objective.higher_is_better, o.Bool("higher_is_better", true));
  HONE_ASSIGN_OR_RETURN(r.objective.trial_ids, o.Strs("trial_ids"));
  HONE_ASSIGN_OR_RETURN(Reader b, root.Obj("baseline"));
  HONE_ASSIGN_OR_RETURN(r.baseline.value, b.Num("value"));
  HONE_ASSIGN_OR_RETURN(r.baseline.trial_ids, b.Strs("trial_ids"));
  HONE_ASSIGN_OR_RETURN(std::vector<Reader> learnings, root.Arr("learnings"));
  for (const Reader& l : learnings) {
    Learning x;
    HONE_ASSIGN_OR_RETURN(x.knob, l.Str("knob"));
    HONE_ASSIGN_OR_RETURN(x.value, l.Str("value"));
    HONE_ASSIGN_OR_RETURN(x.effect, l.Num("effect"));
    HONE_ASSIGN_OR_RETURN(x.effect_ci_lo, l.Num("effect_ci_lo"));
    HONE_ASSIGN_OR_RETURN(x.effect_ci_hi, l.Num("effect_ci_hi"));
    HONE_ASSIGN_OR_RETURN(x.trial_ids, l.Strs("trial_ids"));
    r.learnings.push_back(std::move(x));
  }
  HONE_ASSIGN_OR_RETURN(std::vector<Reader> notes, root.Arr("notes"));  // absent before schema v3
  for (const Reader& n : notes) {
    Note x;
    HONE_ASSIGN_OR_RETURN(x.source, n.Str("source"));
    HONE_ASSIGN_OR_RETURN(x.subject, n.Str("subject", false));
    HONE_ASSIGN_OR_RETURN(x.text, n.Str("text"));
    HONE_ASSIGN_OR_RETURN(x.session_id, n.Str("session_id", false));
    r.notes.push_back(std::move(x));
  }
  HONE_ASSIGN_OR_RETURN(std::vector<Reader> failures, root.Arr("failures"));
  for (const Reader& f : failures) {
    Failure x;
    HONE_ASSIGN_OR_RETURN(x.config_delta, f.Conf("config_delta"));
    HONE_ASSIGN_OR_RETURN(std::string kind, f.Str("kind"));
    auto k = ParseFailureKind(kind);
    if (!k) return Fail(std::move(k).error().Wrap("field " + f.path + ".kind"));
    x.kind = *k;
    HONE_ASSIGN_OR_RETURN(x.detail, f.Str("detail", false));
    HONE_ASSIGN_OR_RETURN(x.trial_ids, f.Strs("trial_ids"));
    r.failures.push_back(std::move(x));
  }
  HONE_ASSIGN_OR_RETURN(Reader p, root.Obj("provenance"));
  HONE_ASSIGN_OR_RETURN(r.provenance.hone_version, p.Str("hone_version", false));
  HONE_ASSIGN_OR_RETURN(r.provenance.session_id, p.Str("session_id", false));
  HONE_ASSIGN_OR_RETURN(r.provenance.date, p.Str("date"));
  HONE_ASSIGN_OR_RETURN(std::string status, root.Str("status", false));
  if (status.empty() || status == "active") {
    r.status = RecipeStatus::kActive;
  } else if (status == "demoted") {
    r.status = RecipeStatus::kDemoted;
  } else {
    return InvalidArgument("field status must be 'active' or 'demoted' (got '" + status + "')");
  }
  HONE_ASSIGN_OR_RETURN(r.demoted_reason, root.Str("demoted_reason", false));
  HONE_ASSIGN_OR_RETURN(r.reproduce_count, root.Int("reproduce_count", false));
  HONE_ASSIGN_OR_RETURN(std::vector<Reader> history, root.Arr("history"));
  for (const Reader& h : history) {
    HistoryEvent e;
    HONE_ASSIGN_OR_RETURN(e.event, h.Str("event"));
    HONE_ASSIGN_OR_RETURN(e.session_id, h.Str("session_id", false));
    HONE_ASSIGN_OR_RETURN(e.hone_version, h.Str("hone_version", false));
    HONE_ASSIGN_OR_RETURN(e.date, h.Str("date"));
    HONE_ASSIGN_OR_RETURN(e.objective_value, h.Num("objective_value", false));
    HONE_ASSIGN_OR_RETURN(e.baseline_value, h.Num("baseline_value", false));
    HONE_ASSIGN_OR_RETURN(e.trial_ids, h.Strs("trial_ids"));
    HONE_ASSIGN_OR_RETURN(e.detail, h.Str("detail", false));
    r.history.push_back(std::move(e));
  }
  return r;
}

}  // namespace

std::string RecipeToJsonLine(const Recipe& r) {
  json j;
  j["format"] = kRecipeFormat;
  json id = json::object();
  for (MatchField f : kMatchFields) id[std::string(MatchFieldName(f))] = r.identity.Get(f);
  j["identity"] = id;
  j["workload"] = {{"kind", r.workload.kind},
                   {"concurrency", r.workload.concurrency},
                   {"isl", r.workload.isl},
                   {"osl", r.workload.osl},
                   {"trace_id", r.workload.trace_id}};
  j["config"] = ConfigJson(r.config);
  j["objective"] = {{"name", r.objective.name},         {"value", r.objective.value},
                    {"ci_lo", r.objective.ci_lo},       {"ci_hi", r.objective.ci_hi},
                    {"unit", r.objective.unit},         {"higher_is_better", r.objective.higher_is_better},
                    {"trial_ids", r.objective.trial_ids}};
  j["baseline"] = {{"value", r.baseline.value}, {"trial_ids", r.baseline.trial_ids}};
  json learnings = json::array();
  for (const Learning& l : r.learnings) {
    learnings.push_back({{"knob", l.knob},
                         {"value", l.value},
                         {"effect", l.effect},
                         {"effect_ci_lo", l.effect_ci_lo},
                         {"effect_ci_hi", l.effect_ci_hi},
                         {"trial_ids", l.trial_ids}});
  }
  j["learnings"] = learnings;
  json failures = json::array();
  for (const Failure& f : r.failures) {
    failures.push_back({{"config_delta", ConfigJson(f.config_delta)},
                        {"kind", FailureKindName(f.kind)},
                        {"detail", f.detail},
                        {"trial_ids", f.trial_ids}});
  }
  j["failures"] = failures;
  json notes = json::array();
  for (const Note& n : r.notes) {
    notes.push_back({{"source", n.source}, {"subject", n.subject}, {"text", n.text}, {"session_id", n.session_id}});
  }
  j["notes"] = notes;
  j["provenance"] = {{"hone_version", r.provenance.hone_version},
                     {"session_id", r.provenance.session_id},
                     {"date", r.provenance.date}};
  j["status"] = RecipeStatusName(r.status);
  j["demoted_reason"] = r.demoted_reason;
  j["reproduce_count"] = r.reproduce_count;
  json history = json::array();
  for (const HistoryEvent& e : r.history) {
    history.push_back({{"event", e.event},
                       {"session_id", e.session_id},
                       {"hone_version", e.hone_version},
                       {"date", e.date},
                       {"objective_value", e.objective_value},
                       {"baseline_value", e.baseline_value},
                       {"trial_ids", e.trial_ids},
                       {"detail", e.detail}});
  }
  j["history"] = history;
  // Replace invalid UTF-8 rather than throw: a knob value is user text.
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

Result<Recipe> RecipeFromJsonLine(std::string_view line) {
  json j = json::parse(line.begin(), line.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return InvalidArgument("not valid JSON");
  auto r = TryCatch(ErrorCode::kInvalidArgument, "malformed recipe", [&] { return FromJson(j); });
  if (!r) return Fail(std::move(r).error());
  return *std::move(r);
}

Result<std::vector<Recipe>> ParseJsonLines(std::string_view text, std::string_view source_name) {
  std::vector<Recipe> out;
  size_t line_no = 0;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = Trim(text.substr(pos, end - pos));
    ++line_no;
    pos = end + 1;
    if (line.empty()) continue;
    auto r = RecipeFromJsonLine(line);
    if (!r) {
      return Fail(std::move(r).error().Wrap(std::string(source_name) + ":" + std::to_string(line_no)));
    }
    out.push_back(*std::move(r));
  }
  return out;
}

}  // namespace hone::kb
