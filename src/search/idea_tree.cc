#include "search/idea_tree.h"

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>

namespace hone::search {

using nlohmann::json;

namespace {

constexpr std::pair<IdeaState, const char*> kStates[] = {
    {IdeaState::kOpen, "open"},         {IdeaState::kProposed, "proposed"}, {IdeaState::kKept, "kept"},
    {IdeaState::kReverted, "reverted"}, {IdeaState::kInconclusive, "inconclusive"},
    {IdeaState::kFailed, "failed"},     {IdeaState::kPruned, "pruned"},
};
constexpr const char* kKinds[] = {"group", "value", "bundle"};

std::string Pct(double f) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%+.1f%%", f * 100);
  return buf;
}

}  // namespace

std::string_view IdeaStateName(IdeaState s) {
  for (const auto& [k, n] : kStates) {
    if (k == s) return n;
  }
  return "?";
}

int IdeaTree::Add(IdeaNode node, int parent) {
  node.id = static_cast<int>(nodes_.size());
  node.parent = parent;
  node.children.clear();
  nodes_.push_back(std::move(node));
  if (parent >= 0) at(parent).children.push_back(nodes_.back().id);
  return nodes_.back().id;
}

int IdeaTree::Group(const std::string& knob) const {
  for (const IdeaNode& n : nodes_) {
    if (n.kind == IdeaKind::kGroup && n.knob == knob) return n.id;
  }
  return -1;
}

int IdeaTree::OpenWithKey(const std::string& key) const {
  for (const IdeaNode& n : nodes_) {
    if (n.key == key && n.state == IdeaState::kOpen) return n.id;
  }
  return -1;
}

void IdeaTree::Reparent(int id, int new_parent) {
  IdeaNode& n = at(id);
  if (n.parent == new_parent || id == new_parent) return;
  if (n.parent >= 0) {
    auto& siblings = at(n.parent).children;
    siblings.erase(std::remove(siblings.begin(), siblings.end(), id), siblings.end());
  }
  n.parent = new_parent;
  if (new_parent >= 0) at(new_parent).children.push_back(id);
}

int IdeaTree::Count(IdeaState s) const {
  return static_cast<int>(std::count_if(nodes_.begin(), nodes_.end(),
                                        [s](const IdeaNode& n) { return n.kind != IdeaKind::kGroup && n.state == s; }));
}

std::string IdeaTree::ToJson() const {
  json arr = json::array();
  for (const IdeaNode& n : nodes_) {
    arr.push_back({{"id", n.id},
                   {"parent", n.parent},
                   {"children", n.children},
                   {"kind", kKinds[static_cast<int>(n.kind)]},
                   {"key", n.key},
                   {"knob", n.knob},
                   {"value", n.value},
                   {"title", n.title},
                   {"delta", n.delta.values()},
                   {"category", n.category},
                   {"origin", n.origin},
                   {"state", std::string(IdeaStateName(n.state))},
                   {"prior_mean", n.prior_mean},
                   {"kb_failure", n.kb_failure},
                   {"bonus", n.bonus},
                   {"prior_note", n.prior_note},
                   {"expected_gain", n.expected_gain},
                   {"score", n.score},
                   {"why", n.why},
                   {"order", n.order},
                   {"verdict", n.verdict ? std::string(VerdictName(*n.verdict)) : std::string()},
                   {"gain", n.gain},
                   {"note", n.note}});
  }
  return arr.dump();
}

Result<IdeaTree> IdeaTree::FromJson(const std::string& text) {
  auto parsed = TryCatch(ErrorCode::kDataLoss, "idea tree", [&]() -> Result<IdeaTree> {
    IdeaTree t;
    for (const json& o : json::parse(text)) {
      IdeaNode n;
      n.id = o.at("id").get<int>();
      n.parent = o.at("parent").get<int>();
      n.children = o.at("children").get<std::vector<int>>();
      std::string kind = o.at("kind").get<std::string>();
      auto k = std::find(std::begin(kKinds), std::end(kKinds), kind);
      if (k == std::end(kKinds)) return DataLoss("idea tree: unknown node kind '" + kind + "'");
      n.kind = static_cast<IdeaKind>(k - std::begin(kKinds));
      n.key = o.at("key").get<std::string>();
      n.knob = o.value("knob", "");
      n.value = o.value("value", "");
      n.title = o.value("title", "");
      for (const auto& [kk, v] : o.at("delta").items()) n.delta.Set(kk, v.get<std::string>());
      n.category = o.value("category", "");
      n.origin = o.value("origin", "");
      std::string state = o.at("state").get<std::string>();
      bool found = false;
      for (const auto& [s, name] : kStates) {
        if (state == name) {
          n.state = s;
          found = true;
        }
      }
      if (!found) return DataLoss("idea tree: unknown state '" + state + "'");
      n.prior_mean = o.value("prior_mean", 0.0);
      n.kb_failure = o.value("kb_failure", 0.0);
      n.bonus = o.value("bonus", 1.0);
      n.prior_note = o.value("prior_note", "");
      n.expected_gain = o.value("expected_gain", 0.0);
      n.score = o.value("score", 0.0);
      n.why = o.value("why", "");
      n.order = o.value("order", 0);
      if (std::string v = o.value("verdict", ""); !v.empty()) {
        auto verdict = ParseVerdict(v);
        if (!verdict) return DataLoss("idea tree: " + verdict.error().message);
        n.verdict = *verdict;
      }
      n.gain = o.value("gain", 0.0);
      n.note = o.value("note", "");
      if (n.id != static_cast<int>(t.nodes_.size())) return DataLoss("idea tree: node ids out of order");
      t.nodes_.push_back(std::move(n));
    }
    for (const IdeaNode& n : t.nodes_) {
      auto bad = [&](int id) { return id < -1 || id >= static_cast<int>(t.nodes_.size()); };
      if (bad(n.parent)) return DataLoss("idea tree: node " + std::to_string(n.id) + " has a bad parent");
      for (int c : n.children) {
        if (c < 0 || bad(c)) return DataLoss("idea tree: node " + std::to_string(n.id) + " has a bad child");
      }
    }
    return t;
  });
  if (!parsed) return Fail(parsed.error());
  return *parsed;
}

void IdeaTree::DescribeNode(int id, int depth, int open_per_group, std::string& out) const {
  const IdeaNode& n = at(id);
  std::string indent(static_cast<size_t>(2 * depth), ' ');
  char buf[512];
  if (n.kind == IdeaKind::kGroup) {
    std::snprintf(buf, sizeof buf, "%s%s (%s)\n", indent.c_str(), n.title.c_str(), n.category.c_str());
  } else if (n.state == IdeaState::kOpen) {
    std::snprintf(buf, sizeof buf, "%s[open      exp %s score %.4f] %s%s\n", indent.c_str(),
                  Pct(n.expected_gain).c_str(), n.score, n.key.c_str(),
                  n.origin == "catalog" ? "" : (" (" + n.origin + ")").c_str());
  } else if (n.order > 0) {
    std::snprintf(buf, sizeof buf, "%s[#%-3d %-8s %s] %s%s%s\n", indent.c_str(), n.order,
                  std::string(n.verdict ? VerdictName(*n.verdict) : IdeaStateName(n.state)).c_str(),
                  Pct(n.gain).c_str(), n.key.c_str(), n.origin == "catalog" ? "" : (" (" + n.origin + ")").c_str(),
                  n.note.empty() ? "" : (": " + n.note).c_str());
  } else {
    std::snprintf(buf, sizeof buf, "%s[%-12s] %s%s\n", indent.c_str(), std::string(IdeaStateName(n.state)).c_str(),
                  n.key.c_str(), n.note.empty() ? "" : (": " + n.note).c_str());
  }
  out += buf;
  // Proposed and pruned children always; the best open ones up to the limit.
  std::vector<int> open, rest;
  for (int c : n.children) (at(c).state == IdeaState::kOpen && at(c).kind != IdeaKind::kGroup ? open : rest).push_back(c);
  std::stable_sort(rest.begin(), rest.end(), [&](int a, int b) {
    int oa = at(a).order == 0 ? 1 << 30 : at(a).order;
    int ob = at(b).order == 0 ? 1 << 30 : at(b).order;
    return oa < ob;
  });
  std::stable_sort(open.begin(), open.end(), [&](int a, int b) { return at(a).score > at(b).score; });
  for (int c : rest) DescribeNode(c, depth + 1, open_per_group, out);
  for (size_t i = 0; i < open.size(); ++i) {
    if (static_cast<int>(i) >= open_per_group) {
      out += indent + "    ... " + std::to_string(open.size() - i) + " more open\n";
      break;
    }
    DescribeNode(open[i], depth + 1, open_per_group, out);
  }
}

std::string IdeaTree::Describe(int open_per_group) const {
  std::string out;
  std::vector<int> roots;
  for (const IdeaNode& n : nodes_) {
    if (n.parent < 0) roots.push_back(n.id);
  }
  // Groups with activity first, then by their best open score.
  auto activity = [&](int id) {
    int first = 1 << 30;
    std::vector<int> stack{id};
    while (!stack.empty()) {
      int x = stack.back();
      stack.pop_back();
      if (at(x).order > 0) first = std::min(first, at(x).order);
      for (int c : at(x).children) stack.push_back(c);
    }
    return first;
  };
  std::stable_sort(roots.begin(), roots.end(), [&](int a, int b) {
    int fa = activity(a), fb = activity(b);
    if (fa != fb) return fa < fb;
    return at(a).score > at(b).score;
  });
  for (int r : roots) DescribeNode(r, 0, open_per_group, out);
  return out;
}

}  // namespace hone::search
