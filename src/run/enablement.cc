#include "run/enablement.h"

#include "spec/yaml.h"

namespace hone::run {

Result<EnablementLadder> EnablementLadder::Load(const std::string& path, const std::string& framework) {
  HONE_ASSIGN_OR_RETURN(spec::Field root, spec::Field::LoadFile(path));
  HONE_TRY(root.RequireMap());
  EnablementLadder ladder;
  spec::Field ladders = root[framework];
  if (!ladders.defined()) return ladder;  // no ladder for this framework: nothing to try
  HONE_TRY(ladders.RequireMap());
  for (const auto& [kind, list] : ladders.Entries()) {
    std::vector<Config>& rungs = ladder.rungs_[kind];
    for (const spec::Field& rung : list.Items()) {
      HONE_TRY(rung.RequireMap());
      Config c;
      for (const auto& [knob, value] : rung.Entries()) {
        HONE_ASSIGN_OR_RETURN(std::string v, value.Str());
        c.Set(knob, v);
      }
      rungs.push_back(std::move(c));
    }
  }
  return ladder;
}

std::vector<Config> EnablementLadder::Rungs(const std::string& failure_kind) const {
  auto it = rungs_.find(failure_kind);
  return it == rungs_.end() ? std::vector<Config>{} : it->second;
}

std::function<bool(const Config& delta)> RiskyHook(const target::KnobCatalog& catalog) {
  return [&catalog](const Config& delta) { return catalog.ChangesNumerics(delta); };
}

}  // namespace hone::run
