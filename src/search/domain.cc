#include "search/domain.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/strings.h"
#include "search/catalog_proposer.h"

namespace hone::search {

std::optional<double> NumericValue(const std::string& value) {
  auto v = ParseDouble(value);
  if (!v || !std::isfinite(*v)) return std::nullopt;
  return *v;
}

std::string FormatValue(const target::Knob& knob, double value) {
  if (knob.type == target::KnobType::kInt) return std::to_string(static_cast<int64_t>(std::llround(value)));
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", value);
  return buf;
}

std::vector<std::string> DeriveValues(const target::Knob& knob, const ProposalContext& ctx) {
  std::vector<std::string> out = CatalogProposer::ValuesFor(knob, ctx);
  if (!out.empty() || knob.type != target::KnobType::kInt) return out;
  // A numeric knob without a search list: powers of two around its default.
  auto d = NumericValue(knob.default_value);
  if (!d || *d <= 0) return out;
  for (double f : {0.25, 0.5, 2.0, 4.0}) {
    double v = std::round(*d * f);
    if (v < 1 || (knob.min && v < *knob.min) || (knob.max && v > *knob.max)) continue;
    out.push_back(FormatValue(knob, v));
  }
  return out;
}

void SearchDomain::Normalize(KnobDomain& kd) {
  std::vector<std::string> unique;
  for (const std::string& v : kd.values) {
    if (std::find(unique.begin(), unique.end(), v) == unique.end()) unique.push_back(v);
  }
  kd.values = std::move(unique);
  kd.numeric = !kd.values.empty() && (kd.knob->type == target::KnobType::kInt || kd.knob->type == target::KnobType::kFloat);
  for (const std::string& v : kd.values) kd.numeric = kd.numeric && NumericValue(v).has_value();
  if (kd.numeric) {
    std::stable_sort(kd.values.begin(), kd.values.end(),
                     [](const std::string& a, const std::string& b) { return *NumericValue(a) < *NumericValue(b); });
  }
}

Result<SearchDomain> SearchDomain::Build(const target::KnobCatalog& catalog, const DomainOptions& options,
                                         const ProposalContext& ctx) {
  SearchDomain d;
  auto finish = [](KnobDomain& kd) { Normalize(kd); };
  if (!options.fixed.empty()) {
    for (const auto& [name, values] : options.fixed) {
      const target::Knob* k = catalog.Find(name);
      if (!k) return InvalidArgument("knob '" + name + "' is not in the " + catalog.framework() + " catalog");
      for (const std::string& v : values) HONE_TRY(k->ValidateValue(v));
      KnobDomain kd{k, values, false, true};
      finish(kd);
      d.knobs_.push_back(std::move(kd));
    }
    return d;
  }
  auto listed = [](const std::vector<std::string>& list, const std::string& name) {
    return std::find(list.begin(), list.end(), name) != list.end();
  };
  for (const target::Knob& k : catalog.knobs()) {
    if (!k.searchable) continue;
    if (k.applies_to == "gpu" && !options.gpu) continue;
    if (k.applies_to == "cpu" && options.gpu) continue;
    if (!options.only.empty() && !listed(options.only, k.name)) continue;
    if (listed(options.exclude, k.name)) continue;
    KnobDomain kd{&k, {}, false, false};
    for (const std::string& v : DeriveValues(k, ctx)) {
      if (k.ValidateValue(v)) kd.values.push_back(v);
    }
    finish(kd);
    if (!kd.values.empty()) d.knobs_.push_back(std::move(kd));
  }
  return d;
}

Result<SearchDomain> SearchDomain::Restore(const target::KnobCatalog& catalog, const std::vector<Saved>& saved) {
  SearchDomain d;
  for (const Saved& s : saved) {
    const target::Knob* k = catalog.Find(s.knob);
    if (!k) return InvalidArgument("knob '" + s.knob + "' is not in the " + catalog.framework() + " catalog");
    for (const std::string& v : s.values) HONE_TRY(k->ValidateValue(v));
    KnobDomain kd{k, s.values, false, s.fixed};
    Normalize(kd);
    d.knobs_.push_back(std::move(kd));
  }
  return d;
}

std::vector<SearchDomain::Saved> SearchDomain::ToSaved() const {
  std::vector<Saved> out;
  for (const KnobDomain& kd : knobs_) out.push_back({kd.knob->name, kd.values, kd.fixed});
  return out;
}

void SearchDomain::Extend(const std::string& knob, const std::vector<std::string>& values) {
  for (KnobDomain& kd : knobs_) {
    if (kd.knob->name != knob) continue;
    for (const std::string& v : values) {
      if (kd.knob->ValidateValue(v)) kd.values.push_back(v);
    }
    Normalize(kd);
  }
}

const KnobDomain* SearchDomain::Find(const std::string& knob) const {
  for (const KnobDomain& k : knobs_) {
    if (k.knob->name == knob) return &k;
  }
  return nullptr;
}

}  // namespace hone::search
