#include "run/agents.h"

#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "agent/text.h"
#include "core/strings.h"
#include "policy/rules.h"
#include "sys/files.h"
#include "sys/term.h"

namespace hone::run {

namespace fs = std::filesystem;

namespace {

const std::vector<std::string> kDefaultRoles = {"orchestrator", "critic", "robustness"};

bool Has(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

std::string Pct(double fraction) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%+.1f%%", fraction * 100);
  return buf;
}

// Whether `name` runs: a path that exists, or a command on PATH.
bool Runnable(const std::string& name) {
  if (name.find('/') != std::string::npos) return access(name.c_str(), X_OK) == 0;
  const char* path = std::getenv("PATH");
  for (const std::string& dir : Split(path ? path : "", ':')) {
    if (!dir.empty() && access((fs::path(dir) / name).c_str(), X_OK) == 0) return true;
  }
  return false;
}

// The checks that need no backend: the endpoint answers, the CLI exists.
Status Reachable(const agent::BackendConfig& c, const agent::AgentData& data) {
  if (c.kind == "openai" || c.kind == "anthropic") {
    if (auto s = ProbeEndpoint(c.base_url, 5); !s) {
      return Unavailable("agents.endpoint " + c.base_url + " is unreachable (" + s.error().message + ")");
    }
    return Ok();
  }
  std::string exe;
  if (!c.argv.empty()) {
    exe = c.argv.front();
  } else if (auto it = data.cli_presets.find(c.preset); it != data.cli_presets.end() && !it->second.argv.empty()) {
    exe = it->second.argv.front();
  }
  if (!exe.empty() && !Runnable(exe)) return NotFound("agents: the coding-agent command '" + exe + "' is not on PATH");
  return Ok();
}

// Text of the knowledge base's priors for the orchestrator.
std::vector<std::string> PriorLines(const std::vector<search::Prior>& priors) {
  std::vector<std::string> out;
  for (const search::Prior& p : priors) {
    std::string l = p.knob + "=" + p.value + ": ";
    l += p.failure_kind.empty() ? "measured " + Pct(p.effect) : "failed (" + p.failure_kind + ")";
    char buf[48];
    std::snprintf(buf, sizeof buf, ", confidence %.2f", p.confidence);
    out.push_back(l + buf);
    if (out.size() >= 24) break;
  }
  return out;
}

// "s1-more-default-slots": the patch id of the i-th specialist task.
std::string GoalId(size_t index, const std::string& title) {
  std::string id = "s" + std::to_string(index + 1) + "-";
  for (char c : title) {
    const bool keep = std::isalnum(static_cast<unsigned char>(c));
    if (keep) {
      id += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    } else if (id.back() != '-') {
      id += '-';
    }
  }
  id = id.substr(0, 48);
  while (id.back() == '-') id.pop_back();
  return id;
}

// What the specialist is told about the session it writes for.
std::string TaskContext(const spec::SessionSpec& spec) {
  std::string c = "Serving " + (spec.target.model.path.empty() ? spec.target.model.preset : spec.target.model.path) +
                  " with " + spec.target.adapter + "; workload " + spec.workload.kind + ", concurrency " +
                  std::to_string(spec.workload.concurrency) + ", input " + std::to_string(spec.workload.isl) +
                  " / output " + std::to_string(spec.workload.osl) + " tokens; objective " +
                  spec.objective.metric + ". hone builds llama-server from your diff and measures it against the "
                  "current best in paired trials; only a measured gain is kept.";
  return c;
}

}  // namespace

Result<session::WrittenPatch> SpecialistWriter::Write(const session::PatchGoal& goal, const std::string& repo,
                                                      const std::string& base_commit) {
  agent::SpecialistTask t;
  t.id = goal.id;
  t.title = goal.title;
  t.goal = goal.goal;
  t.context = context_;
  t.target = target_;
  t.repo = repo;
  t.base = base_commit.empty() ? "HEAD" : base_commit;
  t.work_dir = work_dir_;
  t.files = goal.files;
  Attempt attempt{goal.id, "", {}, ""};
  auto r = specialist_.Run(t);
  if (!r) {
    Error e = r.error();
    e.message = agent::OneLine(e.message, 400);  // git's output spans lines; the record is one
    attempt.error = e.message;
    attempts_.push_back(std::move(attempt));
    return Fail(std::move(e));
  }
  attempt.author = r->author;
  attempt.claims = r->claims;
  attempts_.push_back(std::move(attempt));
  return session::WrittenPatch{r->diff, r->author, r->title, r->summary};
}

Result<policy::CriticReview> SpecialistWriter::Review(const session::PatchGoal& goal,
                                                      const session::WrittenPatch& patch) {
  agent::Decision d;
  d.kind = "patch";
  d.subject = goal.id;
  // A review of the code before it is built: hone measures it only after a sign-off,
  // and the measured verdict gets its own review then.
  d.idea = goal.title + ": " + goal.goal + " (not built or measured yet: review the diff itself)";
  d.diff = patch.diff;
  d.diff_sha256 = sys::Sha256Hex(patch.diff);
  d.author = patch.author;
  d.claimed_gain = 0;  // the specialist's numbers were cut out; it claims nothing here
  HONE_ASSIGN_OR_RETURN(agent::CriticVerdict v, critic_.Review(d));
  return agent::ToReview(v, d);
}

Status ProbeEndpoint(const std::string& url, double timeout_s) {
  std::string rest;
  int port = 0;
  if (url.starts_with("http://")) {
    rest = url.substr(7);
    port = 80;
  } else if (url.starts_with("https://")) {
    rest = url.substr(8);
    port = 443;
  } else {
    return InvalidArgument("not an http(s) URL: " + url);
  }
  std::string hostport = rest.substr(0, rest.find('/'));
  std::string host = hostport;
  if (!hostport.empty() && hostport.front() == '[') {  // [::1]:8080
    size_t close = hostport.find(']');
    host = hostport.substr(1, close == std::string::npos ? std::string::npos : close - 1);
    if (close != std::string::npos && close + 1 < hostport.size() && hostport[close + 1] == ':') {
      auto p = ParseInt(hostport.substr(close + 2));
      if (!p) return InvalidArgument("bad port in " + url);
      port = static_cast<int>(*p);
    }
  } else if (size_t colon = hostport.rfind(':'); colon != std::string::npos) {
    host = hostport.substr(0, colon);
    auto p = ParseInt(hostport.substr(colon + 1));
    if (!p) return InvalidArgument("bad port in " + url);
    port = static_cast<int>(*p);
  }
  if (host.empty()) return InvalidArgument("no host in " + url);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (int rc = getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res); rc != 0) {
    return Unavailable("cannot resolve " + host + ": " + gai_strerror(rc));
  }
  std::string last = "no address";
  for (addrinfo* a = res; a; a = a->ai_next) {
    int fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol);
    if (fd < 0) continue;
    int rc = connect(fd, a->ai_addr, a->ai_addrlen);
    if (rc != 0 && errno == EINPROGRESS) {
      pollfd p{fd, POLLOUT, 0};
      rc = poll(&p, 1, static_cast<int>(timeout_s * 1000));
      if (rc == 0) {
        last = "no answer within " + std::to_string(static_cast<int>(timeout_s)) + " s";
        close(fd);
        continue;
      }
      int err = 0;
      socklen_t len = sizeof err;
      getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
      rc = err == 0 ? 0 : -1;
      if (err) errno = err;
    }
    if (rc == 0) {
      close(fd);
      freeaddrinfo(res);
      return Ok();
    }
    last = std::strerror(errno);
    close(fd);
  }
  freeaddrinfo(res);
  return Unavailable(host + ":" + std::to_string(port) + ": " + last);
}

Result<Agents> BuildAgents(const spec::SessionSpec& spec, const std::string& run_dir, const RunContext& ctx,
                           const AgentsInputs& in, std::unique_ptr<search::Proposer>& proposer) {
  Agents a;
  const spec::AgentsSpec& as = spec.agents;
  if (as.mode == "none" || as.mode.empty()) return a;
  auto progress = ctx.progress;
  // Without `required: false` any problem stops the session before it starts.
  auto problem = [&](const Error& e) -> Result<Agents> {
    std::string line = agent::OneLine(e.message, 400);
    if (as.required) {
      Error err = e;
      err.message = line + " (agents.required: false runs the planner alone instead; hone run --agents none too)";
      return Fail(std::move(err));
    }
    Agents off;
    off.warning = "agents off: " + line + "; the planner searches alone";
    sys::LogWarn(off.warning);
    return off;
  };
  auto config = agent::BackendConfigFromSpec(as);
  if (!config) return problem(config.error());
  auto data = agent::AgentData::Load(ctx.data_dir);
  if (!data) return Fail(data.error());  // a broken data file is never optional
  a.data = std::make_unique<agent::AgentData>(std::move(*data));
  if (!in.transport) {
    if (auto r = Reachable(*config, *a.data); !r) return problem(r.error());
  }
  a.roles = as.roles.empty() ? kDefaultRoles : as.roles;
  std::shared_ptr<std::vector<std::string>> events = a.events;
  auto on_event = [events, progress](const std::string& line) {
    events->push_back(line);
    if (progress) progress("agents: " + line);
  };
  auto rt = agent::AgentRuntime::Create(*config, *a.data, (fs::path(run_dir) / "agent_calls.jsonl").string(),
                                        *ctx.clock, in.env ? in.env : agent::ProcessEnv(), on_event, in.transport);
  if (!rt) return problem(rt.error());
  a.runtime = std::move(*rt);
  a.backend = a.runtime->backend().name();
  agent::LlmClient& client = a.runtime->client();

  if (Has(a.roles, "robustness")) a.robustness = std::make_unique<agent::Robustness>(&client, *a.data);
  if (Has(a.roles, "critic")) {
    HONE_ASSIGN_OR_RETURN(a.critic, agent::Critic::Create(client, *a.data));
  }
  if (Has(a.roles, "orchestrator")) {
    if (!in.catalog) return Internal("BuildAgents: no knob catalog");
    agent::AgentProposerOptions o;
    o.only = spec.search.knobs;
    o.exclude = in.exclude;
    for (const std::string& k : spec.search.exclude) o.exclude.push_back(k);
    auto rules = policy::Rules::Load(ctx.data_dir + "/data/policy/rules.yaml");
    if (!rules) return Fail(rules.error());
    if (rules->protected_knobs) o.protected_knobs = rules->protected_knobs->names;
    o.objective = spec.objective.metric;
    o.clock = ctx.clock;
    a.orchestrator = std::make_unique<agent::Orchestrator>(client, *a.data);
    // Without the robustness role the detectors still run; recoveries are then the
    // deterministic DefaultRecovery.
    if (!a.robustness) a.robustness = std::make_unique<agent::Robustness>(nullptr, *a.data);
    a.planner = std::move(proposer);
    auto ap = std::make_unique<agent::AgentProposer>(*a.orchestrator, *in.catalog, std::move(o), a.planner.get(),
                                                     a.robustness.get());
    a.proposer = ap.get();
    proposer = std::move(ap);
    a.knob_priors = PriorLines(in.priors);
    a.knob_priors.insert(a.knob_priors.end(), in.kb_notes.begin(), in.kb_notes.end());
  }
  if (Has(a.roles, "specialist")) {
    // The spec requires the critic with the specialist: no diff merges unsigned.
    if (!a.critic) return InvalidArgument("agents.roles: the specialist's diffs need the critic's sign-off");
    auto rules = policy::Rules::Load(ctx.data_dir + "/data/policy/rules.yaml");
    if (!rules) return Fail(rules.error());
    a.writer = std::make_unique<SpecialistWriter>(
        client, *a.data, *a.critic, std::make_unique<policy::Rules>(std::move(*rules)),
        (fs::path(run_dir) / "specialist").string(), spec.target.adapter, TaskContext(spec));
    for (size_t i = 0; i < as.specialist_tasks.size(); ++i) {
      const spec::SpecialistTaskSpec& t = as.specialist_tasks[i];
      a.goals.push_back({GoalId(i, t.title), t.title, t.goal, t.files});
    }
  }
  if (progress) {
    progress("agents: " + a.backend + " (" + Join(a.roles, ", ") + "); " + a.runtime->meter().Summary() +
             " so far, transcript " + a.runtime->transcript_path());
  }
  return a;
}

agent::Decision CriticDecision(const session::CandidateRecord& c, Verdict measured, double noise_floor) {
  agent::Decision d;
  d.subject = c.id;
  d.idea = c.idea;
  d.incumbent = c.incumbent.ToString();
  d.config = c.config.ToString();
  d.measured_verdict = measured;
  d.gain = c.gain;
  d.ci_lo = c.ci_lo;
  d.ci_hi = c.ci_hi;
  d.threshold = c.threshold;
  d.noise_floor = noise_floor;
  d.pairs = c.pairs;
  d.incumbent_values = c.incumbent_values;
  d.candidate_values = c.candidate_values;
  d.trials = c.candidate_trials;
  d.accuracy_passed = c.accuracy_passed;
  d.accuracy = c.accuracy;
  d.claimed_gain = c.predicted_gain;
  return d;
}

std::function<Result<session::CriticNote>(const session::CandidateRecord&, Verdict)> CriticHook(
    agent::Critic& critic, std::function<double()> noise_floor) {
  return [&critic, noise_floor = std::move(noise_floor)](const session::CandidateRecord& c,
                                                         Verdict measured) -> Result<session::CriticNote> {
    HONE_ASSIGN_OR_RETURN(agent::CriticVerdict v, critic.Review(CriticDecision(c, measured, noise_floor())));
    return session::CriticNote{v.approve, v.reason, v.learning, v.signature};
  };
}

void AttachState(Agents& agents, const session::SessionState& state) {
  if (!agents.proposer) return;
  const session::SessionState* s = &state;
  search::Proposer* planner = agents.planner.get();
  std::vector<std::string> learnings = agents.knob_priors;
  agents.proposer->SetSnapshotFiller([s, planner, learnings](agent::OrchestratorSnapshot& snap) {
    snap.phase = session::PhaseName(s->phase);
    snap.baseline_objective = s->baseline_objective;
    snap.stock = s->stock.ToString();
    snap.best = s->BestText();
    snap.best_objective = s->best_values.empty() ? 0 : s->best_values.back();
    snap.validated = s->validated;
    snap.validated_gain = s->validated_gain;
    snap.cycle = s->cycle;
    snap.learnings = learnings;
    if (planner) snap.idea_tree = planner->Describe();
  });
}

std::string AgentSummary(const Agents& agents, const session::SessionState& state) {
  if (!agents.active()) return agents.warning.empty() ? "" : agents.warning + "\n";
  std::string out = "backend: " + agents.backend + "; roles: " + Join(agents.roles, ", ") + "\n";
  if (!agents.warning.empty()) out += agents.warning + "\n";
  // Ideas: what the orchestrator proposed, what was measured and what was kept.
  if (agents.proposer) {
    const agent::AgentProposer& p = *agents.proposer;
    int measured = 0, kept = 0;
    for (const session::CandidateRecord& c : state.candidates) {
      if (!c.idea.starts_with("agent:")) continue;
      if (!c.candidate_trials.empty()) ++measured;  // hone ran trials of it
      if (c.verdict == Verdict::kKeep) ++kept;
    }
    out += "ideas: " + std::to_string(p.proposed()) + " proposed by the orchestrator, " +
           std::to_string(p.rejections().size()) + " rejected before measurement, " + std::to_string(measured) +
           " measured, " + std::to_string(kept) + " kept" + (p.agent_off() ? "; agent ideas stopped" : "") + "\n";
    for (const agent::IdeaRejection& r : p.rejections()) {
      out += "- rejected '" + r.title + "' (" + r.delta + "): " + r.rule + ": " + r.message + "\n";
    }
  }
  // The critic: every review, refusals with their reasons.
  if (agents.critic) {
    int reviewed = 0, refused = 0, keeps_refused = 0, unreviewed = 0;
    std::string lines;
    for (const session::CandidateRecord& c : state.candidates) {
      if (c.critic.empty()) continue;
      if (c.critic.starts_with("no review")) {
        ++unreviewed;
        continue;
      }
      ++reviewed;
      if (c.critic.starts_with("refused")) {
        ++refused;
        // Decide words a vetoed KEEP "measured KEEP (...) but the critic refused: ...".
        const bool keep = c.reason.starts_with("measured KEEP");
        keeps_refused += keep ? 1 : 0;
        lines += "- " + c.id + " (" + c.Change() + ", measured " + Pct(c.gain) + "): " +
                 (keep ? "measured KEEP, now " + std::string(VerdictName(c.verdict))
                       : std::string(VerdictName(c.verdict)) + " stands") +
                 "; " + c.critic + "\n";
      }
    }
    out += "critic: " + std::to_string(reviewed) + " verdicts reviewed, " + std::to_string(refused) + " refused (" +
           std::to_string(keeps_refused) + " of them measured KEEPs, now REVERT)" +
           (unreviewed ? ", " + std::to_string(unreviewed) + " without a review (the measured verdict stood)" : "") +
           "\n" + lines;
  }
  // The specialist: every diff it was asked for and what became of it.
  if (agents.writer) {
    int kept = 0, reverted = 0, refused = 0, no_diff = 0, build_failed = 0, untried = 0;
    std::string lines;
    for (const session::PatchGoal& g : agents.goals) {
      const SpecialistWriter::Attempt* attempt = nullptr;
      for (const auto& at : agents.writer->attempts()) {
        if (at.goal_id == g.id) attempt = &at;
      }
      const session::CandidateRecord* rec = nullptr;
      for (const session::CandidateRecord& c : state.candidates) {
        if (c.patch == g.id) rec = &c;
      }
      std::string line = "- " + g.id + " '" + g.title + "'";
      if (attempt && !attempt->author.empty()) line += " by " + attempt->author;
      if (!rec) {
        ++untried;
        line += ": not tried (the session stopped first)";
      } else if (rec->verdict == Verdict::kKeep) {
        ++kept;
        line += ": kept, measured " + Pct(rec->gain) + " (" + rec->id + ": " + rec->rationale + ")";
      } else if (rec->verdict == Verdict::kBuildFailed) {
        ++build_failed;
        line += ": failed to build: " + rec->reason;
      } else if (rec->verdict == Verdict::kPatchRejected && rec->reason.ends_with("[writer]")) {
        ++no_diff;
        line += ": no usable diff (rejected before the gate): " + rec->reason;
      } else if (rec->verdict == Verdict::kPatchRejected) {
        ++refused;
        line += ": refused before building: " + rec->reason;
      } else {
        ++reverted;
        line += ": " + std::string(VerdictName(rec->verdict)) + " (" + rec->id + ", measured " + Pct(rec->gain) +
                "): " + rec->reason;
      }
      if (attempt && !attempt->claims.empty()) {
        line += "; its claims (not measurements): " + Join(attempt->claims, ", ");
      }
      lines += line + "\n";
    }
    out += "specialist: " + std::to_string(agents.goals.size()) + " diffs asked for, " + std::to_string(kept) +
           " kept, " + std::to_string(reverted) + " reverted, " + std::to_string(refused) +
           " refused before building (gate, critic or apply), " + std::to_string(build_failed) + " failed to build, " +
           std::to_string(no_diff) + " without a usable diff" +
           (untried ? ", " + std::to_string(untried) + " not tried" : "") + "\n" + lines;
  }
  out += "usage: " + agents.runtime->meter().Summary() + "\n";
  for (const auto& [role, t] : agents.runtime->meter().by_role()) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "- %s: %d calls, %lld tokens, $%.4f\n", role.c_str(), t.calls,
                  static_cast<long long>(t.input_tokens + t.output_tokens), t.cost_usd);
    out += buf;
  }
  for (const std::string& e : *agents.events) out += "stopped: " + e + "\n";
  if (agents.proposer) {
    const agent::AgentProposer& p = *agents.proposer;
    if (!p.calibration().empty()) out += "calibration (the orchestrator's claims vs hone's measurements):\n" +
                                         agent::FormatCalibrationTable(p.calibration());
    for (const std::string& n : p.notes()) out += "note: " + n + "\n";
  }
  return agents.runtime->redactor().Redact(out);
}

}  // namespace hone::run
