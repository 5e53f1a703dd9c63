// `hone kb list|show|match|forget|export|import|migrate`: the recipe knowledge base from
// the shell, in a SQLite file or a PostgreSQL database (--kb postgresql://...).
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <set>

#include "cli/commands.h"
#include "core/strings.h"
#include "kb/store.h"
#include "sys/files.h"

namespace hone::cli {

namespace fs = std::filesystem;

namespace {

struct KbOpts {
  std::string kb_path;  // a file or a postgresql:// URL; empty: <cache>/kb.sqlite
  std::string to;       // migrate: the destination
  int64_t id = 0;
  std::string out;
  std::string in;
  kb::MatchQuery query;
  std::vector<std::string> settings;  // forget: KNOB=VALUE ...
  std::string why;                    // forget: the reason kept in the history
};

Result<std::unique_ptr<kb::RecipeStore>> OpenAt(const std::string& where, const Context& ctx) {
  HONE_ASSIGN_OR_RETURN(kb::KbRules rules, kb::LoadKbRules(ctx.data_dir));
  return kb::RecipeStore::OpenAt(where.empty() ? (ctx.cache_dir / "kb.sqlite").string() : where, std::move(rules));
}

Result<std::unique_ptr<kb::RecipeStore>> OpenStore(const KbOpts& o, const Context& ctx) { return OpenAt(o.kb_path, ctx); }

std::string Pct(double fraction) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%+.1f%%", fraction * 100);
  return buf;
}

std::string Objective(const kb::Recipe& r) {
  char buf[160];
  std::snprintf(buf, sizeof buf, "%s %g %s", r.objective.name.c_str(), r.objective.value, r.objective.unit.c_str());
  return buf;
}

// A recipe's config, or what the stock's record is.
std::string ConfigWords(const kb::Recipe& r) {
  return r.IsStockRecord() ? "(the stock's record: " + std::to_string(r.failures.size()) + " failure(s), never replayed)"
                           : r.config.ToString();
}

int RunList(const KbOpts& o, const Context& ctx) {
  auto store = OpenStore(o, ctx);
  if (!store) return ReportError(store.error());
  auto all = (*store)->List();
  if (!all) return ReportError(all.error());
  if (all->empty()) {
    std::printf("no recipes in %s\n", (*store)->path().c_str());
    return 0;
  }
  std::printf("%-4s %-8s %-22s %-16s %-9s %-24s %-30s %-7s %-5s %s\n", "id", "status", "model", "hardware", "precision",
              "workload", "objective", "gain", "repro", "config");
  for (const kb::Recipe& r : *all) {
    std::printf("%-4lld %-8s %-22s %-16s %-9s %-24s %-30s %-7s %-5lld %s\n", static_cast<long long>(r.id),
                std::string(kb::RecipeStatusName(r.status)).c_str(), r.identity.model.c_str(),
                r.identity.hardware.c_str(), r.identity.precision.c_str(), r.workload.ToString().c_str(),
                Objective(r).c_str(), Pct(r.GainFraction()).c_str(), static_cast<long long>(r.reproduce_count),
                ConfigWords(r).c_str());
  }
  return 0;
}

int RunShow(const KbOpts& o, const Context& ctx) {
  auto store = OpenStore(o, ctx);
  if (!store) return ReportError(store.error());
  auto got = (*store)->Get(o.id);
  if (!got) return ReportError(got.error());
  const kb::Recipe& r = *got;
  std::printf("recipe #%lld  %s\n", static_cast<long long>(r.id), r.identity.CanonicalId().c_str());
  for (kb::MatchField f : kb::kMatchFields) {
    std::printf("  %-18s %s\n", std::string(kb::MatchFieldName(f)).c_str(), r.identity.Get(f).c_str());
  }
  std::printf("workload           %s\n", r.workload.ToString().c_str());
  std::printf("config             %s\n", ConfigWords(r).c_str());
  std::printf("objective          %s  CI [%g, %g]  trials %s\n", Objective(r).c_str(), r.objective.ci_lo,
              r.objective.ci_hi, kb::JoinTrialIds(r.objective.trial_ids).c_str());
  std::printf("baseline           %g  (%s better than baseline)  trials %s\n", r.baseline.value,
              Pct(r.GainFraction()).c_str(), kb::JoinTrialIds(r.baseline.trial_ids).c_str());
  std::printf("status             %s%s\n", std::string(kb::RecipeStatusName(r.status)).c_str(),
              r.demoted_reason.empty() ? "" : (" (" + r.demoted_reason + ")").c_str());
  std::printf("reproduced         %lld time(s)\n", static_cast<long long>(r.reproduce_count));
  std::printf("provenance         hone %s, session %s, %s\n", r.provenance.hone_version.c_str(),
              r.provenance.session_id.c_str(), r.provenance.date.c_str());
  std::printf("learnings          %zu\n", r.learnings.size());
  for (const kb::Learning& l : r.learnings) {
    std::printf("  %s=%s  effect %s [%s, %s]  trials %s\n", l.knob.c_str(), l.value.c_str(), Pct(l.effect).c_str(),
                Pct(l.effect_ci_lo).c_str(), Pct(l.effect_ci_hi).c_str(), kb::JoinTrialIds(l.trial_ids).c_str());
  }
  std::printf("failures           %zu\n", r.failures.size());
  for (const kb::Failure& f : r.failures) {
    std::printf("  %s  %s%s  trials %s\n", std::string(kb::FailureKindName(f.kind)).c_str(),
                f.config_delta.ToString().c_str(), f.detail.empty() ? "" : (" (" + f.detail + ")").c_str(),
                kb::JoinTrialIds(f.trial_ids).c_str());
  }
  std::printf("notes              %zu\n", r.notes.size());
  for (const kb::Note& n : r.notes) {
    std::printf("  %s on %s: %s  (session %s)\n", n.source.c_str(), n.subject.c_str(), n.text.c_str(),
                n.session_id.c_str());
  }
  std::printf("history            %zu event(s)\n", r.history.size());
  for (const kb::HistoryEvent& e : r.history) {
    std::printf("  %s  %-15s session %s  objective %g  baseline %g  %s\n", e.date.c_str(), e.event.c_str(),
                e.session_id.c_str(), e.objective_value, e.baseline_value, e.detail.c_str());
  }
  return 0;
}

int RunMatch(const KbOpts& o, const Context& ctx) {
  auto store = OpenStore(o, ctx);
  if (!store) return ReportError(store.error());
  kb::MatchQuery q = o.query;
  if (q.workload.kind.empty() && (q.workload.concurrency > 0 || q.workload.isl > 0 || q.workload.osl > 0)) {
    q.workload.kind = "fixed";
  }
  if (q.workload.kind.empty() && !q.workload.trace_id.empty()) q.workload.kind = "trace";
  auto m = (*store)->Match(q);
  if (!m) return ReportError(m.error());
  for (const std::string& line : m->explanation) std::printf("%s\n", line.c_str());
  if (!m->recipe) {
    std::printf("result: miss\n");
  } else {
    std::printf("result: recipe #%lld, step %s, confidence %.3f, %s\n", static_cast<long long>(m->recipe->id),
                m->step.c_str(), m->confidence, m->replay ? "replay" : "no replay");
  }
  auto learnings = (*store)->Learnings(q);
  if (!learnings) return ReportError(learnings.error());
  auto failures = (*store)->Failures(q);
  if (!failures) return ReportError(failures.error());
  std::printf("priors: %zu learning(s), %zu failure(s) at confidence >= %.2f\n", learnings->size(), failures->size(),
              (*store)->rules().fallback.priors_min_confidence);
  for (const kb::PriorLearning& p : *learnings) {
    std::printf("  learning %s=%s effect %s (recipe #%lld, %.2f)\n", p.learning.knob.c_str(), p.learning.value.c_str(),
                Pct(p.learning.effect).c_str(), static_cast<long long>(p.recipe_id), p.confidence);
  }
  for (const kb::PriorFailure& p : *failures) {
    std::printf("  failure %s %s (recipe #%lld, %.2f)\n", std::string(kb::FailureKindName(p.failure.kind)).c_str(),
                p.failure.config_delta.ToString().c_str(), static_cast<long long>(p.recipe_id), p.confidence);
  }
  auto notes = (*store)->Notes(q);
  if (!notes) return ReportError(notes.error());
  for (const kb::PriorNote& p : *notes) {
    std::printf("  note (%s on %s) %s (recipe #%lld, %.2f)\n", p.note.source.c_str(), p.note.subject.c_str(),
                p.note.text.c_str(), static_cast<long long>(p.recipe_id), p.confidence);
  }
  return 0;
}

int RunExport(const KbOpts& o, const Context& ctx) {
  auto store = OpenStore(o, ctx);
  if (!store) return ReportError(store.error());
  auto text = (*store)->ExportJsonl();
  if (!text) return ReportError(text.error());
  size_t n = static_cast<size_t>(std::count(text->begin(), text->end(), '\n'));
  if (o.out.empty() || o.out == "-") {
    std::fwrite(text->data(), 1, text->size(), stdout);
  } else if (auto w = sys::WriteFileAtomic(o.out, *text); !w) {
    return ReportError(w.error());
  }
  std::fprintf(stderr, "exported %zu recipe(s) from %s\n", n, (*store)->path().c_str());
  return 0;
}

int RunImport(const KbOpts& o, const Context& ctx) {
  auto text = sys::ReadFile(o.in);
  if (!text) return ReportError(text.error());
  auto store = OpenStore(o, ctx);
  if (!store) return ReportError(store.error());
  auto stats = (*store)->ImportJsonl(*text, fs::path(o.in).filename().string());
  if (!stats) return ReportError(stats.error());
  std::printf("imported %s into %s: %lld added, %lld merged, %lld unchanged\n", o.in.c_str(),
              (*store)->path().c_str(), static_cast<long long>(stats->added), static_cast<long long>(stats->merged),
              static_cast<long long>(stats->unchanged));
  return 0;
}

// Copies every recipe from one knowledge base to another (SQLite <-> PostgreSQL, or
// file to file), then checks that the destination holds every source key.
int RunMigrate(const KbOpts& o, const Context& ctx) {
  auto from = OpenStore(o, ctx);
  if (!from) return ReportError(from.error());
  auto to = OpenAt(o.to, ctx);
  if (!to) return ReportError(to.error());
  if ((*from)->path() == (*to)->path()) {
    return ReportError(Error{ErrorCode::kInvalidArgument, "--from and --to are the same knowledge base", {}});
  }
  auto stats = (*to)->CopyFrom(**from);
  if (!stats) return ReportError(stats.error());
  auto source = (*from)->List();
  auto dest = (*to)->List();
  if (!source) return ReportError(source.error());
  if (!dest) return ReportError(dest.error());
  std::set<std::string> keys;
  for (const kb::Recipe& r : *dest) keys.insert(r.Key());
  size_t missing = 0;
  for (const kb::Recipe& r : *source) missing += keys.contains(r.Key()) ? 0 : 1;
  std::printf("migrated %s (%s, %zu recipes) -> %s (%s, now %zu recipes): %lld added, %lld merged, %lld unchanged\n",
              (*from)->path().c_str(), std::string(kb::DialectName((*from)->dialect())).c_str(), source->size(),
              (*to)->path().c_str(), std::string(kb::DialectName((*to)->dialect())).c_str(), dest->size(),
              static_cast<long long>(stats->added), static_cast<long long>(stats->merged),
              static_cast<long long>(stats->unchanged));
  if (missing > 0) {
    return ReportError(Error{ErrorCode::kDataLoss, std::to_string(missing) + " recipe(s) missing after the copy", {}});
  }
  return 0;
}

// Drops a recipe's failures about one configuration delta, so later sessions may
// measure it again (a value recorded as regressed under an earlier session's noise).
int RunForget(const KbOpts& o, const Context& ctx) {
  auto parsed = ParseSettings(o.settings, "forget");
  if (!parsed) return ReportError(parsed.error());
  const Config& delta = *parsed;
  auto store = OpenStore(o, ctx);
  if (!store) return ReportError(store.error());
  auto dropped = (*store)->ForgetFailures(o.id, delta, o.why);
  if (!dropped) return ReportError(dropped.error());
  for (const kb::Failure& f : *dropped) {
    std::printf("forgot %s %s%s (trials %s)\n", std::string(kb::FailureKindName(f.kind)).c_str(),
                f.config_delta.ToString().c_str(), f.detail.empty() ? "" : (" (" + f.detail + ")").c_str(),
                kb::JoinTrialIds(f.trial_ids).c_str());
  }
  std::printf("recipe #%lld in %s: %zu failure(s) forgotten; later sessions may measure %s again\n",
              static_cast<long long>(o.id), (*store)->path().c_str(), dropped->size(), delta.ToString().c_str());
  return 0;
}

}  // namespace

Action RegisterKb(CLI::App& app, const Context& ctx) {
  auto* cmd = app.add_subcommand("kb", "The recipe knowledge base: list, show, match, forget, export, import, migrate");
  cmd->require_subcommand(1);
  auto o = std::make_shared<KbOpts>();
  auto add_kb = [&](CLI::App* sub) {
    sub->add_option("--kb", o->kb_path,
                    "Knowledge base: a SQLite file or postgresql://user@host:port/db (default: <cache>/kb.sqlite)");
  };
  auto* list = cmd->add_subcommand("list", "List every recipe (active and demoted)");
  add_kb(list);
  auto* show = cmd->add_subcommand("show", "Show one recipe: config, numbers, learnings, failures, notes, history");
  add_kb(show);
  show->add_option("id", o->id, "Recipe id (from `hone kb list`)")->required();
  auto* match = cmd->add_subcommand("match", "Find the recipe a session would start from, and say why");
  add_kb(match);
  kb::Identity& id = o->query.identity;
  match->add_option("--model", id.model, "Model name");
  match->add_option("--hardware", id.hardware, "Hardware slug");
  match->add_option("--framework", id.framework, "Serving framework (llama.cpp, vllm, ...)");
  match->add_option("--model-type", id.model_type, "Model type (llama, qwen2, ...)");
  match->add_option("--architecture", id.architecture, "Architectures, '+'-joined (LlamaForCausalLM)");
  match->add_option("--framework-version", id.framework_version, "Framework version (0.4.0)");
  match->add_option("--precision", id.precision, "Precision / quantization (q8_0, bf16)");
  kb::Workload& w = o->query.workload;
  match->add_option("--workload-kind", w.kind, "Workload kind (fixed, trace); default fixed when a size is given");
  match->add_option("--concurrency", w.concurrency, "Concurrency of the operating point");
  match->add_option("--isl", w.isl, "Input tokens per request");
  match->add_option("--osl", w.osl, "Output tokens per request");
  match->add_option("--trace", w.trace_id, "Trace id of a replayed workload");
  auto* forget = cmd->add_subcommand(
      "forget", "Drop a recipe's failures about one configuration (KNOB=VALUE ...), so later sessions may measure it again");
  add_kb(forget);
  forget->add_option("id", o->id, "Recipe id (from `hone kb list`)")->required();
  forget->add_option("setting", o->settings, "The failure's configuration, as `hone kb show` prints it: KNOB=VALUE ...")
      ->required();
  forget->add_option("--why", o->why, "Why, kept in the recipe's history");
  auto* exp = cmd->add_subcommand("export", "Write every recipe as JSON lines");
  add_kb(exp);
  exp->add_option("--out", o->out, "Output file (default: stdout)");
  auto* imp = cmd->add_subcommand("import", "Read recipes from JSON lines; known recipes are merged, never duplicated");
  add_kb(imp);
  imp->add_option("file", o->in, "JSON lines file (from `hone kb export`)")->required();
  auto* mig = cmd->add_subcommand("migrate", "Copy every recipe to another knowledge base (SQLite <-> PostgreSQL)");
  mig->add_option("--from", o->kb_path, "Source: a SQLite file or a postgresql:// URL (default: <cache>/kb.sqlite)");
  mig->add_option("--to", o->to, "Destination: a SQLite file or a postgresql:// URL")->required();
  return [=, &ctx]() -> int {
    if (list->parsed()) return RunList(*o, ctx);
    if (show->parsed()) return RunShow(*o, ctx);
    if (match->parsed()) return RunMatch(*o, ctx);
    if (forget->parsed()) return RunForget(*o, ctx);
    if (exp->parsed()) return RunExport(*o, ctx);
    if (imp->parsed()) return RunImport(*o, ctx);
    if (mig->parsed()) return RunMigrate(*o, ctx);
    return 2;
  };
}

}  // namespace hone::cli
