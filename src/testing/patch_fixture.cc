#include "testing/patch_fixture.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <vector>

#include "core/strings.h"
#include "patch/validate.h"
#include "sys/process.h"
#include "testing/test_util.h"

namespace hone::patch::testing {

constexpr char kCommonH[] =
    "#pragma once\n"
    "// Defaults shared by the server and the tools.\n"
    "inline int DefaultParallel() {\n"
    "  // auto: four slots\n"
    "  return 4;\n"
    "}\n"
    "inline int DefaultBatch() { return 2048; }\n";

constexpr char kServerCpp[] =
    "#include <cstdio>\n"
    "\n"
    "#include \"common.h\"\n"
    "\n"
    "int main() {\n"
    "  std::printf(\"n_parallel=%d\\n\", DefaultParallel());\n"
    "  return 0;\n"
    "}\n";

Result<Fixture> Fixture::Create() {
  Fixture f;
  HONE_ASSIGN_OR_RETURN(f.dir, sys::TempDir::Create("hone-patch-fixture"));
  f.live = f.dir->path() / "live";
  f.work_root = f.dir->path() / "work";
  f.outside = f.dir->path() / "outside";
  HONE_TRY(sys::EnsureDir(f.outside));
  HONE_TRY(sys::WriteFileAtomic(f.outside / "secret.txt", "do not touch\n"));
  for (const char* d : {"tools/server", "common", "src", "scripts"}) HONE_TRY(sys::EnsureDir(f.live / d));
  HONE_TRY(sys::WriteFileAtomic(f.live / "common/common.h", kCommonH));
  HONE_TRY(sys::WriteFileAtomic(f.live / "tools/server/server.cpp", kServerCpp));
  HONE_TRY(sys::WriteFileAtomic(f.live / "src/llama.cpp",
                                "// the library (unused by the fixture build)\nint llama_x = 1;\n"));
  HONE_TRY(sys::WriteFileAtomic(f.live / "CMakeLists.txt", "# not used by the fixture build\nproject(fixture)\n"));
  HONE_TRY(sys::WriteFileAtomic(f.live / "scripts/setup.sh", "#!/bin/sh\necho setup\n"));
  HONE_TRY(sys::WriteFileAtomic(f.live / "data.bin", std::string("\x00\x01\x02\x03", 4)));
  // Symlinks committed in the tree that point out of it.
  if (symlink((f.outside / "secret.txt").c_str(), (f.live / "common/escape.h").c_str()) != 0 ||
      symlink("../../outside", (f.live / "common/outside").c_str()) != 0) {
    return Internal("symlink failed");
  }
  std::string script =
      "find . -type f -exec chmod 644 {} + && git init -q -b main . && git add -A && "
      "git -c user.name=fixture -c user.email=f@x commit -q -m 'fixture: initial tree'";
  sys::ProcessSpec spec{.argv = {"sh", "-c", script}, .cwd = f.live.string()};
  spec.unset_env = {"GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE"};
  HONE_ASSIGN_OR_RETURN(auto out, sys::RunCommand(spec, std::chrono::seconds(60)));
  if (!out.status.success()) return Internal("fixture git init failed: " + out.output);
  return f;
}

BuildRecipe Fixture::Recipe() const {
  BuildRecipe r;
  r.name = "fixture llama-server (g++)";
  r.build = {{"mkdir", "-p", "{build}/bin"},
             {"g++", "-std=c++17", "-O0", "-I{src}/common", "-o", "{build}/bin/llama-server",
              "{src}/tools/server/server.cpp"}};
  r.artifacts = {"bin/llama-server"};
  r.timeout = std::chrono::seconds(120);
  return r;
}

ExecutorOptions Fixture::Options() const {
  ExecutorOptions o;
  o.repo = live;
  o.work_root = work_root;
  o.target = "llama.cpp";
  o.recipe = Recipe();
  o.jobs = 1;
  return o;
}

std::string Sh(const fs::path& dir, const std::string& script) {
  sys::ProcessSpec spec{.argv = {"sh", "-c", script}, .cwd = dir.string()};
  spec.env = {{"GIT_CONFIG_NOSYSTEM", "1"}, {"GIT_CONFIG_GLOBAL", "/dev/null"}, {"LC_ALL", "C"}};
  auto out = sys::RunCommand(spec, std::chrono::seconds(60));
  EXPECT_TRUE(out && out->status.success()) << script << ": " << (out ? out->output : out.error().ToString());
  return out ? out->output : "";
}

std::string WalkHash(const fs::path& root) {
  std::vector<std::string> entries;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(root, ec); it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    if (ec) break;
    fs::path rel = fs::relative(it->path(), root);
    if (*rel.begin() == ".git") {
      if (it->is_directory()) it.disable_recursion_pending();
      continue;
    }
    struct stat st;
    if (lstat(it->path().c_str(), &st) != 0) continue;
    std::string e = rel.string() + " " + std::to_string(st.st_mode);
    if (S_ISLNK(st.st_mode)) {
      e += " -> " + fs::read_symlink(it->path(), ec).string();
      it.disable_recursion_pending();
    } else if (S_ISREG(st.st_mode)) {
      e += " " + sys::Sha256File(it->path()).value_or("?");
    }
    entries.push_back(e);
  }
  std::sort(entries.begin(), entries.end());
  return sys::Sha256Hex(Join(entries, "\n"));
}

MeasureFn ExpectParallel(int want) {
  return [want](const BuiltTree& built) -> Result<Measurement> {
    sys::ProcessSpec spec{.argv = {(built.build_dir / "bin/llama-server").string()}};
    HONE_ASSIGN_OR_RETURN(auto out, sys::RunCommand(spec, std::chrono::seconds(10)));
    std::string got(Trim(out.output));
    std::string expect = "n_parallel=" + std::to_string(want);
    if (got == expect) return Measurement{Verdict::kKeep, "server prints " + got};
    return Measurement{Verdict::kRevert, "server prints " + got + ", not " + expect};
  };
}

policy::PolicyDecision Approve(policy::Gate& gate, const Proposal& p, const std::string& target, bool sign_off) {
  auto facts = Summarize(p.diff, target, &gate.rules());
  policy::Action a;
  a.kind = policy::ActionKind::kApplyPatch;
  a.role = "specialist";
  a.actor = p.author.empty() ? "specialist#1" : p.author;
  a.subject = p.id;
  if (facts) {
    a.patch = *facts;
  } else {
    a.patch.target = target;
    a.patch.diff_sha256 = sys::Sha256Hex(p.diff);
    a.patch.files = {"tools/server/server.cpp"};  // the proposer's (false) claim
    a.patch.diff_bytes = p.diff.size();
  }
  policy::PolicyDecision d = gate.Decide(a);
  if (sign_off) {
    gate.RecordReview("critic", policy::CriticReview{p.id, sys::Sha256Hex(p.diff), "critic#1",
                                                     policy::CriticVerdict::kApprove, "ok"});
  }
  return d;
}

std::unique_ptr<policy::Gate> ShippedGate() {
  auto g = policy::Gate::Load((hone::testing::SourceDir() / "data/policy/rules.yaml").string());
  EXPECT_TRUE(g) << (g ? "" : g.error().ToString());
  return g ? std::move(*g) : nullptr;
}

std::string ParallelDiff(int to) {
  return "diff --git a/common/common.h b/common/common.h\n"
         "--- a/common/common.h\n"
         "+++ b/common/common.h\n"
         "@@ -2,6 +2,6 @@\n"
         " // Defaults shared by the server and the tools.\n"
         " inline int DefaultParallel() {\n"
         "   // auto: four slots\n"
         "-  return 4;\n"
         "+  return " +
         std::to_string(to) +
         ";\n"
         " }\n"
         " inline int DefaultBatch() { return 2048; }\n";
}

}  // namespace hone::patch::testing
