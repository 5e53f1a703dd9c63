#include "agent/specialist.h"

#include <regex>
#include <sstream>

#include "agent/text.h"
#include "core/strings.h"
#include "patch/git.h"
#include "patch/validate.h"
#include "sys/files.h"

namespace hone::agent {

using json = nlohmann::json;

std::string StripClaims(const std::string& text, std::vector<std::string>* claims) {
  static const std::regex kClaim(R"([+\-~]?\d+(\.\d+)?\s*(%|x\b|×|times\b)(\s*(faster|speed-?up|gain|improvement))?)",
                                 std::regex::icase);
  std::string out;
  auto begin = std::sregex_iterator(text.begin(), text.end(), kClaim);
  size_t last = 0;
  for (auto it = begin; it != std::sregex_iterator(); ++it) {
    out += text.substr(last, static_cast<size_t>(it->position()) - last) + "[claim]";
    if (claims) claims->push_back(it->str());
    last = static_cast<size_t>(it->position() + it->length());
  }
  out += text.substr(last);
  return out;
}

policy::Action ApplyAction(const SpecialistResult& r) {
  policy::Action a;
  a.kind = policy::ActionKind::kApplyPatch;
  a.role = "specialist";
  a.actor = r.author;
  a.subject = r.proposal_id;
  a.value = r.title;
  a.patch = r.facts;
  return a;
}

namespace {

bool ValidId(const std::string& id) {
  if (id.empty() || id.size() > 64) return false;
  for (char c : id) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-')) return false;
  }
  return true;
}

// Every change in the worktree (committed or not, new files included) against `base`.
Result<std::string> DiffAgainst(const std::filesystem::path& tree, const std::string& base) {
  HONE_ASSIGN_OR_RETURN(auto add, patch::RunGit(tree, {"add", "-A"}));
  if (!add.status.success()) return FailedPrecondition("git add -A failed in the specialist's worktree");
  HONE_ASSIGN_OR_RETURN(auto diff, patch::RunGit(tree, {"diff", "--cached", "--no-color", "--no-ext-diff",
                                                        "--no-renames", "--src-prefix=a/", "--dst-prefix=b/", base}));
  if (!diff.status.success()) return FailedPrecondition("git diff failed in the specialist's worktree");
  return diff.output;
}

Result<std::string> CheckApplies(const std::filesystem::path& tree, const std::string& diff) {
  HONE_ASSIGN_OR_RETURN(auto scratch, sys::TempDir::Create("hone-specialist-diff"));
  std::filesystem::path file = scratch->path() / "proposal.diff";
  HONE_TRY(sys::WriteFileAtomic(file, diff));
  HONE_ASSIGN_OR_RETURN(auto check, patch::RunGit(tree, {"apply", "--check", file.string()}));
  if (check.status.success()) return std::string();
  return "git apply --check failed: " + std::string(Trim(LastLines(check.output, 3)));
}

}  // namespace

Result<SpecialistResult> Specialist::Run(const SpecialistTask& task) {
  if (!ValidId(task.id)) return InvalidArgument("specialist task id must match [A-Za-z0-9._-]{1,64}: '" + task.id + "'");
  if (task.work_dir.empty() || task.repo.empty()) return InvalidArgument("specialist task needs repo and work_dir");
  ++runs_;
  SpecialistResult r;
  r.proposal_id = task.id;
  r.author = "specialist#" + std::to_string(runs_);
  r.title = task.title.empty() ? task.id : task.title;
  HONE_ASSIGN_OR_RETURN(r.base_commit, patch::GitOut(task.repo, {"rev-parse", "--verify", task.base + "^{commit}"}));
  HONE_TRY(sys::EnsureDir(task.work_dir / task.id));
  HONE_ASSIGN_OR_RETURN(auto tree, patch::Worktree::Create(task.repo, task.work_dir / task.id / "worktree",
                                                           "hone-specialist/" + task.id, r.base_commit));
  std::ostringstream u;
  u << "Task " << task.id << ": " << r.title << "\n\n" << task.goal << "\n";
  if (!task.context.empty()) u << "\nContext:\n" << task.context << "\n";
  ChatRequest req;
  req.system = data_.specialist.system;
  req.temperature = 0.2;
  std::string summary;
  bool cli = client_.backend().kind() == "cli";
  if (cli) {
    u << "\nYour working directory is a git checkout of " << task.target << " at " << r.base_commit
      << ". Edit the files there; do not commit, push or create branches.\n";
    req.messages.push_back({"user", u.str()});
    req.workdir = tree->path().string();
    req.max_output_tokens = 16000;
    HONE_ASSIGN_OR_RETURN(ChatReply reply, client_.Chat("specialist", req));
    summary = reply.text;
    HONE_ASSIGN_OR_RETURN(r.diff, DiffAgainst(tree->path(), r.base_commit));
    if (Trim(r.diff).empty()) return NotFound("specialist " + task.id + " made no change");
  } else {
    u << "\nRepository: " << task.target << " at " << r.base_commit << ". Files:\n";
    for (const auto& f : task.files) {
      auto content = sys::ReadFile(tree->path() / f);
      if (!content) {
        u << "\n--- " << f << ": (not found)\n";
        continue;
      }
      std::string text = content->size() > task.max_file_bytes
                             ? ClipUtf8(*content, task.max_file_bytes) + "\n...[clipped]\n"
                             : SanitizeUtf8(*content);
      u << "\n--- " << f << " ---\n" << text << "\n";
    }
    req.system += "\n" + data_.specialist.chat_suffix;
    req.messages.push_back({"user", u.str()});
    req.max_output_tokens = 8000;
    const std::filesystem::path worktree = tree->path();
    ReplyCheck check = [&](const json& v) -> std::string {
      std::string diff = v["diff"].get<std::string>();
      if (!diff.empty() && diff.back() != '\n') diff += '\n';
      auto facts = patch::Summarize(diff, task.target, rules_);
      if (!facts) return "not a usable unified diff: " + facts.error().message;
      auto applies = CheckApplies(worktree, diff);
      if (!applies) return "could not check the diff: " + applies.error().message;
      return *applies;
    };
    HONE_ASSIGN_OR_RETURN(StructuredReply reply,
                          client_.Structured("specialist", std::move(req), data_.specialist_schema, check));
    r.diff = reply.value["diff"].get<std::string>();
    if (!r.diff.empty() && r.diff.back() != '\n') r.diff += '\n';
    summary = reply.value["summary"].get<std::string>();
  }
  if (client_.redactor().Leaks(r.diff)) {
    return PermissionDenied("specialist " + task.id + " produced a diff containing a credential; refused");
  }
  HONE_ASSIGN_OR_RETURN(r.facts, patch::Summarize(r.diff, task.target, rules_));
  r.summary = client_.redactor().Redact(StripClaims(summary, &r.claims));
  HONE_TRY(tree->Remove());
  return r;
}

}  // namespace hone::agent
