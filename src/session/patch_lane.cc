#include "session/patch_lane.h"

#include <filesystem>

#include "core/strings.h"
#include "patch/validate.h"
#include "sys/files.h"

namespace hone::session {

namespace fs = std::filesystem;

namespace {

// `text` with every character but letters, digits, '-' and '_' made a '-' (git ref and
// file name safe).
std::string SafeName(std::string_view text) {
  std::string out;
  for (char c : text) out += std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' ? c : '-';
  return out;
}

}  // namespace

std::string BranchPrefix(const std::string& run_dir) {
  const fs::path abs = fs::absolute(run_dir).lexically_normal();
  return "hone-" + SafeName(abs.filename().string()).substr(0, 40) + "-" + sys::Sha256Hex(abs.string()).substr(0, 8);
}

Result<std::unique_ptr<ExecutorPatchLane>> ExecutorPatchLane::Create(PatchLaneOptions options) {
  for (const std::string& f : options.diff_files) {
    if (!sys::FileExists(f)) return NotFound("patch file not found: " + f);
  }
  if (!options.goals.empty() && !options.writer) return InvalidArgument("patch goals need a patch writer");
  HONE_ASSIGN_OR_RETURN(auto gate, policy::Gate::Load(options.rules_path));
  auto lane = std::unique_ptr<ExecutorPatchLane>(new ExecutorPatchLane(std::move(options), std::move(gate)));
  patch::ExecutorOptions eo;
  eo.repo = lane->options_.repo;
  eo.work_root = fs::path(lane->options_.run_dir) / "patch";
  eo.branch_prefix = BranchPrefix(lane->options_.run_dir);
  eo.target = lane->options_.target;
  eo.recipe = lane->options_.recipe;
  eo.jobs = lane->options_.jobs;
  eo.actor = "coordinator";
  eo.clock = lane->options_.clock;
  eo.runner = lane->options_.runner;
  HONE_ASSIGN_OR_RETURN(lane->executor_, patch::PatchExecutor::Create(eo, *lane->gate_));
  return lane;
}

void ExecutorPatchLane::Say(const std::string& line) const {
  if (options_.progress) options_.progress(line);
}

std::string ExecutorPatchLane::IdFor(size_t index) const {
  std::string stem = fs::path(options_.diff_files[index]).stem().string();
  return ("p" + std::to_string(index + 1) + "-" + SafeName(stem)).substr(0, 60);
}

std::vector<PatchIdea> ExecutorPatchLane::Pending(const SessionState& state) {
  std::vector<PatchIdea> out;
  for (size_t i = 0; i < options_.diff_files.size(); ++i) {
    std::string id = IdFor(i);
    bool tried = false;
    for (const auto& c : state.candidates) tried = tried || c.patch == id;
    if (!tried) out.push_back({id, "patch " + fs::path(options_.diff_files[i]).filename().string()});
  }
  for (const PatchGoal& g : options_.goals) {
    bool tried = false;
    for (const auto& c : state.candidates) tried = tried || c.patch == g.id;
    if (!tried) out.push_back({g.id, "written patch: " + g.title});
  }
  return out;
}

Result<PatchResult> ExecutorPatchLane::Try(const PatchIdea& idea,
                                           const std::function<Result<bool>(const std::string& binary)>& measure) {
  for (const PatchGoal& g : options_.goals) {
    if (g.id == idea.id) return TryGoal(g, idea, measure);
  }
  size_t index = 0;
  while (index < options_.diff_files.size() && IdFor(index) != idea.id) ++index;
  if (index == options_.diff_files.size()) return NotFound("unknown patch " + idea.id);
  // The diff file is the author; the user who listed it in the spec reviews it.
  HONE_ASSIGN_OR_RETURN(patch::Proposal proposal, patch::LoadBackport(options_.diff_files[index], idea.id, "spec"));
  policy::Action a;
  a.kind = policy::ActionKind::kApplyPatch;
  a.role = "user";
  a.actor = "spec";
  a.subject = proposal.id;
  auto sign_off = [&](PatchResult&) -> Result<bool> {
    gate_->RecordReview("user", policy::CriticReview{proposal.id, sys::Sha256Hex(proposal.diff), "user",
                                                     policy::CriticVerdict::kApprove, "listed in the session spec"});
    return true;
  };
  return Run(proposal, std::move(a), sign_off, idea, measure);
}

Result<PatchResult> ExecutorPatchLane::TryGoal(const PatchGoal& goal, const PatchIdea& idea,
                                               const std::function<Result<bool>(const std::string& binary)>& measure) {
  // Written against the accepted line, so it applies on top of what was kept so far.
  Say(goal.id + ": the writer works on '" + goal.title + "'");
  auto written = options_.writer->Write(goal, options_.repo, executor_->accepted_commit());
  if (!written) {
    if (written.error().code == ErrorCode::kCancelled) return Fail(written.error());
    PatchResult out;
    out.status = PatchStatus::kRejected;
    out.reason = "the writer produced no usable diff: " + written.error().message;
    out.stopped_by = "writer";
    return out;
  }
  patch::Proposal proposal{goal.id, written->title.empty() ? goal.title : written->title, written->author,
                           "writer", written->diff};
  policy::Action a;
  a.kind = policy::ActionKind::kApplyPatch;
  a.role = "specialist";
  a.actor = written->author;
  a.subject = proposal.id;
  // The reviewer signs off this exact diff (never its author: patch.no_self_review).
  // A refusal means the merge could never be allowed: nothing is built or measured.
  auto sign_off = [&](PatchResult& out) -> Result<bool> {
    Say(goal.id + ": the reviewer reads the diff (" + out.diffstat + ")");
    auto review = options_.writer->Review(goal, *written);
    if (!review) {
      if (review.error().code == ErrorCode::kCancelled) return Fail(review.error());
      out.reason = "no review, so no sign-off: " + review.error().message;
      out.stopped_by = "patch.critic_signoff";
      return false;
    }
    policy::PolicyDecision recorded = gate_->RecordReview("critic", *review);
    if (!recorded.allowed) {
      out.reason = "the review was not accepted: " + recorded.message;
      out.stopped_by = recorded.rule_id;
      return false;
    }
    if (review->verdict == policy::CriticVerdict::kReject) {
      out.reason = "the reviewer refused the diff: " + review->reason;
      out.stopped_by = "patch.critic_signoff";
      return false;
    }
    Say(goal.id + ": signed off: " + review->reason);
    return true;
  };
  return Run(proposal, std::move(a), sign_off, idea, measure);
}

Result<PatchResult> ExecutorPatchLane::Run(const patch::Proposal& proposal, policy::Action a,
                                           const std::function<Result<bool>(PatchResult&)>& sign_off,
                                           const PatchIdea& idea,
                                           const std::function<Result<bool>(const std::string& binary)>& measure) {
  PatchResult out;
  auto facts = patch::Summarize(proposal.diff, options_.target, &gate_->rules());
  if (!facts) {
    out.status = PatchStatus::kRejected;
    out.reason = facts.error().message;
    out.stopped_by = "diff.parse";
    return out;
  }
  out.diffstat = std::to_string(facts->files.size()) + " file(s), +" + std::to_string(facts->lines_added) + "/-" +
                 std::to_string(facts->lines_removed);
  a.patch = *facts;
  // The gate decides the apply (a denial is the executor's recorded rejection); then
  // the sign-off, which the executor's merge request needs.
  policy::PolicyDecision decision = gate_->Decide(a);
  if (decision.allowed) {
    HONE_ASSIGN_OR_RETURN(bool go_on, sign_off(out));
    if (!go_on) {
      out.status = PatchStatus::kRejected;
      return out;
    }
  }
  std::string kept_binary;
  if (decision.allowed) {
    Say(proposal.id + ": building " + options_.recipe.name + " (log " + executor_->BuildLogPath(proposal.id).string() +
        ")");
  }
  auto measure_fn = [&](const patch::BuiltTree& tree) -> Result<patch::Measurement> {
    out.build_seconds = tree.build_seconds;
    Say(proposal.id + ": built in " + std::to_string(static_cast<int>(tree.build_seconds + 0.5)) +
        " s; measuring it against the current best");
    std::string binary = (tree.build_dir / options_.binary_in_build).string();
    HONE_ASSIGN_OR_RETURN(bool keep, measure(binary));
    if (keep) {
      // The build directory is shared with the next proposal: keep a copy.
      fs::path dest = fs::path(options_.run_dir) / "bin" / ("llama-server-" + idea.id);
      HONE_TRY(sys::EnsureDir(dest.parent_path()));
      std::error_code ec;
      fs::copy_file(binary, dest, fs::copy_options::overwrite_existing, ec);
      if (ec) return Internal("cannot keep the patched binary: " + ec.message());
      kept_binary = dest.string();
    }
    return patch::Measurement{keep ? Verdict::kKeep : Verdict::kRevert,
                              keep ? "paired verdict KEEP" : "paired verdict did not keep it"};
  };
  HONE_ASSIGN_OR_RETURN(patch::PatchRecord rec, executor_->Run(proposal, decision, measure_fn));
  out.reason = rec.reason;
  out.stopped_by = rec.stopped_by;
  out.diffstat = std::to_string(rec.files.size()) + " file(s), +" + std::to_string(rec.lines_added) + "/-" +
                 std::to_string(rec.lines_removed);
  switch (rec.verdict) {
    case patch::PatchVerdict::kKept:
      out.status = PatchStatus::kKept;
      out.binary = kept_binary;
      break;
    case patch::PatchVerdict::kReverted:
      out.status = rec.stopped_by.starts_with("build") ? PatchStatus::kBuildFailed : PatchStatus::kReverted;
      break;
    case patch::PatchVerdict::kRejected:
      out.status = PatchStatus::kRejected;
      break;
  }
  return out;
}

}  // namespace hone::session
