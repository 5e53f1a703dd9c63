// Specialist: an ephemeral engineer that writes one source diff for the policy gate.
//
// Run() creates the specialist's own git worktree of the target's source tree at the
// base commit (patch::Worktree, under the task's work_dir, never touching the live
// tree), lets the model work, takes the result as a unified diff against the base,
// and removes the worktree again. Two modes, picked by the backend's kind:
//   - a coding-agent CLI (claude -p, codex exec) runs with the worktree as its working
//     directory and edits files there; the diff is `git diff` of everything it
//     changed (added files included);
//   - a chat backend (OpenAI-compatible, Anthropic) is shown the files the task names
//     and must reply with a diff (specialist.schema.json) that `git apply --check`
//     accepts in the worktree; one that does not is a rejection, re-asked.
// The result carries the patch facts the gate judges (patch::Summarize) and an
// author id ("specialist#2") that is never a critic's. Numbers in the summary are
// claims: they are cut out (StripClaims) and listed separately. A diff that contains
// a registered credential is refused. The specialist never applies, builds, measures
// or merges anything: the gate and the patch executor do.
//
// Not thread-safe; the client must outlive it.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "agent/client.h"
#include "agent/settings.h"
#include "policy/action.h"
#include "policy/rules.h"

namespace hone::agent {

struct SpecialistTask {
  std::string id;                      // proposal id, [A-Za-z0-9._-]{1,64}
  std::string title;                   // one line
  std::string goal;                    // what to change and why
  std::string context;                 // workload, hardware, profile summary
  std::string target = "llama.cpp";    // selects the allowed-file rule
  std::filesystem::path repo;          // the live source tree (read only)
  std::string base = "HEAD";           // commit-ish to start from (the accepted line)
  std::filesystem::path work_dir;      // the worktree goes under here (outside repo)
  std::vector<std::string> files;      // chat mode: repository-relative files to show
  size_t max_file_bytes = 48 * 1024;   // chat mode: per file
};

struct SpecialistResult {
  std::string proposal_id;
  std::string author;    // "specialist#1"
  std::string title;
  std::string base_commit;
  std::string diff;      // unified diff, a/ b/ prefixes
  std::string summary;   // with numeric claims cut out
  std::vector<std::string> claims;  // the cut-out claims ("30% faster")
  policy::PatchFacts facts;
};

class Specialist {
 public:
  // `rules` (optional) picks the strip level the gate's allowed-file rule accepts.
  Specialist(LlmClient& client, const AgentData& data, const policy::Rules* rules = nullptr)
      : client_(client), data_(data), rules_(rules) {}
  Result<SpecialistResult> Run(const SpecialistTask& task);

 private:
  LlmClient& client_;
  const AgentData& data_;
  const policy::Rules* rules_;
  int runs_ = 0;
};

// The gate action asking to try the diff (kApplyPatch by role "specialist").
policy::Action ApplyAction(const SpecialistResult& result);
// `text` with numeric performance claims ("2x", "30%", "+12.5 %", "10x faster")
// replaced by "[claim]"; the removed pieces are appended to `claims`.
std::string StripClaims(const std::string& text, std::vector<std::string>* claims);

}  // namespace hone::agent
