#include "search/baselines.h"

#include <algorithm>
#include <cmath>

#include "core/strings.h"

namespace hone::search {

namespace {

// The delta that turns `best` into `full` (every knob of the full configuration).
Config DeltaTo(const Config& full, const Config& best) {
  Config d;
  for (const auto& [k, v] : full.values()) {
    if (best.GetOr(k, "\x01") != v) d.Set(k, v);
  }
  return d;
}

template <class T>
void Shuffle(std::vector<T>& v, Rng& rng) {
  for (size_t i = v.size(); i > 1; --i) {
    std::swap(v[i - 1], v[static_cast<size_t>(rng.Uniform(0, static_cast<int64_t>(i) - 1))]);
  }
}

}  // namespace

Result<KnobOptions> BuildKnobOptions(const target::KnobCatalog& catalog, const DomainOptions& options,
                                     const ProposalContext& ctx) {
  HONE_ASSIGN_OR_RETURN(SearchDomain domain, SearchDomain::Build(catalog, options, ctx));
  KnobOptions out;
  for (const KnobDomain& kd : domain.knobs()) {
    std::vector<std::string> values = kd.values;
    std::string stock = catalog.ValueOf(ctx.stock, *kd.knob);
    bool legal = static_cast<bool>(kd.knob->ValidateValue(stock));
    if (legal && std::find(values.begin(), values.end(), stock) == values.end()) {
      values.insert(values.begin(), stock);
      if (kd.numeric && NumericValue(stock)) {
        std::stable_sort(values.begin(), values.end(),
                         [](const std::string& a, const std::string& b) { return *NumericValue(a) < *NumericValue(b); });
      }
    }
    out.knobs.push_back(kd.knob->name);
    out.values.push_back(std::move(values));
    out.stock.push_back(legal ? stock : "");
  }
  return out;
}

RandomProposer::RandomProposer(const target::KnobCatalog& catalog, DomainOptions options, uint64_t seed)
    : catalog_(catalog), options_(std::move(options)), seed_(seed), rng_(seed) {}

std::optional<Candidate> RandomProposer::Next(const ProposalContext& ctx) {
  auto opts = BuildKnobOptions(catalog_, options_, ctx);
  if (!opts || opts->knobs.empty()) return std::nullopt;
  double space = 1;
  for (const auto& v : opts->values) space *= static_cast<double>(v.size());
  // Rejection sampling; the space is small enough to give up after many misses.
  int attempts = static_cast<int>(std::min(20000.0, 50 * space + 100));
  for (int a = 0; a < attempts; ++a) {
    Config full = ctx.best;
    for (size_t i = 0; i < opts->knobs.size(); ++i) {
      const auto& vals = opts->values[i];
      // A stock value that cannot be spelled ("auto") is one more option: leave the
      // knob unset (possible only while the incumbent does not set it).
      int64_t extra = opts->stock[i].empty() ? 1 : 0;
      auto pick = static_cast<size_t>(rng_.Uniform(0, static_cast<int64_t>(vals.size()) - 1 + extra));
      if (pick < vals.size()) full.Set(opts->knobs[i], vals[pick]);
    }
    std::string key = full.ToString();
    if (proposed_.contains(key) || ctx.tried.contains(full.Hash()) || full == ctx.best) continue;
    if (!catalog_.Validate(full)) continue;
    proposed_.insert(key);
    Candidate c;
    c.idea = "random:" + key;
    c.title = "random configuration #" + std::to_string(proposed_.size());
    c.delta = DeltaTo(full, ctx.best);
    c.rationale = "uniform random draw over the search space";
    return c;
  }
  return std::nullopt;
}

void RandomProposer::Observe(const Observation& obs) {
  ++observed_;
  if (obs.verdict == Verdict::kKeep) ++keeps_;
}

std::string RandomProposer::Save() const {
  std::string out;
  for (const std::string& p : proposed_) out += p + "\n";
  return out;
}

Status RandomProposer::Load(const std::string& saved) {
  for (const std::string& line : Split(saved, '\n')) {
    if (!line.empty()) proposed_.insert(line);
  }
  rng_ = Rng(MixSeed(seed_, proposed_.size()));
  return Ok();
}

std::string RandomProposer::Describe() const {
  return "random search: " + std::to_string(proposed_.size()) + " configurations drawn, " + std::to_string(observed_) +
         " measured, " + std::to_string(keeps_) + " kept\n";
}

GridProposer::GridProposer(const target::KnobCatalog& catalog, DomainOptions options, int budget, uint64_t seed)
    : catalog_(catalog), options_(std::move(options)), budget_(budget), seed_(seed) {}

std::vector<std::vector<std::string>> GridProposer::CoarseAxes(const std::vector<std::vector<std::string>>& options,
                                                               const std::vector<std::string>& stock, int budget) {
  const size_t n = options.size();
  std::vector<size_t> counts(n, 1);
  double full = 1;
  for (const auto& o : options) full *= static_cast<double>(o.size());
  if (budget <= 0 || full <= budget) {
    for (size_t i = 0; i < n; ++i) counts[i] = options[i].size();
  } else {
    // Grow the knob with the smallest share of its values covered while the product fits.
    while (true) {
      double product = 1;
      for (size_t c : counts) product *= static_cast<double>(c);
      size_t pick = n;
      double best_share = 2;
      for (size_t i = 0; i < n; ++i) {
        if (counts[i] >= options[i].size()) continue;
        if (product / static_cast<double>(counts[i]) * static_cast<double>(counts[i] + 1) > budget) continue;
        double share = static_cast<double>(counts[i]) / static_cast<double>(options[i].size());
        if (share < best_share) {
          best_share = share;
          pick = i;
        }
      }
      if (pick == n) break;
      ++counts[pick];
    }
  }
  std::vector<std::vector<std::string>> axes(n);
  for (size_t i = 0; i < n; ++i) {
    const auto& o = options[i];
    if (counts[i] == o.size()) {
      axes[i] = o;
    } else if (counts[i] == 1) {
      bool has_stock = i < stock.size() && std::find(o.begin(), o.end(), stock[i]) != o.end();
      axes[i] = {has_stock ? stock[i] : o[o.size() / 2]};
    } else {
      for (size_t k = 0; k < counts[i]; ++k) {
        size_t idx = static_cast<size_t>(std::llround(static_cast<double>(k) * static_cast<double>(o.size() - 1) /
                                                      static_cast<double>(counts[i] - 1)));
        if (axes[i].empty() || axes[i].back() != o[idx]) axes[i].push_back(o[idx]);
      }
    }
  }
  return axes;
}

std::optional<Candidate> GridProposer::Next(const ProposalContext& ctx) {
  if (!built_) {
    auto opts = BuildKnobOptions(catalog_, options_, ctx);
    if (!opts) return std::nullopt;
    auto axes = CoarseAxes(opts->values, opts->stock, budget_);
    std::vector<Config> grid{ctx.stock};
    for (size_t i = 0; i < axes.size(); ++i) {
      std::vector<Config> next;
      for (const Config& g : grid) {
        for (const std::string& v : axes[i]) {
          Config c = g;
          if (v.empty()) {
            c.Erase(opts->knobs[i]);
          } else {
            c.Set(opts->knobs[i], v);
          }
          next.push_back(std::move(c));
        }
      }
      grid = std::move(next);
      axes_text_ += (axes_text_.empty() ? "" : " ") + opts->knobs[i] + "{" + Join(axes[i], ",") + "}";
    }
    Rng rng(seed_);
    Shuffle(grid, rng);
    order_ = std::move(grid);
    built_ = true;
  }
  while (next_ < order_.size()) {
    const Config& full = order_[next_++];
    if (full == ctx.best || ctx.tried.contains(full.Hash()) || !catalog_.Validate(full)) continue;
    Candidate c;
    c.idea = "grid:" + full.ToString();
    c.title = "grid point " + std::to_string(next_) + "/" + std::to_string(order_.size());
    c.delta = DeltaTo(full, ctx.best);
    c.rationale = "grid search over " + axes_text_;
    return c;
  }
  return std::nullopt;
}

void GridProposer::Observe(const Observation& obs) {
  ++observed_;
  if (obs.verdict == Verdict::kKeep) ++keeps_;
}

std::string GridProposer::Save() const { return std::to_string(next_); }

Status GridProposer::Load(const std::string& saved) {
  if (saved.empty()) return Ok();
  HONE_ASSIGN_OR_RETURN(int64_t n, ParseInt(saved));
  next_ = static_cast<size_t>(std::max<int64_t>(0, n));  // the order is rebuilt from the seed on Next()
  return Ok();
}

std::string GridProposer::Describe() const {
  return "grid search over " + axes_text_ + " (" + std::to_string(order_.size()) + " points): " + std::to_string(next_) + " walked, " + std::to_string(observed_) + " measured, " + std::to_string(keeps_) + " kept\n";
}

}  // namespace hone::search
