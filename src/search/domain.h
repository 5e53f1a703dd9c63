// SearchDomain: which knobs a search may change and which values it tries, shared by
// the planner, random search and grid search so that they search the same space.
//
// From the catalog: every searchable knob that applies to the device (cpu/gpu),
// restricted by `only`/`exclude`, with its catalog search values or values derived
// from the context (threads around the CPU count, slots around the concurrency,
// powers of two around a numeric default). `fixed` replaces all of that with exact
// knobs and values (a response surface's axes). Numeric knobs are those whose values
// all parse as numbers; their values are kept in ascending order. A plain value type.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "search/proposer.h"
#include "target/catalog.h"

namespace hone::search {

struct DomainOptions {
  std::vector<std::string> only;     // restrict to these knobs (empty: all searchable)
  std::vector<std::string> exclude;
  bool gpu = false;
  // Exactly these knobs and values (in this order); nothing is derived.
  std::vector<std::pair<std::string, std::vector<std::string>>> fixed;
};

struct KnobDomain {
  const target::Knob* knob = nullptr;
  std::vector<std::string> values;  // legal values, ascending for numeric knobs
  bool numeric = false;
  bool fixed = false;               // values may not be extended (a surface's axis)
};

class SearchDomain {
 public:
  // Knobs the catalog does not know are skipped (`fixed` names are checked by Build).
  static Result<SearchDomain> Build(const target::KnobCatalog& catalog, const DomainOptions& options,
                                    const ProposalContext& ctx);
  // A domain saved as (knob, values, fixed) triples (a planner's state); unknown knobs
  // and illegal values are errors.
  struct Saved {
    std::string knob;
    std::vector<std::string> values;
    bool fixed = false;
  };
  static Result<SearchDomain> Restore(const target::KnobCatalog& catalog, const std::vector<Saved>& saved);
  std::vector<Saved> ToSaved() const;

  const std::vector<KnobDomain>& knobs() const { return knobs_; }
  const KnobDomain* Find(const std::string& knob) const;
  // Adds values to a knob (a refinement between measured values); keeps numeric order.
  void Extend(const std::string& knob, const std::vector<std::string>& values);

 private:
  static void Normalize(KnobDomain& kd);
  std::vector<KnobDomain> knobs_;
};

// The values worth trying for a knob in a context (catalog search list or derived).
std::vector<std::string> DeriveValues(const target::Knob& knob, const ProposalContext& ctx);
// Numeric value of a knob value text (nullopt for "auto", "q8_0", ...).
std::optional<double> NumericValue(const std::string& value);
// Canonical text of a number for a knob (integers without a decimal point).
std::string FormatValue(const target::Knob& knob, double value);

}  // namespace hone::search
