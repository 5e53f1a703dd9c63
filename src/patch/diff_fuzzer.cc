// libFuzzer entry point for the diff parser (built with clang; see CMakeLists.txt).
// Any input must parse or fail with an Error, never crash, hang or trip a sanitizer,
// and a successful parse must satisfy the invariants the validator relies on.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "patch/diff.h"
#include "policy/paths.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto parsed = hone::patch::ParseDiff(text);
  if (!parsed) {
    if (parsed.error().message.empty()) std::abort();
    return 0;
  }
  const hone::patch::Diff& d = *parsed;
  if (d.files.empty() || d.bytes != size) std::abort();
  int added = 0;
  int removed = 0;
  for (const hone::patch::FileDiff& f : d.files) {
    added += f.added;
    removed += f.removed;
    if (f.added < 0 || f.removed < 0) std::abort();
    if (f.hunks.empty() && !f.git) std::abort();  // plain ---/+++ files always carry a hunk
    for (const auto& h : f.hunks) {
      if (h.old_count < 0 || h.new_count < 0 || (h.old_count == 0 && h.new_count == 0)) std::abort();
    }
    for (const std::string& n : f.prefixed_names) {
      (void)hone::policy::CheckRepoPath(n);
      for (int strip = 0; strip < 3; ++strip) {
        auto s = hone::patch::StripPath(n, strip);
        if (s && s->empty()) std::abort();
      }
      (void)hone::policy::GlobMatch("tools/server/**/*.{c,cc,cpp,h}", n);
    }
    for (const std::string& n : f.root_names) (void)hone::policy::CheckRepoPath(n);
  }
  if (added != d.added || removed != d.removed) std::abort();
  (void)hone::patch::DiffStat(d);
  return 0;
}
