// CatalogProposer: one knob change at a time, over the knob catalog's search values,
// in a fixed priority of categories (precision and attention first: the largest
// effects on CPU and GPU serving). Knob values that crashed are not proposed again;
// conflicting combinations are filtered through the catalog. The baseline against
// which the planner (planner.h) is compared.
#pragma once

#include <map>
#include <set>

#include "search/proposer.h"
#include "target/catalog.h"

namespace hone::search {

struct CatalogProposerOptions {
  std::vector<std::string> only;     // restrict to these knobs (empty: all searchable)
  std::vector<std::string> exclude;
  bool gpu = false;
};

class CatalogProposer final : public Proposer {
 public:
  CatalogProposer(const target::KnobCatalog& catalog, CatalogProposerOptions options);
  std::optional<Candidate> Next(const ProposalContext& ctx) override;
  void Observe(const Observation& obs) override;
  std::string Save() const override;
  Status Load(const std::string& saved) override;
  std::string Describe() const override;

  // The values worth trying for a knob in a context (search list or derived).
  static std::vector<std::string> ValuesFor(const target::Knob& knob, const ProposalContext& ctx);

 private:
  const target::KnobCatalog& catalog_;
  CatalogProposerOptions options_;
  std::set<std::string> proposed_;  // "knob=value" already handed out
  std::set<std::string> failed_;    // "knob=value" that failed to launch
  std::map<std::string, Verdict> outcomes_;  // idea -> verdict
};

// Category order used by the catalog proposer and as the planner's tie-break.
int CategoryPriority(const std::string& category);

}  // namespace hone::search
