// What the accuracy gate compares and how far it trusts the comparison: the probe
// prompts' source, the method, the compared positions, the thresholds in force and
// the spread measured between the stock and a restart of the stock (A/A). Plain
// values: the executor fills them, the session keeps them in state.json, the report
// prints them.
#pragma once

#include <optional>
#include <string>

namespace hone::measure {

struct AccuracyGateInfo {
  bool prepared = false;
  std::string probes;           // where the probe prompts came from
  std::string method;           // how a candidate's outputs are compared
  int positions = 0;            // teacher-forced positions compared per check
  // Thresholds in force (the spec's, widened to the A/A spread when the stock
  // itself is nondeterministic).
  double min_agreement = 0;
  double max_kld = 0;
  double max_ppl_delta = 0;     // |PPL(candidate)/PPL(stock) - 1|, llama-perplexity only
  bool kld_tool = false;        // llama-perplexity gives the full-vocabulary KLD
  // A/A: the stock against its own reference after a restart.
  bool aa_ran = false;
  double aa_agreement = 1;
  int aa_positions = 0;
  std::optional<double> aa_kl;  // top-k estimate
  bool nondeterministic = false;
  std::string note;             // why the A/A did not run, or how the thresholds were widened
};

}  // namespace hone::measure
