#include "search/planner.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "core/rng.h"
#include "core/strings.h"
#include "search/baselines.h"
#include "search/gp.h"
#include "search/tpe.h"

namespace hone::search {

using nlohmann::json;

namespace {

constexpr int kMaxLooks = 3;

std::string Pct(double f) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%+.1f%%", f * 100);
  return buf;
}

Config ConfigOf(const json& values) {
  Config c;
  for (const auto& [k, v] : values.get<std::map<std::string, std::string>>()) c.Set(k, v);
  return c;
}

std::string Num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

}  // namespace

Planner::Planner(const target::KnobCatalog& catalog, Heuristics heuristics, PlannerOptions options)
    : catalog_(catalog),
      heuristics_(std::move(heuristics)),
      options_(std::move(options)),
      explorer_(catalog, options_.domain, MixSeed(options_.seed, 0x7e)) {
  if (options_.framework.empty()) options_.framework = catalog_.framework();
  fw_ = heuristics_.Framework(options_.framework);
  if (options_.protocol) cost_.emplace(*options_.protocol);
  if (options_.rank_explore) explorer_.SetRanker([this](const Config& full) { return RankConfig(full); });
}

double Planner::PriorScale(const target::Knob* knob) const {
  const std::string category = knob ? knob->category : "";
  const double base = knob && knob->effect_scale ? *knob->effect_scale : heuristics_.Category(category).scale;
  return base * heuristics_.BottleneckMultiplier(diagnosis_.bottleneck, category) *
         heuristics_.DeviceMultiplier(options_.domain.gpu, category);
}

double Planner::KnobScale(const std::string& knob) const {
  const target::Knob* k = catalog_.Find(knob);
  double s0 = PriorScale(k);
  auto it = beliefs_.find(knob);
  if (it == beliefs_.end()) return s0;
  const Belief& b = it->second;
  double w = options_.prior_weight;
  return std::sqrt((w * s0 * s0 + b.sum_sq) / (w + b.n));
}

Config Planner::Resolve(const Config& delta) const {
  Config out;
  for (const auto& [k, v] : delta.values()) {
    out.Set(k, ResolveValueExpression(v, ctx_.concurrency, ctx_.cpus, ctx_.cores));
  }
  return out;
}

std::string Planner::Effective(const Config& config, const target::Knob& knob, int depth) const {
  std::string v = catalog_.ValueOf(config, knob);
  // A catalog loaded from its file refuses auto_means cycles; the depth guards one built in code.
  if (knob.auto_means.empty() || v != knob.default_value || depth > 4) return v;
  if (const target::Knob* other = catalog_.Find(knob.auto_means)) {
    std::string o = Effective(config, *other, depth + 1);
    return o == other->default_value ? v : o;  // the other knob's own default unresolved: unknown
  }
  std::string r = ResolveValueExpression(knob.auto_means, ctx_.concurrency, ctx_.cpus, ctx_.cores);
  return r == knob.auto_means ? v : r;  // unresolved here (cores unknown)
}

bool Planner::Changes(const Config& base, const Config& full, const Config& delta) const {
  if (full == base) return false;
  for (const auto& [k, v] : delta.values()) {
    const target::Knob* knob = catalog_.Find(k);
    if (!knob || Effective(full, *knob) != Effective(base, *knob)) return true;
  }
  return false;
}

int Planner::AddValueIdea(const KnobDomain& kd, const std::string& value, int parent, const std::string& origin) {
  const target::Knob& k = *kd.knob;
  IdeaNode n;
  n.kind = IdeaKind::kValue;
  n.key = k.name + "=" + value;
  n.knob = k.name;
  n.value = value;
  n.title = "set " + k.name + " to " + value;
  n.delta = Config{{k.name, value}};
  n.category = k.category;
  n.origin = origin;
  if (fw_) {
    if (auto it = fw_->value_hints.find(k.name); it != fw_->value_hints.end()) {
      for (const std::string& expr : it->second) {
        if (ResolveValueExpression(expr, ctx_.concurrency, ctx_.cpus, ctx_.cores) == value) {
          n.prior_mean += 0.5 * PriorScale(&k);
          n.prior_note = "hint: " + expr;
        }
      }
    }
  }
  for (const Prior& p : options_.priors) {
    if (p.knob != k.name || p.value != value) continue;
    double c = std::clamp(p.confidence, 0.0, 1.0);
    if (p.failure_kind.empty()) {
      n.prior_mean += c * std::log1p(std::max(p.effect, -0.9));
      n.prior_note += (n.prior_note.empty() ? "" : "; ") + std::string("kb: ") + Pct(p.effect) + " (conf " + Num(c) + ")";
    } else {
      n.kb_failure = std::max(n.kb_failure, c);
      n.prior_note += (n.prior_note.empty() ? "" : "; ") + std::string("kb failure: ") + p.failure_kind + " (conf " +
                      Num(c) + ")";
      if ((p.failure_kind == "bad_flag" || p.failure_kind == "unsupported") && c >= 0.5) {
        n.state = IdeaState::kPruned;
        n.note = "knowledge base: " + p.failure_kind;
      } else if (KnownLaunchFailure(p.failure_kind, c) && n.state == IdeaState::kOpen) {
        // It did not launch at this very point: never launched alone again, retried
        // with the values of the knobs it interacts with (as a failure of this session).
        n.state = IdeaState::kPruned;
        n.note = std::string(kKbUnlaunchedNote) + " (" + p.failure_kind + ", conf " + Num(c) + ")";
      }
    }
  }
  const int id = tree_.Add(std::move(n), parent);
  // A value added as the search goes (a win's neighbour); those of the first tree get
  // theirs in Init, once every partner's belief is built.
  if (initialized_ && KbUnlaunchedIdea(tree_.at(id))) AddRetries(id);
  return id;
}

void Planner::AddBundles() {
  if (!fw_) return;
  for (const Bundle& b : fw_->bundles) {
    if (std::find(b.when.begin(), b.when.end(), diagnosis_.bottleneck) == b.when.end()) continue;
    bool ok = true;
    for (const auto& [k, v] : b.delta.values()) ok = ok && catalog_.Find(k) && domain_.Find(k);
    if (!ok) continue;  // a bundle only over knobs this search may change
    IdeaNode n;
    n.kind = IdeaKind::kBundle;
    n.key = "bundle:" + b.title;
    n.title = b.title;
    n.delta = b.delta;
    n.category = b.category;
    n.origin = "bundle";
    n.prior_note = "diagnosis: " + std::string(BottleneckName(diagnosis_.bottleneck));
    tree_.Add(std::move(n), -1);
  }
}

Status Planner::Init(const ProposalContext& ctx) {
  HONE_ASSIGN_OR_RETURN(domain_, SearchDomain::Build(catalog_, options_.domain, ctx));
  diagnosis_ = Diagnose(ctx.bottleneck, ctx.baseline_metrics, heuristics_.diagnosis);
  for (const KnobDomain& kd : domain_.knobs()) {
    Belief b;
    b.reference = Effective(ctx.stock, *kd.knob);
    b.current = Effective(ctx.best, *kd.knob);
    IdeaNode g;
    g.kind = IdeaKind::kGroup;
    g.key = "knob:" + kd.knob->name;
    g.knob = kd.knob->name;
    g.title = "tune " + kd.knob->name;
    g.category = kd.knob->category;
    g.origin = "catalog";
    int gid = tree_.Add(std::move(g), -1);
    for (const std::string& v : kd.values) {
      if (v == b.reference && v == b.current) continue;  // the stock value is no idea
      AddValueIdea(kd, v, gid, "catalog");
    }
    beliefs_[kd.knob->name] = std::move(b);
  }
  AddBundles();
  for (const Config& c : options_.conflicts) SeedConflict(c);
  std::vector<int> unlaunched;
  for (const IdeaNode& n : tree_.nodes()) {
    if (KbUnlaunchedIdea(n)) unlaunched.push_back(n.id);
  }
  for (int id : unlaunched) AddRetries(id);
  initialized_ = true;
  std::vector<Observation> foreign = std::move(foreign_);
  foreign_.clear();
  for (const Observation& obs : foreign) Observe(obs);
  return Ok();
}

GpPrediction Planner::Posterior(const std::string& knob, const std::string& value, double prior_mean) const {
  const Belief& b = beliefs_.at(knob);
  double scale = KnobScale(knob);
  double noise = std::max(ctx_.noise, 1e-3);
  const KnobDomain* kd = domain_.Find(knob);
  auto x = NumericValue(value);
  if (kd && kd->numeric && x) {
    Gp1d gp(scale, options_.length_scale, noise);
    Gp1d measured(scale, options_.length_scale, noise);  // the measurements alone
    if (auto r = NumericValue(b.reference)) gp.Add(GpInput(*r), 0.0);
    for (const auto& [v, es] : b.effects) {
      if (auto xv = NumericValue(v)) {
        for (double e : es) {
          gp.Add(GpInput(*xv), e);
          measured.Add(GpInput(*xv), e);
        }
      }
    }
    GpPrediction p = gp.Predict(GpInput(*x));
    // A value's own prior shift (hint, learning) fades as measurements near it pin the
    // belief down: weighted by the share of prior variance they leave. The reference's
    // zero is no measurement of another value: it does not fade the shift (it used to,
    // so a hint next to the stock, threads = cpus beside threads=1, came after
    // unhinted values further away, and two identical sessions diverged on it).
    const double left = measured.Predict(GpInput(*x)).sd;
    p.mean += prior_mean * (left * left) / (scale * scale);
    return p;
  }
  if (value == b.reference) return {0.0, 0.0};
  double precision = 1.0 / (scale * scale);
  double weighted = prior_mean * precision;
  if (auto it = b.effects.find(value); it != b.effects.end()) {
    for (double e : it->second) {
      precision += 1.0 / (noise * noise);
      weighted += e / (noise * noise);
    }
  }
  return {weighted / precision, std::sqrt(1.0 / precision)};
}

double Planner::IncumbentEffect(const std::string& knob) const {
  const Belief& b = beliefs_.at(knob);
  if (b.current == b.reference) return 0.0;
  if (b.effects.contains(b.current)) return Posterior(knob, b.current, 0.0).mean;
  return b.current_effect;
}

double Planner::TrialNoise() const {
  // The median |A2/A1 - 1| of A/A pairs is 0.6745 sqrt(2) sd of one trial.
  return ctx_.floor / (0.6745 * std::sqrt(2.0));
}

std::optional<double> Planner::RoofCap() const {
  if (!ctx_.headroom || *ctx_.headroom <= 0) return std::nullopt;
  return std::max(0.0, -std::log(*ctx_.headroom) - best_level_);
}

double Planner::Kept(double mean, double sd, int looks) const {
  const MeasurementProtocol p = cost_ ? cost_->protocol() : MeasurementProtocol{};
  const double threshold = std::log1p(std::max(p.min_gain, ctx_.floor));
  // The estimate's noise after the last look's pairs (and those it pools).
  const double se = TrialNoise() * std::sqrt(2.0 / (std::max(1, p.max_pairs) * std::max(1, looks)));
  return KeptGain(mean, sd, threshold, se);
}

int Planner::PooledLooks(const IdeaNode& n) const {
  if (n.origin != "retest" || !cost_ || !cost_->protocol().pool_retests) return 0;
  // The protocol pools only against the same incumbent: looks since the last KEEP.
  int last_keep = 0;
  for (const IdeaNode& o : tree_.nodes()) {
    if (o.verdict == Verdict::kKeep) last_keep = std::max(last_keep, o.order);
  }
  int looks = 0;
  for (int p = n.parent; p >= 0; p = tree_.at(p).parent) {
    const IdeaNode& look = tree_.at(p);
    if (look.key != n.key || look.state != IdeaState::kInconclusive || look.order <= last_keep) break;
    ++looks;
  }
  return looks;
}

void Planner::ScoreNode(IdeaNode& n) {
  double urgency = ctx_.headroom ? std::clamp(1.0 - *ctx_.headroom, 0.0, 1.0) : 0.5;
  double ei = 0, cost = 1, risk = 0, mult = 1;
  double effect_mean = 0, effect_sd = 0;  // belief about the change relative to the incumbent
  int pooled = 0;                          // earlier looks a re-test's verdict pools
  std::string model;
  if (n.kind == IdeaKind::kValue) {
    const Belief& b = beliefs_.at(n.knob);
    const target::Knob* k = catalog_.Find(n.knob);
    GpPrediction p = Posterior(n.knob, n.value, n.prior_mean);
    double best = IncumbentEffect(n.knob);
    pooled = PooledLooks(n);
    ei = Kept(p.mean - best, p.sd, 1 + pooled);
    effect_mean = p.mean - best;
    effect_sd = p.sd;
    int measured = 0;
    for (const auto& [v, es] : b.effects) measured += static_cast<int>(es.size());
    model = "belief " + Pct(std::expm1(p.mean)) + " sd " + Num(p.sd) + " vs incumbent " + Pct(std::expm1(best)) +
            ", " + std::to_string(measured) + " measurement(s) of this knob";
    if (n.origin == "retest") mult *= 0.8;  // a second look costs a trial that could explore
    cost = heuristics_.Category(n.category).cost;
    risk = k ? heuristics_.RiskPenalty(k->accuracy_risk) : 0;
    mult *= std::pow(0.5, b.crashes) * std::pow(0.5, b.accuracy_failures);
  } else {  // bundle: the largest member spread, the worst member risk and crash record
    double scale = 0;
    for (const auto& [knob, v] : n.delta.values()) {
      const target::Knob* k = catalog_.Find(knob);
      scale = std::max(scale, n.prior_sd > 0 ? n.prior_sd : KnobScale(knob));
      if (k) risk = std::max(risk, heuristics_.RiskPenalty(k->accuracy_risk));
      if (k) cost = std::max(cost, heuristics_.Category(k->category).cost);
      if (auto it = beliefs_.find(knob); it != beliefs_.end()) {
        mult *= std::pow(0.5, it->second.crashes) * std::pow(0.5, it->second.accuracy_failures);
      }
    }
    ei = Kept(n.prior_mean, scale);
    effect_mean = n.prior_mean;
    effect_sd = scale;
    model = "bundle, sd " + Num(scale);
  }
  // Urgency: the roofline bounds what any idea can still gain.
  if (auto cap = RoofCap()) ei = std::min(ei, *cap);
  mult *= (1.0 - risk * (1.0 - urgency)) * (1.0 - 0.8 * n.kb_failure) * n.bonus;
  // What measuring it will cost: a candidate near neutral takes every look of the pairs.
  double runs = 1;
  if (cost_) {
    // A pooled re-test's looks carry its earlier pairs too: as if each trial were that
    // much less noisy (an approximation: the first look already sees them all).
    runs = cost_->ExpectedRunsUnder(effect_mean, effect_sd, TrialNoise() / std::sqrt(1.0 + pooled), ctx_.floor) /
           cost_->DecisiveRuns();
  }
  n.expected_gain = std::expm1(ei);
  n.score = ei * mult / cost / runs;
  n.why = "expected " + Pct(n.expected_gain) + " (" + model + ")";
  if (pooled > 0) n.why += ", pools " + std::to_string(pooled) + " earlier look(s)";
  if (cost_) n.why += ", ~" + Num(runs * cost_->DecisiveRuns()) + " runs";
  if (risk > 0) n.why += ", accuracy risk -" + Num(risk * (1.0 - urgency));
  if (cost != 1) n.why += ", cost x" + Num(cost);
  if (n.bonus != 1) n.why += ", double-down x" + Num(n.bonus);
  if (!n.prior_note.empty()) n.why += ", " + n.prior_note;
}

void Planner::UpdateCombination() {
  Config delta;
  double mean = 0, var = 0;
  std::string note;
  for (const auto& [knob, b] : beliefs_) {
    if (b.pruned || b.effects.empty()) continue;
    const double incumbent = IncumbentEffect(knob);
    std::string best_value;
    GpPrediction best{0, 0};
    for (const auto& [value, es] : b.effects) {
      if (value == b.current || es.empty()) continue;
      GpPrediction p = Posterior(knob, value, 0.0);
      p.mean -= incumbent;
      if (p.mean > best.mean) {
        best = p;
        best_value = value;
      }
    }
    if (best_value.empty()) continue;
    delta.Set(knob, best_value);
    mean += best.mean;
    var += best.sd * best.sd;
    note += (note.empty() ? "" : ", ") + knob + "=" + best_value + " " + Pct(std::expm1(best.mean));
  }
  const std::string key = "combine:" + delta.ToString();
  for (IdeaNode& n : tree_.mutable_nodes()) {
    if (n.origin == "combine" && n.state == IdeaState::kOpen && n.key != key) {
      n.state = IdeaState::kPruned;
      n.note = "superseded by the evidence";
    }
  }
  if (delta.size() < 2) return;
  for (const IdeaNode& n : tree_.nodes()) {
    if (n.key == key) return;  // open already, or measured on an earlier incumbent
  }
  IdeaNode n;
  n.kind = IdeaKind::kBundle;
  n.key = key;
  n.title = "combine what measured better: " + delta.ToString();
  n.delta = delta;
  n.category = "combination";
  n.origin = "combine";
  n.prior_mean = mean;
  n.prior_sd = std::sqrt(var);
  n.prior_note = "measured: " + note;
  tree_.Add(std::move(n), -1);
}

bool Planner::FloorBlocksSingleMoves() const {
  const IdeaNode* top = nullptr;
  for (const IdeaNode& n : tree_.nodes()) {
    if (n.proposable() && (!top || n.score > top->score)) top = &n;
  }
  if (!top) return true;
  if (top->kind != IdeaKind::kValue) return false;  // a multi-knob idea of the tree's own
  GpPrediction p = Posterior(top->knob, top->value, top->prior_mean);
  const double best = IncumbentEffect(top->knob);
  return Kept(p.mean - best, p.sd) < 0.5 * ExpectedImprovement(p.mean, p.sd, best);
}

Planner::DeltaBelief Planner::BeliefOf(const Config& full) const {
  DeltaBelief b;
  for (const auto& [k, v] : full.values()) {
    auto it = beliefs_.find(k);
    if (it == beliefs_.end() || it->second.current == v) continue;
    const double base = IncumbentEffect(k);
    GpPrediction p = Posterior(k, v, 0.0);
    b.members.push_back({k, v, p.mean - base, p.sd * p.sd, base});
    b.mean += p.mean - base;
    b.var += p.sd * p.sd;
    b.penalty *= std::pow(0.5, it->second.crashes) * std::pow(0.5, it->second.accuracy_failures);
  }
  return b;
}

double Planner::RankConfig(const Config& full) const {
  const DeltaBelief b = BeliefOf(full);
  return Kept(b.mean, std::sqrt(b.var)) * b.penalty;
}

void Planner::AttributeEffect(const Config& resolved, double log_gain) {
  const DeltaBelief b = BeliefOf(resolved);
  const double total = b.var + ctx_.noise * ctx_.noise;
  if (b.members.empty() || total <= 0) return;
  for (const DeltaBelief::Member& m : b.members) {
    RecordEffect(m.knob, m.value, m.base + m.mean + m.var / total * (log_gain - b.mean));
  }
}

namespace {

// The verdicts of a candidate whose server started.
bool Launched(Verdict v) {
  return v == Verdict::kKeep || v == Verdict::kRevert || v == Verdict::kInconclusive ||
         v == Verdict::kScreenedOut || v == Verdict::kAccuracyFailed;
}

}  // namespace

void Planner::AddRetries(int failed_id, bool all) {
  if (!fw_) return;
  const IdeaNode f = tree_.at(failed_id);
  std::set<std::string> partners;
  if (auto it = fw_->interactions.find(f.knob); it != fw_->interactions.end()) {
    partners.insert(it->second.begin(), it->second.end());
  }
  for (const auto& [k, others] : fw_->interactions) {
    if (std::find(others.begin(), others.end(), f.knob) != others.end()) partners.insert(k);
  }
  // An earlier retry of this knob that launched names the value that explains the
  // failures (weights=q8_0 crashed with repack=on and ran with repack=off).
  std::optional<std::pair<std::string, std::string>> explained;
  std::set<std::string> existing;
  for (const IdeaNode& r : tree_.nodes()) {
    existing.insert(r.key);
    if (r.origin != "retry" || !r.verdict || !Launched(*r.verdict) || r.parent < 0) continue;
    if (tree_.at(r.parent).knob != f.knob) continue;  // a retry of another knob's failure
    for (const auto& [k, val] : r.delta.values()) {
      if (k != f.knob && partners.contains(k)) explained = std::make_pair(k, val);
    }
  }
  auto add = [&](const std::string& j, const std::string& w, const std::string& why) {
    AddRetry(f, j, w,
             f.key + " failed to launch with " + j + "=" + beliefs_.at(j).current + "; " + f.knob + " and " + j +
                 " interact" + why,
             existing);
  };
  auto usable = [&](const std::string& j) { return RetryPartner(f.knob, j); };
  if (!all && explained && usable(explained->first) && beliefs_.at(explained->first).current != explained->second) {
    add(explained->first, explained->second,
        " (" + explained->first + "=" + explained->second + " let an earlier value of " + f.knob + " launch)");
    return;
  }
  for (const std::string& j : partners) {
    if (!usable(j)) continue;
    for (const std::string& w : domain_.Find(j)->values) {
      if (w != beliefs_.at(j).current) add(j, w, "");
    }
  }
}

void Planner::AddRetry(const IdeaNode& of, const std::string& j, const std::string& w, std::string note,
                       std::set<std::string>& existing) {
  IdeaNode n;
  n.kind = IdeaKind::kBundle;
  n.key = "retry:" + of.key + "," + j + "=" + w;
  if (!existing.insert(n.key).second) return;
  n.title = "set " + of.knob + " to " + of.value + " with " + j + "=" + w;
  n.delta = Config{{of.knob, of.value}, {j, w}};
  n.category = of.category;
  n.origin = "retry";
  n.prior_note = std::move(note);
  tree_.Add(std::move(n), of.id);
}

bool Planner::RetryPartner(const std::string& knob, const std::string& j) const {
  auto b = beliefs_.find(j);
  return j != knob && b != beliefs_.end() && !b->second.pruned && domain_.Find(j) != nullptr;
}

void Planner::Rescore() {
  for (IdeaNode& n : tree_.mutable_nodes()) {
    if (n.proposable()) ScoreNode(n);
  }
  // A group shows its best open idea.
  for (IdeaNode& g : tree_.mutable_nodes()) {
    if (g.kind != IdeaKind::kGroup) continue;
    g.score = 0;
    g.expected_gain = 0;
    std::vector<int> stack = g.children;
    while (!stack.empty()) {
      const IdeaNode& c = tree_.at(stack.back());
      stack.pop_back();
      if (c.proposable() && c.score > g.score) {
        g.score = c.score;
        g.expected_gain = c.expected_gain;
      }
      for (int cc : c.children) stack.push_back(cc);
    }
  }
}

std::optional<Candidate> Planner::Next(const ProposalContext& ctx) {
  ctx_.headroom = ctx.headroom;
  ctx_.noise = options_.default_noise;
  ctx_.floor = options_.default_noise;
  if (ctx.noise_floor && *ctx.noise_floor > 0) {
    ctx_.noise = std::log1p(*ctx.noise_floor);
    ctx_.floor = *ctx.noise_floor;
  }
  ctx_.concurrency = std::max(1, ctx.concurrency);
  ctx_.cpus = std::max(1, ctx.cpus);
  ctx_.cores = std::max(0, ctx.cores);
  if (!initialized_) {
    if (auto s = Init(ctx); !s) {
      stop_note_ = "cannot build the search domain: " + s.error().message;
      return std::nullopt;
    }
  }
  // The incumbent may have moved without this planner (a warm-start recipe, a kernel
  // candidate): follow it, so effects stay relative to what is measured.
  for (auto& [knob, b] : beliefs_) {
    const target::Knob* k = catalog_.Find(knob);
    if (!k) continue;
    std::string now = Effective(ctx.best, *k);
    if (now != b.current) Rebase(knob, now);
  }
  (void)explorer_.Prepare(ctx);  // no knob to explore leaves the tree alone
  UpdateCombination();
  Rescore();
  // Where the keep threshold blocks single moves, or no idea of the tree is left to
  // measure, the next move is a multi-knob one drawn from TPE; never above the
  // roofline's bound (nothing can gain there).
  const std::optional<double> cap = RoofCap();
  const bool below_roof = !cap || *cap > std::log1p(options_.min_expected_gain);
  if (below_roof && FloorBlocksSingleMoves()) {
    if (auto c = Explore(ctx, "the keep threshold blocks single moves")) return c;
  }
  if (auto c = FromTree(ctx)) return c;
  const std::string stopped = stop_note_;
  if (options_.explore && below_roof) {
    if (auto c = Explore(ctx, stopped)) return c;
  }
  stop_note_ = stopped;
  return std::nullopt;
}

std::optional<Candidate> Planner::Explore(const ProposalContext& ctx, const std::string& why) {
  std::optional<Candidate> c;
  for (int attempt = 0; attempt < 8 && !c; ++attempt) {
    c = explorer_.Next(ctx);
    if (!c) return std::nullopt;
    // TPE spells out every knob; values the incumbent already has are no change.
    Config delta;
    for (const auto& [k, v] : c->delta.values()) {
      const target::Knob* knob = catalog_.Find(k);
      if (!knob || Effective(ctx.best, *knob) != v) delta.Set(k, v);
    }
    if (delta.size() == 0) {
      explorer_.Observe({*c, ctx.best, Verdict::kInvalid, 0, ""});  // the incumbent itself: no evidence
      c.reset();
      continue;
    }
    if (Config full = ctx.best.Merged(delta); HeldConflict(full) || KbUnlaunched(delta)) {
      // A learned conflict, or a value the knowledge base saw fail to launch here: a
      // failure to launch, known without a trial.
      explorer_.Observe({*c, full, Verdict::kLaunchFailed, 0, "conflict"});
      c.reset();
      continue;
    }
    c->delta = delta;
  }
  if (!c) return std::nullopt;
  IdeaNode n;
  n.kind = IdeaKind::kBundle;
  n.key = c->idea;
  n.title = "explore: " + c->title;
  n.delta = c->delta;
  n.category = "combination";
  n.origin = "explore";
  n.state = IdeaState::kProposed;
  n.order = ++proposals_;
  n.why = why;
  pending_ = tree_.Add(std::move(n), -1);
  pending_full_ = ctx.best.Merged(c->delta);
  c->rationale = why + ": " + c->rationale;
  stop_note_.clear();
  return c;
}

std::optional<Candidate> Planner::FromTree(const ProposalContext& ctx) {
  std::vector<int> order;
  for (const IdeaNode& n : tree_.nodes()) {
    if (n.proposable()) order.push_back(n.id);
  }
  // Highest score first; ties keep catalog order.
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return tree_.at(a).score > tree_.at(b).score; });
  for (int id : order) {
    IdeaNode& n = tree_.at(id);
    if (n.expected_gain < options_.min_expected_gain) {
      stop_note_ = "converged: the best remaining idea (" + n.key + ") expects " + Pct(n.expected_gain);
      return std::nullopt;
    }
    Config delta = Resolve(n.delta);
    Config full = ctx.best.Merged(delta);
    if (!Changes(ctx.best, full, delta) || (ctx.tried.contains(full.Hash()) && n.origin != "retest")) {
      // Nothing new to measure from here; it may be again after the incumbent moves.
      continue;
    }
    if (auto v = catalog_.Validate(full); !v) {
      n.state = IdeaState::kPruned;
      n.note = "catalog: " + v.error().message;
      continue;
    }
    if (HeldConflict(full)) continue;  // it may launch once the incumbent moves
    n.state = IdeaState::kProposed;
    n.order = ++proposals_;
    pending_ = id;
    pending_full_ = full;
    Candidate c;
    c.idea = n.key;
    c.title = n.title;
    c.delta = delta;
    c.expected_gain = n.expected_gain;
    const target::Knob* k = n.kind == IdeaKind::kValue ? catalog_.Find(n.knob) : nullptr;
    c.rationale = n.why + (k && !k->why.empty() ? ". " + k->why : "");
    return c;
  }
  stop_note_ = "no open idea left";
  return std::nullopt;
}

void Planner::LearnConflict(const IdeaNode& retry, const Observation& obs) {
  if (retry.parent < 0) return;
  const IdeaNode& failed = tree_.at(retry.parent);
  if (failed.kind != IdeaKind::kValue) return;
  const target::Knob* knob = catalog_.Find(failed.knob);
  if (!knob) return;
  for (const auto& [j, w] : retry.delta.values()) {
    const target::Knob* partner = catalog_.Find(j);
    if (j == failed.knob || !partner) continue;
    const std::string ran = Effective(obs.config, *partner);
    // The latest failure of the value with the partner at another value than the one
    // that launched.
    for (auto f = failed_launches_.rbegin(); f != failed_launches_.rend(); ++f) {
      if (Effective(*f, *knob) != failed.value) continue;
      const std::string before = Effective(*f, *partner);
      if (before == ran) continue;
      Config conflict{{failed.knob, failed.value}, {j, before}};
      if (std::find(conflicts_.begin(), conflicts_.end(), conflict) == conflicts_.end()) {
        conflicts_.push_back(std::move(conflict));
      }
      break;
    }
  }
}

void Planner::SeedConflict(const Config& conflict) {
  if (conflict.size() < 2) return;  // a single value that never launches is a failure, not a conflict
  if (std::find(conflicts_.begin(), conflicts_.end(), conflict) == conflicts_.end()) conflicts_.push_back(conflict);
  std::set<std::string> existing;
  for (const IdeaNode& r : tree_.nodes()) existing.insert(r.key);
  const size_t count = tree_.nodes().size();
  for (size_t i = 0; i < count; ++i) {
    const IdeaNode v = tree_.nodes()[i];
    if (v.kind != IdeaKind::kValue || !v.proposable()) continue;
    if (auto have = conflict.Get(v.knob); !have || *have != v.value) continue;
    for (const auto& [j, blocked] : conflict.values()) {
      if (!RetryPartner(v.knob, j)) continue;
      for (const std::string& w : domain_.Find(j)->values) {
        if (w == blocked) continue;
        AddRetry(v, j, w, "knowledge base: " + v.key + " does not launch with " + j + "=" + blocked, existing);
      }
    }
  }
}

bool Planner::KbUnlaunchedIdea(const IdeaNode& n) {
  return n.kind == IdeaKind::kValue && n.state == IdeaState::kPruned && n.note.starts_with(kKbUnlaunchedNote);
}

bool Planner::KbUnlaunched(const Config& delta) const {
  for (const IdeaNode& n : tree_.nodes()) {
    if (KbUnlaunchedIdea(n) && n.delta == delta) return true;
  }
  return false;
}

bool Planner::GivenConflict(const Config& conflict) const {
  return std::find(options_.conflicts.begin(), options_.conflicts.end(), conflict) != options_.conflicts.end();
}

std::vector<Config> Planner::LearnedConflicts() const {
  std::vector<Config> out;
  for (const Config& c : conflicts_) {
    if (!GivenConflict(c)) out.push_back(c);
  }
  return out;
}

std::optional<std::string> Planner::HeldConflict(const Config& full) const {
  for (const Config& c : conflicts_) {
    bool held = true;
    for (const auto& [k, v] : c.values()) {
      const target::Knob* knob = catalog_.Find(k);
      if (!knob || Effective(full, *knob) != v) {
        held = false;
        break;
      }
    }
    if (held) return c.ToString();
  }
  return std::nullopt;
}

int Planner::FindProposed(const Observation& obs) const {
  if (pending_ >= 0 && tree_.at(pending_).key == obs.candidate.idea) return pending_;
  for (const IdeaNode& n : tree_.nodes()) {
    if (n.state == IdeaState::kProposed && n.key == obs.candidate.idea) return n.id;
  }
  return -1;
}

void Planner::RecordEffect(const std::string& knob, const std::string& value, double log_effect) {
  Belief& b = beliefs_.at(knob);
  b.effects[value].push_back(log_effect);
  b.sum_sq += log_effect * log_effect;
  ++b.n;
}

void Planner::Rebase(const std::string& knob, const std::string& new_value) {
  Belief& b = beliefs_.at(knob);
  b.reference = new_value;
  b.current = new_value;
  b.current_effect = 0;
  b.effects.clear();
}

void Planner::ExpandWin(int id) {
  const std::string knob = tree_.at(id).knob;
  const std::string value = tree_.at(id).value;
  const KnobDomain* kd = domain_.Find(knob);
  if (!kd || !kd->numeric) return;
  auto xv = NumericValue(value);
  // Neighbouring values (in the sorted domain) become refinements of the win.
  const std::vector<std::string> values = kd->values;
  auto pos = std::find(values.begin(), values.end(), value);
  if (pos == values.end() || !xv) return;
  std::vector<std::string> neighbours;
  if (pos != values.begin()) neighbours.push_back(*(pos - 1));
  if (pos + 1 != values.end()) neighbours.push_back(*(pos + 1));
  if (!kd->fixed) {
    // New values between the win and its neighbours, and one step past an edge.
    const target::Knob& k = *kd->knob;
    std::vector<double> fresh;
    for (const std::string& nb : neighbours) fresh.push_back(std::sqrt(std::max(*xv, 1e-9) * std::max(*NumericValue(nb), 1e-9)));
    if (pos == values.begin()) fresh.push_back(*xv / 2);
    if (pos + 1 == values.end()) fresh.push_back(*xv * 2);
    std::vector<std::string> added;
    for (double f : fresh) {
      std::string s = FormatValue(k, f);
      if (std::find(values.begin(), values.end(), s) != values.end()) continue;
      if (std::find(added.begin(), added.end(), s) != added.end()) continue;
      if (!k.ValidateValue(s)) continue;
      if (k.type == target::KnobType::kInt && *NumericValue(s) < 1 && *xv >= 1) continue;
      added.push_back(s);
    }
    domain_.Extend(knob, added);
    const KnobDomain* nkd = domain_.Find(knob);
    for (const std::string& s : added) {
      int nid = AddValueIdea(*nkd, s, id, "expansion");
      tree_.at(nid).bonus = 1.25;
    }
  }
  for (const std::string& nb : neighbours) {
    int nid = tree_.OpenWithKey(knob + "=" + nb);
    if (nid < 0) continue;
    tree_.Reparent(nid, id);
    tree_.at(nid).bonus = 1.25;
  }
}

void Planner::ReopenInteractions(const std::string& knob, int win_id) {
  if (!fw_) return;
  auto it = fw_->interactions.find(knob);
  if (it == fw_->interactions.end()) return;
  for (const std::string& other : it->second) {
    if (!beliefs_.contains(other)) continue;
    const KnobDomain* kd = domain_.Find(other);
    if (!kd) continue;
    // Rejected values of the other knob were measured on a configuration that no longer
    // holds: re-test them as refinements of this win, starting from half their effect.
    double incumbent = IncumbentEffect(other);
    std::vector<std::pair<std::string, double>> reopen;  // value, relative effect
    for (const IdeaNode& n : tree_.nodes()) {
      if (n.kind != IdeaKind::kValue || n.knob != other) continue;
      if (n.state != IdeaState::kReverted && n.state != IdeaState::kInconclusive) continue;
      if (std::any_of(reopen.begin(), reopen.end(), [&](const auto& r) { return r.first == n.value; })) continue;
      reopen.emplace_back(n.value, Posterior(other, n.value, 0.0).mean - incumbent);
    }
    Rebase(other, beliefs_.at(other).current);
    for (const auto& [value, rel] : reopen) {
      // A pending second look at the same value is superseded by this re-test.
      if (int old = tree_.OpenWithKey(other + "=" + value); old >= 0) {
        tree_.at(old).state = IdeaState::kPruned;
        tree_.at(old).note = "superseded by a re-test after " + tree_.at(win_id).key;
      }
      int nid = AddValueIdea(*kd, value, win_id, "reopen");
      IdeaNode& r = tree_.at(nid);
      r.prior_mean += 0.5 * rel;
      r.prior_note += (r.prior_note.empty() ? "" : "; ") + std::string("re-test after ") + tree_.at(win_id).key +
                      " (was " + Pct(std::expm1(rel)) + ")";
    }
  }
}

int Planner::AdoptForeign(const Observation& obs) {
  // A KEEP moves the incumbent, which Next() follows; failures to launch and accuracy
  // failures of another source say nothing reliable about one knob's value here.
  if (obs.verdict != Verdict::kRevert && obs.verdict != Verdict::kInconclusive && obs.verdict != Verdict::kScreenedOut) {
    return -1;
  }
  if (obs.candidate.delta.size() != 1) return -1;
  const auto& [knob, value] = *obs.candidate.delta.values().begin();
  auto b = beliefs_.find(knob);
  if (b == beliefs_.end() || b->second.current == value) return -1;
  for (IdeaNode& n : tree_.mutable_nodes()) {
    if (n.kind == IdeaKind::kValue && n.knob == knob && n.value == value && n.proposable()) {
      n.state = IdeaState::kProposed;
      n.order = ++proposals_;
      n.note = "measured by " + obs.candidate.idea;
      return n.id;
    }
  }
  return -1;
}

void Planner::Observe(const Observation& obs) {
  int id = FindProposed(obs);
  if (id < 0) {
    // Not ours (the warm replay, the kernel lane).
    if (!initialized_) {
      foreign_.push_back(obs);
      return;
    }
    id = AdoptForeign(obs);
    if (id < 0) return;
  } else {
    pending_ = -1;
    // The explorer learns from every measured configuration of this planner.
    if (tree_.at(id).origin == "explore") {
      explorer_.Observe(obs);
    } else {
      explorer_.Record(pending_full_, obs);
    }
  }
  // Copies: expanding the tree below may move its nodes.
  const IdeaNode snapshot = tree_.at(id);
  IdeaNode& n = tree_.at(id);
  n.verdict = obs.verdict;
  n.gain = obs.gain;
  double log_gain = std::log1p(std::max(obs.gain, -0.99));
  const Verdict v = obs.verdict;
  // A retry that launched explains the failure: the other retries of it are not needed.
  if (snapshot.origin == "retry" && Launched(v)) {
    LearnConflict(snapshot, obs);
    for (IdeaNode& r : tree_.mutable_nodes()) {
      if (r.id == id || r.parent != snapshot.parent || r.origin != "retry" || !r.proposable()) continue;
      r.state = IdeaState::kPruned;
      r.note = "not needed: " + snapshot.key + " launched";
    }
  }
  auto knobs_of = [&]() {
    std::vector<std::string> out;
    for (const auto& [k, val] : snapshot.delta.values()) out.push_back(k);
    return out;
  };
  switch (v) {
    case Verdict::kKeep:
      n.state = IdeaState::kKept;
      best_level_ += log_gain;
      if (snapshot.kind == IdeaKind::kValue) {
        double effect = IncumbentEffect(snapshot.knob) + log_gain;
        RecordEffect(snapshot.knob, snapshot.value, effect);
        Belief& b = beliefs_.at(snapshot.knob);
        b.current = snapshot.value;
        b.current_effect = effect;
        ExpandWin(id);
        ReopenInteractions(snapshot.knob, id);
      } else {
        Config resolved = Resolve(snapshot.delta);
        for (const auto& [k, val] : resolved.values()) {
          if (beliefs_.contains(k)) Rebase(k, val);
        }
        for (const auto& [k, val] : resolved.values()) ReopenInteractions(k, id);
      }
      break;
    case Verdict::kRevert:
    case Verdict::kInconclusive:
    case Verdict::kScreenedOut:
      n.state = v == Verdict::kInconclusive ? IdeaState::kInconclusive : IdeaState::kReverted;
      if (snapshot.kind == IdeaKind::kValue) {
        RecordEffect(snapshot.knob, snapshot.value, IncumbentEffect(snapshot.knob) + log_gain);
        // Measurements are noisy: another look (up to kMaxLooks per value and incumbent),
        // scored from the updated belief: it ranks low unless the looks so far were near
        // misses on a promising value.
        const auto& looks = beliefs_.at(snapshot.knob).effects.at(snapshot.value);
        if (static_cast<int>(looks.size()) < kMaxLooks && tree_.OpenWithKey(snapshot.key) < 0) {
          if (const KnobDomain* kd = domain_.Find(snapshot.knob)) {
            int rid = AddValueIdea(*kd, snapshot.value, id, "retest");
            tree_.at(rid).prior_mean = snapshot.prior_mean;
          }
        }
      } else {
        AttributeEffect(Resolve(snapshot.delta), log_gain);
      }
      break;
    case Verdict::kLaunchFailed:
    case Verdict::kAccuracyFailed: {
      const bool launch = v == Verdict::kLaunchFailed;
      if (launch && snapshot.kind == IdeaKind::kValue && ConfigurationExplains(obs.failure_kind) &&
          !obs.config.empty()) {
        failed_launches_.push_back(obs.config);
        // A retry reads the latest failures of its value: the oldest go past a bound.
        if (failed_launches_.size() > kMaxFailedLaunches) failed_launches_.erase(failed_launches_.begin());
      }
      n.state = IdeaState::kFailed;
      n.note = launch ? "launch failed" + (obs.failure_kind.empty() ? "" : ": " + obs.failure_kind)
                      : "accuracy gate failed";
      // An explored configuration's failure is the combination's; the tree's ideas of
      // its members keep their standing (the explorer scores the configuration).
      if (snapshot.origin == "explore") break;
      for (const std::string& k : knobs_of()) {
        auto it = beliefs_.find(k);
        if (it == beliefs_.end()) continue;
        (launch ? it->second.crashes : it->second.accuracy_failures)++;
        if (obs.failure_kind == "bad_flag" || obs.failure_kind == "unsupported") {
          // The engine does not know the flag: no value of it can work.
          it->second.pruned = true;
          for (IdeaNode& other : tree_.mutable_nodes()) {
            if (other.knob == k && other.proposable()) {
              other.state = IdeaState::kPruned;
              other.note = "the engine rejected " + k + " (" + obs.failure_kind + ")";
            }
          }
        }
      }
      // Tree nodes are added last: `n` refers into the tree.
      const bool engine_rejects = obs.failure_kind == "bad_flag" || obs.failure_kind == "unsupported";
      if (launch && !engine_rejects && snapshot.kind == IdeaKind::kValue) AddRetries(id);
      // The explaining value alone did not do it this time: the other retries.
      if (launch && !engine_rejects && snapshot.origin == "retry" && snapshot.parent >= 0) {
        AddRetries(snapshot.parent, /*all=*/true);
      }
      break;
    }
    case Verdict::kInvalid:
      n.state = IdeaState::kPruned;
      n.note = "invalid configuration";
      break;
    case Verdict::kPending:
    case Verdict::kSkippedBudget:
    case Verdict::kPatchFailed:
    case Verdict::kBuildFailed:
    case Verdict::kPatchRejected:
    case Verdict::kNotValidated:
      n.state = IdeaState::kOpen;  // not measured (budget): may come back
      n.order = 0;
      break;
  }
  Rescore();
}

std::string Planner::Save() const {
  json j;
  j["version"] = 1;
  j["initialized"] = initialized_;
  json foreign = json::array();
  for (const Observation& o : foreign_) {
    foreign.push_back({{"idea", o.candidate.idea}, {"delta", o.candidate.delta.values()},
                       {"verdict", std::string(VerdictName(o.verdict))}, {"gain", o.gain}, {"failure_kind", o.failure_kind}});
  }
  j["foreign"] = foreign;
  json dom = json::array();
  for (const SearchDomain::Saved& d : domain_.ToSaved()) {
    dom.push_back({{"knob", d.knob}, {"values", d.values}, {"fixed", d.fixed}});
  }
  j["domain"] = dom;
  j["diagnosis"] = {{"bottleneck", std::string(BottleneckName(diagnosis_.bottleneck))},
                    {"evidence", diagnosis_.evidence}};
  json beliefs = json::object();
  for (const auto& [k, b] : beliefs_) {
    beliefs[k] = {{"reference", b.reference}, {"effects", b.effects},   {"current", b.current},
                  {"current_effect", b.current_effect}, {"sum_sq", b.sum_sq}, {"n", b.n},
                  {"crashes", b.crashes}, {"accuracy_failures", b.accuracy_failures}, {"pruned", b.pruned}};
  }
  j["beliefs"] = beliefs;
  j["tree"] = json::parse(tree_.ToJson());
  j["best_level"] = best_level_;
  j["proposals"] = proposals_;
  j["pending"] = pending_;
  j["ctx"] = {{"concurrency", ctx_.concurrency}, {"cpus", ctx_.cpus}, {"cores", ctx_.cores}, {"noise", ctx_.noise}};
  j["explorer"] = explorer_.Save();
  j["pending_full"] = pending_full_.values();
  json failed = json::array();
  for (const Config& c : failed_launches_) failed.push_back(c.values());
  j["failed_launches"] = failed;
  json conflicts = json::array();
  for (const Config& c : conflicts_) conflicts.push_back(c.values());
  j["conflicts"] = conflicts;
  return j.dump();
}

Status Planner::Load(const std::string& saved) {
  if (saved.empty()) return Ok();
  if (saved.front() != '{') {
    // Another strategy's state (a session started with an older hone or another
    // strategy): start a fresh tree; measured configurations are still never repeated.
    stop_note_ = "";
    return Ok();
  }
  auto parsed = TryCatch(ErrorCode::kDataLoss, "planner state", [&]() -> Status {
    json j = json::parse(saved);
    if (j.value("version", 0) != 1) return DataLoss("planner state: unknown version");
    initialized_ = j.value("initialized", false);
    foreign_.clear();
    for (const json& o : j.value("foreign", json::array())) {
      Observation x;
      x.candidate.idea = o.value("idea", "");
      x.candidate.delta = ConfigOf(o.at("delta"));
      HONE_ASSIGN_OR_RETURN(x.verdict, ParseVerdict(o.value("verdict", "")));
      x.gain = o.value("gain", 0.0);
      x.failure_kind = o.value("failure_kind", "");
      foreign_.push_back(std::move(x));
    }
    if (!initialized_) return Ok();
    std::vector<SearchDomain::Saved> dom;
    for (const json& d : j.at("domain")) {
      dom.push_back({d.at("knob").get<std::string>(), d.at("values").get<std::vector<std::string>>(),
                       d.value("fixed", true)});
    }
    HONE_ASSIGN_OR_RETURN(domain_, SearchDomain::Restore(catalog_, dom));
    diagnosis_.bottleneck = ParseBottleneck(j.at("diagnosis").value("bottleneck", "unknown")).value_or(Bottleneck::kUnknown);
    diagnosis_.evidence = j.at("diagnosis").value("evidence", "");
    beliefs_.clear();
    for (const auto& [k, b] : j.at("beliefs").items()) {
      Belief x;
      x.reference = b.value("reference", "");
      x.effects = b.at("effects").get<std::map<std::string, std::vector<double>>>();
      x.current = b.value("current", "");
      x.current_effect = b.value("current_effect", 0.0);
      x.sum_sq = b.value("sum_sq", 0.0);
      x.n = b.value("n", 0);
      x.crashes = b.value("crashes", 0);
      x.accuracy_failures = b.value("accuracy_failures", 0);
      x.pruned = b.value("pruned", false);
      beliefs_[k] = std::move(x);
    }
    HONE_ASSIGN_OR_RETURN(tree_, IdeaTree::FromJson(j.at("tree").dump()));
    best_level_ = j.value("best_level", 0.0);
    proposals_ = j.value("proposals", 0);
    pending_ = j.value("pending", -1);
    ctx_.concurrency = j.at("ctx").value("concurrency", 1);
    ctx_.cpus = j.at("ctx").value("cpus", 1);
    ctx_.cores = j.at("ctx").value("cores", 0);
    ctx_.noise = j.at("ctx").value("noise", options_.default_noise);
    HONE_TRY(explorer_.Load(j.value("explorer", std::string())));
    pending_full_ = ConfigOf(j.value("pending_full", json::object()));
    failed_launches_.clear();
    for (const json& c : j.value("failed_launches", json::array())) failed_launches_.push_back(ConfigOf(c));
    conflicts_.clear();
    for (const json& c : j.value("conflicts", json::array())) conflicts_.push_back(ConfigOf(c));
    return Ok();
  });
  if (!parsed) return Fail(parsed.error());
  return *parsed;
}

std::string Planner::Describe() const {
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "planner (idea tree): %d ideas proposed: %d kept, %d reverted, %d inconclusive, %d failed; %d open, %d "
                "pruned; kept gains compound to %s over the start\n",
                proposals_, tree_.Count(IdeaState::kKept), tree_.Count(IdeaState::kReverted),
                tree_.Count(IdeaState::kInconclusive), tree_.Count(IdeaState::kFailed), tree_.Count(IdeaState::kOpen),
                tree_.Count(IdeaState::kPruned), Pct(std::expm1(best_level_)).c_str());
  std::string out = buf;
  out += "diagnosis: " + std::string(BottleneckName(diagnosis_.bottleneck)) +
         (diagnosis_.evidence.empty() ? "" : " (" + diagnosis_.evidence + ")");
  out += ctx_.headroom ? "; roofline headroom " + Num(*ctx_.headroom) : "; roofline headroom unknown";
  out += "\n";
  if (!stop_note_.empty()) out += "stopped: " + stop_note_ + "\n";
  for (const Config& c : conflicts_) {
    out += (GivenConflict(c) ? "launch conflict from the knowledge base: " : "learned launch conflict: ") + c.ToString() +
           " (never proposed again)\n";
  }
  out += tree_.Describe(3);
  return out;
}

Result<std::unique_ptr<Proposer>> MakeProposer(const std::string& strategy, const target::KnobCatalog& catalog,
                                               const Heuristics& heuristics, PlannerOptions options, uint64_t seed) {
  if (strategy == "planner") {
    options.seed = seed;
    return std::unique_ptr<Proposer>(new Planner(catalog, heuristics, std::move(options)));
  }
  if (strategy == "random") return std::unique_ptr<Proposer>(new RandomProposer(catalog, options.domain, seed));
  if (strategy == "grid") return std::unique_ptr<Proposer>(new GridProposer(catalog, options.domain, 0, seed));
  if (strategy == "tpe") return std::unique_ptr<Proposer>(new TpeProposer(catalog, options.domain, seed));
  return InvalidArgument("unknown search strategy '" + strategy + "' (planner, random, grid, tpe)");
}

}  // namespace hone::search
