// IdeaTree: the planner's ideas as a tree, with their scores and outcomes.
//
// Roots are knob groups ("tune ubatch_size") and multi-knob bundles; a group's
// children are value ideas ("ubatch_size=256"); a value idea that won gets children
// that refine it (neighbouring values: "double down"), and a win on one knob re-opens
// earlier rejected ideas of interacting knobs as children of the win ("re-test
// ubatch_size=128 now that weights=q4_0"). Every node keeps its last score and why, and
// once proposed its order, verdict and measured gain, so the tree is the search's
// audit trail: saved in the session state (ToJson/FromJson) and printed in the report
// (Describe). A plain value type; not thread-safe.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/config.h"
#include "core/error.h"
#include "core/verdict.h"

namespace hone::search {

enum class IdeaState { kOpen, kProposed, kKept, kReverted, kInconclusive, kFailed, kPruned };
std::string_view IdeaStateName(IdeaState s);

enum class IdeaKind { kGroup, kValue, kBundle };

struct IdeaNode {
  int id = 0;
  int parent = -1;  // -1: a root
  std::vector<int> children;
  IdeaKind kind = IdeaKind::kValue;
  std::string key;    // stable id: "knob:ubatch_size", "ubatch_size=256", "bundle:<title>"
  std::string knob;   // group and value nodes
  std::string value;  // value nodes
  std::string title;
  Config delta;       // value and bundle nodes (bundle values may be expressions)
  std::string category;
  std::string origin;  // catalog | expansion | reopen | bundle
  IdeaState state = IdeaState::kOpen;
  // Beliefs set when the idea is made.
  double prior_mean = 0;     // expected effect vs the knob's current value, log(ratio)
  double kb_failure = 0;     // confidence of a knowledge-base failure of this value
  double bonus = 1;          // > 1 for refinements of a win (double down)
  std::string prior_note;    // "hint: concurrency", "kb: +12% (conf 0.8)"
  // The last rescoring.
  double expected_gain = 0;  // relative (0.05 = +5%)
  double score = 0;
  std::string why;
  // Outcome.
  int order = 0;             // 1-based proposal order; 0 = never proposed
  std::optional<Verdict> verdict;  // the measured outcome, once observed
  double gain = 0;
  std::string note;          // why pruned / failed
  bool proposable() const { return kind != IdeaKind::kGroup && state == IdeaState::kOpen; }
};

class IdeaTree {
 public:
  // Adds a node under `parent` (-1: a root) and returns its id.
  int Add(IdeaNode node, int parent);
  IdeaNode& at(int id) { return nodes_.at(static_cast<size_t>(id)); }
  const IdeaNode& at(int id) const { return nodes_.at(static_cast<size_t>(id)); }
  const std::vector<IdeaNode>& nodes() const { return nodes_; }
  std::vector<IdeaNode>& mutable_nodes() { return nodes_; }
  size_t size() const { return nodes_.size(); }
  // The group node of a knob, or -1.
  int Group(const std::string& knob) const;
  // The open node with this key, or -1.
  int OpenWithKey(const std::string& key) const;
  // Moves a node (and its subtree) under another node.
  void Reparent(int id, int new_parent);
  // Counts by state (value and bundle nodes only).
  int Count(IdeaState s) const;

  std::string ToJson() const;
  static Result<IdeaTree> FromJson(const std::string& text);
  // The tree as indented text: every proposed idea and the best `open_per_group` open
  // ones of each group, with scores, verdicts and gains.
  std::string Describe(int open_per_group = 3) const;

 private:
  void DescribeNode(int id, int depth, int open_per_group, std::string& out) const;
  std::vector<IdeaNode> nodes_;
};

}  // namespace hone::search
