// Random search and grid search: the baselines the planner is measured against
// (search/compare.h), and the `search.strategy: random|grid` choices of a session.
//
// Both search the same space as the planner (domain.h: the catalog's searchable knobs
// and values, or a surface's axes), each knob's options being its domain values plus
// its stock value. RandomProposer draws whole configurations uniformly, never one
// already measured. GridProposer walks a grid in a seeded random order; with a trial
// budget smaller than the full grid it walks a coarse grid: as many values per knob as
// fit the budget (evenly spread, ends included; one value = the stock value), the
// counts balanced over knobs. Candidates are whole configurations expressed as deltas
// on the incumbent. Not thread-safe.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "core/rng.h"
#include "search/domain.h"
#include "search/proposer.h"
#include "target/catalog.h"

namespace hone::search {

class RandomProposer final : public Proposer {
 public:
  RandomProposer(const target::KnobCatalog& catalog, DomainOptions options, uint64_t seed);
  std::optional<Candidate> Next(const ProposalContext& ctx) override;
  void Observe(const Observation& obs) override;
  std::string Save() const override;
  Status Load(const std::string& saved) override;
  std::string Describe() const override;

 private:
  const target::KnobCatalog& catalog_;
  DomainOptions options_;
  uint64_t seed_;
  Rng rng_;
  std::set<std::string> proposed_;  // full configurations handed out
  int keeps_ = 0;
  int observed_ = 0;
};

class GridProposer final : public Proposer {
 public:
  // budget 0: the full grid.
  GridProposer(const target::KnobCatalog& catalog, DomainOptions options, int budget, uint64_t seed);
  std::optional<Candidate> Next(const ProposalContext& ctx) override;
  void Observe(const Observation& obs) override;
  std::string Save() const override;
  Status Load(const std::string& saved) override;
  std::string Describe() const override;

  // "knob{v1,v2} knob2{...}" once the grid is built (the first Next()).
  const std::string& axes_text() const { return axes_text_; }
  // The grid's values per knob for a budget (exposed for tests).
  static std::vector<std::vector<std::string>> CoarseAxes(const std::vector<std::vector<std::string>>& options,
                                                          const std::vector<std::string>& stock, int budget);

 private:
  const target::KnobCatalog& catalog_;
  DomainOptions options_;
  int budget_;
  uint64_t seed_;
  bool built_ = false;
  std::vector<Config> order_;
  size_t next_ = 0;
  int keeps_ = 0;
  int observed_ = 0;
  std::string axes_text_;
};

// Every knob's options for random and grid search: domain values plus the stock value
// (when legal). Knob names come back in `knobs`, values ordered as in the domain.
struct KnobOptions {
  std::vector<std::string> knobs;
  std::vector<std::vector<std::string>> values;
  std::vector<std::string> stock;
};
Result<KnobOptions> BuildKnobOptions(const target::KnobCatalog& catalog, const DomainOptions& options,
                                     const ProposalContext& ctx);

}  // namespace hone::search
