#include "kb/match.h"

#include <cctype>
#include <cmath>
#include <cstdio>

#include "core/strings.h"

namespace hone::kb {

std::string_view FieldStateName(FieldState s) {
  switch (s) {
    case FieldState::kMatched: return "matched";
    case FieldState::kRelaxed: return "relaxed";
    case FieldState::kNotGiven: return "not given";
  }
  return "?";
}

std::vector<int64_t> VersionNumbers(std::string_view version) {
  std::vector<int64_t> out;
  size_t i = 0;
  while (i < version.size() && !std::isdigit(static_cast<unsigned char>(version[i]))) ++i;
  while (i < version.size() && std::isdigit(static_cast<unsigned char>(version[i]))) {
    int64_t n = 0;
    while (i < version.size() && std::isdigit(static_cast<unsigned char>(version[i]))) {
      n = n * 10 + (version[i] - '0');
      if (n > (int64_t{1} << 40)) return {};  // not a version
      ++i;
    }
    out.push_back(n);
    if (i + 1 < version.size() && version[i] == '.' && std::isdigit(static_cast<unsigned char>(version[i + 1]))) {
      ++i;
    } else {
      break;
    }
  }
  return out;
}

namespace {

std::string Fmt(const char* fmt, double a, double b = 0, double c = 0) {
  char buf[128];
  std::snprintf(buf, sizeof buf, fmt, a, b, c);
  return buf;
}

// Whether the relaxed values satisfy the step's constraints; `why` names the first
// violated one.
bool ConstraintsHold(const FallbackStep& step, const std::string& query, const std::string& recipe,
                     std::string* why) {
  std::vector<int64_t> q = VersionNumbers(query);
  std::vector<int64_t> r = VersionNumbers(recipe);
  auto at = [](const std::vector<int64_t>& v, size_t i) { return i < v.size() ? v[i] : 0; };
  for (RelaxConstraint c : step.constraints) {
    if (q.empty() || r.empty()) {
      *why = "'" + recipe + "' vs '" + query + "' are not comparable versions (" +
             std::string(RelaxConstraintName(c)) + ")";
      return false;
    }
    bool ok = true;
    switch (c) {
      case RelaxConstraint::kSameMajor: ok = at(q, 0) == at(r, 0); break;
      case RelaxConstraint::kSameMajorMinor: ok = at(q, 0) == at(r, 0) && at(q, 1) == at(r, 1); break;
      case RelaxConstraint::kNotNewer: {
        size_t n = std::max(q.size(), r.size());
        for (size_t i = 0; i < n; ++i) {
          if (at(r, i) != at(q, i)) {
            ok = at(r, i) < at(q, i);
            break;
          }
        }
        break;
      }
    }
    if (!ok) {
      *why = "recipe " + recipe + " vs query " + query + " breaks " + std::string(RelaxConstraintName(c));
      return false;
    }
  }
  return true;
}

double DoublingFactor(int64_t query, int64_t recipe, double per_doubling, const char* name,
                      std::vector<std::string>* explanation) {
  if (query <= 0 || recipe <= 0 || query == recipe) return 1;
  double doublings = std::fabs(std::log2(static_cast<double>(query) / static_cast<double>(recipe)));
  double f = std::pow(per_doubling, doublings);
  if (explanation) {
    explanation->push_back(std::string("workload: ") + name + " " + std::to_string(query) + " vs recorded " +
                           std::to_string(recipe) + Fmt(" (%.1f doublings): x%.3f", doublings, f));
  }
  return f;
}

}  // namespace

double OperatingPointFactor(const Workload& query, const Workload& recipe, const OperatingPointFactors& factors,
                            std::vector<std::string>* explanation) {
  if (query.empty()) {
    if (explanation) explanation->push_back("workload: not given, not compared (recorded " + recipe.ToString() + ")");
    return 1;
  }
  double f = 1;
  if (query.kind != recipe.kind) {
    f *= factors.other_kind;
    if (explanation) {
      explanation->push_back("workload: kind " + query.kind + " vs recorded " + recipe.kind +
                             Fmt(": x%.3f", factors.other_kind));
    }
  } else if (query.trace_id != recipe.trace_id && !query.trace_id.empty()) {
    f *= factors.other_trace;
    if (explanation) {
      explanation->push_back("workload: trace " + query.trace_id + " vs recorded " +
                             (recipe.trace_id.empty() ? std::string("(none)") : recipe.trace_id) +
                             Fmt(": x%.3f", factors.other_trace));
    }
  }
  f *= DoublingFactor(query.concurrency, recipe.concurrency, factors.per_concurrency_doubling, "concurrency",
                      explanation);
  f *= DoublingFactor(query.isl, recipe.isl, factors.per_isl_doubling, "isl", explanation);
  f *= DoublingFactor(query.osl, recipe.osl, factors.per_osl_doubling, "osl", explanation);
  if (f == 1 && explanation) explanation->push_back("workload: same operating point (" + recipe.ToString() + ")");
  return f;
}

std::optional<CandidateScore> ScoreCandidate(const MatchQuery& q, const Identity& recipe_identity,
                                             const Workload& recipe_workload, const FallbackPolicy& policy,
                                             std::string* why_not) {
  std::vector<MatchField> differing;
  for (MatchField f : kMatchFields) {
    const std::string& qv = q.identity.Get(f);
    if (!qv.empty() && qv != recipe_identity.Get(f)) differing.push_back(f);
  }
  std::string last_constraint_failure;
  for (const FallbackStep& step : policy.steps) {
    bool admits = true;
    for (MatchField f : differing) {
      if (!step.Relaxes(f)) {
        admits = false;
        break;
      }
      std::string why;
      if (!ConstraintsHold(step, q.identity.Get(f), recipe_identity.Get(f), &why)) {
        last_constraint_failure = "step " + step.name + ": " + std::string(MatchFieldName(f)) + " " + why;
        admits = false;
        break;
      }
    }
    if (!admits) continue;
    CandidateScore s;
    s.step = &step;
    s.step_confidence = step.confidence;
    for (MatchField f : kMatchFields) {
      FieldMatch m{f, FieldState::kMatched, q.identity.Get(f), recipe_identity.Get(f)};
      if (m.query_value.empty()) {
        m.state = FieldState::kNotGiven;
        s.explanation.push_back(std::string(MatchFieldName(f)) + ": not given (recipe has " + m.recipe_value + ")");
      } else if (m.query_value != m.recipe_value) {
        m.state = FieldState::kRelaxed;
        s.explanation.push_back(std::string(MatchFieldName(f)) + ": relaxed by step '" + step.name + "' (query " +
                                m.query_value + ", recipe " + m.recipe_value + "): " + step.why);
      } else {
        s.explanation.push_back(std::string(MatchFieldName(f)) + ": matched (" + m.query_value + ")");
      }
      s.fields.push_back(std::move(m));
    }
    s.explanation.push_back("step '" + step.name + "'" + Fmt(": confidence %.2f", step.confidence));
    s.operating_point_factor = OperatingPointFactor(q.workload, recipe_workload, policy.operating_point,
                                                    &s.explanation);
    s.confidence = s.step_confidence * s.operating_point_factor;
    return s;
  }
  if (why_not) {
    std::vector<std::string> names;
    for (MatchField f : differing) names.emplace_back(MatchFieldName(f));
    *why_not = "differs in " + Join(names, ", ");
    if (!last_constraint_failure.empty()) {
      *why_not += " (" + last_constraint_failure + ")";
    } else if (differing.size() > 1) {
      *why_not += "; no fallback step relaxes all of them";
    } else {
      *why_not += "; no fallback step relaxes it";
    }
  }
  return std::nullopt;
}

}  // namespace hone::kb
