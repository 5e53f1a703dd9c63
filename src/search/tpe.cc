#include "search/tpe.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "core/strings.h"

namespace hone::search {

using nlohmann::json;

namespace {

Config DeltaTo(const Config& full, const Config& best) {
  Config d;
  for (const auto& [k, v] : full.values()) {
    if (best.GetOr(k, "\x01") != v) d.Set(k, v);
  }
  return d;
}

size_t Sample(const std::vector<double>& p, Rng& rng) {
  double u = rng.NextDouble();
  for (size_t i = 0; i < p.size(); ++i) {
    u -= p[i];
    if (u < 0) return i;
  }
  return p.size() - 1;
}

}  // namespace

TpeProposer::TpeProposer(const target::KnobCatalog& catalog, DomainOptions options, uint64_t seed, TpeOptions tpe)
    : catalog_(catalog), domain_(std::move(options)), seed_(seed), tpe_(tpe), rng_(seed) {}

int TpeProposer::GoodCount(int n) const {
  return std::min(static_cast<int>(std::ceil(0.1 * n)), tpe_.gamma_cap);
}

std::vector<std::vector<double>> TpeProposer::Density(const std::vector<const Point*>& group) const {
  std::vector<std::vector<double>> out;
  const double n = static_cast<double>(group.size());
  for (size_t k = 0; k < options_.knobs.size(); ++k) {
    const size_t m = options_.values[k].size();
    std::vector<double> p(m, tpe_.prior_weight / static_cast<double>(m));  // the uniform prior
    if (numeric_[k] && m > 1) {
      // Gaussian kernels over the value's rank; the bandwidth shrinks like n^(-1/5)
      // (Scott's rule on the unit range), never below one rank step.
      double sigma = std::max(1.0, static_cast<double>(m - 1) * std::pow(1.0 + n, -0.2) / 2.0);
      for (const Point* pt : group) {
        std::vector<double> kernel(m);
        double sum = 0;
        for (size_t i = 0; i < m; ++i) {
          double d = (static_cast<double>(i) - pt->index[k]) / sigma;
          kernel[i] = std::exp(-0.5 * d * d);
          sum += kernel[i];
        }
        for (size_t i = 0; i < m; ++i) p[i] += kernel[i] / sum;
      }
    } else {
      for (const Point* pt : group) p[static_cast<size_t>(pt->index[k])] += 1.0;
    }
    double total = tpe_.prior_weight + n;
    for (double& x : p) x /= total;
    out.push_back(std::move(p));
  }
  return out;
}

Config TpeProposer::ToConfig(const std::vector<int>& index, const Config& base) const {
  Config full = base;
  for (size_t k = 0; k < options_.knobs.size(); ++k) {
    full.Set(options_.knobs[k], options_.values[k][static_cast<size_t>(index[k])]);
  }
  return full;
}

std::optional<Config> TpeProposer::Draw(const ProposalContext& ctx, bool model) {
  auto fresh = [&](const Config& full) {
    return !proposed_.contains(full.ToString()) && !ctx.tried.contains(full.Hash()) && !(full == ctx.best) &&
           catalog_.Validate(full);
  };
  if (model) {
    std::vector<Point> sorted = points_;
    // Failed configurations rank below the worst level measured.
    double worst = 0;
    for (const Point& p : sorted) worst = std::min(worst, p.level);
    for (Point& p : sorted) {
      if (p.failed) p.level = worst - 1;
    }
    std::stable_sort(sorted.begin(), sorted.end(), [](const Point& a, const Point& b) { return a.level > b.level; });
    const size_t good = static_cast<size_t>(GoodCount(static_cast<int>(sorted.size())));
    std::vector<const Point*> below, above;
    for (size_t i = 0; i < sorted.size(); ++i) (i < good ? below : above).push_back(&sorted[i]);
    auto l = Density(below);
    auto g = Density(above);
    std::optional<Config> best;
    double best_score = -INFINITY, best_rank = -INFINITY;
    for (int c = 0; c < tpe_.candidates; ++c) {
      std::vector<int> index(options_.knobs.size());
      double score = 0;
      for (size_t k = 0; k < index.size(); ++k) {
        size_t i = Sample(l[k], rng_);
        index[k] = static_cast<int>(i);
        score += std::log(l[k][i]) - std::log(g[k][i]);
      }
      Config full = ToConfig(index, ctx.best);
      if (!fresh(full)) continue;
      // The ranker decides; l(x)/g(x) breaks its ties (draws it values alike, e.g. 0).
      const double rank = ranker_ ? ranker_(full) : 0;
      if (rank > best_rank || (rank == best_rank && score > best_score)) {
        best_rank = rank;
        best_score = score;
        best = std::move(full);
      }
    }
    if (best) {
      ++modelled_;
      return best;
    }
    // Every draw was measured already: fall back to a random new configuration.
  }
  double space = 1;
  for (const auto& v : options_.values) space *= static_cast<double>(v.size());
  int attempts = static_cast<int>(std::min(20000.0, 50 * space + 100));
  for (int a = 0; a < attempts; ++a) {
    std::vector<int> index(options_.knobs.size());
    for (size_t k = 0; k < index.size(); ++k) {
      index[k] = static_cast<int>(rng_.Uniform(0, static_cast<int64_t>(options_.values[k].size()) - 1));
    }
    Config full = ToConfig(index, ctx.best);
    if (fresh(full)) return full;
  }
  return std::nullopt;
}

Status TpeProposer::Prepare(const ProposalContext& ctx) {
  if (built_) return Ok();
  HONE_ASSIGN_OR_RETURN(options_, BuildKnobOptions(catalog_, domain_, ctx));
  if (options_.knobs.empty()) return InvalidArgument("no searchable knob");
  SetNumeric();
  return Ok();
}

void TpeProposer::SetNumeric() {
  numeric_.clear();
  for (const auto& values : options_.values) {
    bool numeric = values.size() > 1;
    for (const std::string& v : values) numeric = numeric && NumericValue(v).has_value();
    numeric_.push_back(numeric);
  }
  built_ = true;
}

std::optional<TpeProposer::Point> TpeProposer::IndexOf(const Config& full) const {
  Point p;
  for (size_t k = 0; k < options_.knobs.size(); ++k) {
    const auto& values = options_.values[k];
    auto it = std::find(values.begin(), values.end(), full.GetOr(options_.knobs[k], ""));
    if (it == values.end()) return std::nullopt;
    p.index.push_back(static_cast<int>(it - values.begin()));
  }
  return p;
}

void TpeProposer::Record(const Config& full, const Observation& obs) {
  if (!built_ || obs.candidate.idea.rfind("tpe:", 0) == 0) return;
  auto p = IndexOf(full);
  if (!p) return;
  proposed_.insert(full.ToString());
  Add(std::move(*p), obs);
}

std::optional<Candidate> TpeProposer::Next(const ProposalContext& ctx) {
  if (!Prepare(ctx)) return std::nullopt;
  const bool model = static_cast<int>(points_.size()) >= tpe_.startup;
  auto full = Draw(ctx, model);
  if (!full) return std::nullopt;
  pending_ = IndexOf(*full);  // a draw sets every knob to one of its options
  proposed_.insert(full->ToString());
  Candidate c;
  c.idea = "tpe:" + full->ToString();
  c.title = std::string(model ? "TPE" : "TPE start-up (random)") + " configuration #" + std::to_string(proposed_.size());
  c.delta = DeltaTo(*full, ctx.best);
  c.rationale = !model   ? "uniform random draw (TPE start-up)"
                : ranker_ ? "the best-ranked of 24 draws from the good observations' density"
                          : "largest l(x)/g(x) of 24 draws from the good observations' density";
  return c;
}

void TpeProposer::Observe(const Observation& obs) {
  if (!pending_ || obs.candidate.idea.rfind("tpe:", 0) != 0) return;  // not ours
  Point p = *pending_;
  pending_.reset();
  Add(std::move(p), obs);
}

void TpeProposer::Add(Point p, const Observation& obs) {
  switch (obs.verdict) {
    case Verdict::kKeep:
    case Verdict::kRevert:
    case Verdict::kInconclusive:
    case Verdict::kScreenedOut:
      p.level = incumbent_level_ + std::log1p(std::max(obs.gain, -0.99));
      if (obs.verdict == Verdict::kKeep) {
        incumbent_level_ = p.level;
        ++keeps_;
      }
      break;
    case Verdict::kLaunchFailed:
    case Verdict::kAccuracyFailed:
    case Verdict::kBuildFailed:
      p.failed = true;
      break;
    case Verdict::kInvalid:
      // A configuration whose own run served nothing valid (a stalled server) is a
      // failure like a launch's; another INVALID (the incumbent's trial failed) is none.
      if (!obs.no_valid_run()) return;
      p.failed = true;
      break;
    case Verdict::kPending:
    case Verdict::kSkippedBudget:
    case Verdict::kPatchFailed:
    case Verdict::kPatchRejected:
    case Verdict::kNotValidated:
      return;  // not measured (invalid, budget): no evidence
  }
  points_.push_back(std::move(p));
}

std::string TpeProposer::Save() const {
  json pts = json::array();
  for (const Point& p : points_) pts.push_back({{"index", p.index}, {"level", p.level}, {"failed", p.failed}});
  json j = {{"tpe", 1},       {"proposed", proposed_}, {"points", pts},
            {"level", incumbent_level_}, {"keeps", keeps_}, {"modelled", modelled_}};
  // Enough to continue exactly where this left off (a session killed and resumed
  // decides what an uninterrupted one does): the draws' position, the candidate out
  // for measurement, and the knob options once built.
  j["rng"] = rng_.state();
  if (pending_) j["pending"] = pending_->index;
  if (built_) j["options"] = {{"knobs", options_.knobs}, {"values", options_.values}, {"stock", options_.stock}};
  return j.dump();
}

Status TpeProposer::Load(const std::string& saved) {
  if (saved.empty() || saved.front() != '{') return Ok();  // another strategy's state: start afresh
  auto parsed = TryCatch(ErrorCode::kDataLoss, "tpe state", [&]() -> Status {
    json j = json::parse(saved);
    if (j.value("tpe", 0) != 1) return DataLoss("tpe state: unknown version");
    proposed_ = j.at("proposed").get<std::set<std::string>>();
    points_.clear();
    for (const json& p : j.at("points")) {
      points_.push_back({p.at("index").get<std::vector<int>>(), p.value("level", 0.0), p.value("failed", false)});
    }
    incumbent_level_ = j.value("level", 0.0);
    keeps_ = j.value("keeps", 0);
    modelled_ = j.value("modelled", 0);
    // States saved before the position was: a fresh stream per proposal count.
    rng_ = Rng(j.contains("rng") ? j.at("rng").get<uint64_t>() : MixSeed(seed_, proposed_.size()));
    pending_.reset();
    if (j.contains("pending")) pending_ = Point{j.at("pending").get<std::vector<int>>(), 0, false};
    built_ = false;
    if (j.contains("options")) {
      const json& o = j.at("options");
      options_.knobs = o.at("knobs").get<std::vector<std::string>>();
      options_.values = o.at("values").get<std::vector<std::vector<std::string>>>();
      options_.stock = o.value("stock", std::vector<std::string>());
      SetNumeric();
    }
    return Ok();
  });
  if (!parsed) return Fail(parsed.error());
  return *parsed;
}

std::string TpeProposer::Describe() const {
  return "TPE (Bergstra et al. 2011; Optuna defaults): " + std::to_string(proposed_.size()) + " configurations, " +
         std::to_string(modelled_) + " from the model after " + std::to_string(tpe_.startup) +
         " random, " + std::to_string(points_.size()) + " measured, " + std::to_string(keeps_) + " kept\n";
}

}  // namespace hone::search
