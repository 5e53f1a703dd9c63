// `hone kernel ...`: kernel task specs, the backend protocol, re-verification and the
// per-family report.
//   hone kernel validate SPEC...                      check task specs, print a summary
//   hone kernel package SPEC... --out P               write the backend package
//   hone kernel tune SPEC... --out-dir D [--backend CMD] [--verify]
//                                                     run a backend (default: the built-in
//                                                     lane), optionally re-verify its claims
//   hone kernel verify --claims R (--raw RAW | --package P [--harness CMD])
//                                                     re-verify claims against a measurement
//   hone kernel report RAW [--tables-out DIR]         recompute decisions and the table
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>

#include "cli/commands.h"
#include "core/strings.h"
#include "kernel/bench_result.h"
#include "kernel/protocol.h"
#include "kernel/summary.h"
#include "kernel/task_spec.h"
#include "kernel/tuned_table.h"
#include "kernel/verify.h"
#include "sys/files.h"
#include "sys/process.h"

namespace hone::cli {

namespace fs = std::filesystem;

namespace {

struct KernelOpts {
  std::vector<std::string> specs;
  std::string ops;  // default: <data>/data/kernel/ops.yaml
  std::string out;
  std::string out_dir;
  std::string workload = "unspecified";
  std::string device = "NVIDIA H200";
  std::string arch = "sm_90a";
  std::string backend;  // shell words; default: the built-in lane
  std::string harness;  // shell words; default: kbench.py verify
  std::string claims;
  std::string raw;
  std::string package;
  std::string tables_out;
  int timeout_s = 7200;
  int runs = 3;
  bool verify = false;
};

std::string OpsPath(const KernelOpts& o, const Context& ctx) {
  return o.ops.empty() ? ctx.data_dir + "/data/kernel/ops.yaml" : o.ops;
}

std::string Kbench(const Context& ctx) { return ctx.data_dir + "/kernels/bench/kbench.py"; }

std::vector<std::string> Words(const std::string& s) {
  std::vector<std::string> out;
  for (const std::string& w : Split(s, ' ')) {
    if (!w.empty()) out.push_back(w);
  }
  return out;
}

Result<std::vector<kernel::KernelTaskSpec>> LoadSpecs(const KernelOpts& o, const kernel::OpCatalog& cat) {
  std::vector<kernel::KernelTaskSpec> out;
  for (const std::string& p : o.specs) {
    HONE_ASSIGN_OR_RETURN(kernel::KernelTaskSpec t, kernel::LoadTaskSpec(p, cat));
    for (const auto& prev : out) {
      if (prev.task_id == t.task_id) return InvalidArgument(p + ": duplicate task_id '" + t.task_id + "'");
    }
    out.push_back(std::move(t));
  }
  return out;
}

Result<std::string> WritePackage(const KernelOpts& o, const kernel::OpCatalog& cat, const std::string& path) {
  HONE_ASSIGN_OR_RETURN(auto tasks, LoadSpecs(o, cat));
  kernel::PackageInput in{.workload = o.workload, .device = o.device, .arch = o.arch, .best_config = {},
                          .tasks = std::move(tasks)};
  HONE_ASSIGN_OR_RETURN(std::string text, kernel::WritePackageJson(in, cat));
  HONE_TRY(sys::WriteFileAtomic(path, text));
  return path;
}

// Reads a measurement, prints the table; writes tuned tables when asked.
Result<std::vector<kernel::TaskSummary>> Report(const kernel::BenchResult& bench, const kernel::OpCatalog& cat,
                                                const std::string& raw_path, const std::string& tables_out) {
  std::vector<kernel::TaskSummary> sums = kernel::Summarize(bench);
  std::fputs(kernel::FormatTable(bench, sums).c_str(), stdout);
  if (!tables_out.empty()) {
    HONE_ASSIGN_OR_RETURN(auto files, kernel::BuildTunedTables(bench, sums, cat, raw_path));
    HONE_TRY(kernel::WriteTunedTables(tables_out, files));
    for (const auto& f : files) std::printf("wrote %s/%s/%s\n", tables_out.c_str(), f.subdir.c_str(), f.file_name.c_str());
  }
  return sums;
}

Status VerifyAgainst(const std::string& claims_path, const std::string& raw_path, const KernelOpts& o,
                     const kernel::OpCatalog& cat) {
  HONE_ASSIGN_OR_RETURN(std::string claims_text, sys::ReadFile(claims_path));
  HONE_ASSIGN_OR_RETURN(kernel::BackendResult claims, kernel::ParseBackendResult(claims_text, claims_path));
  HONE_ASSIGN_OR_RETURN(std::string raw_text, sys::ReadFile(raw_path));
  HONE_ASSIGN_OR_RETURN(kernel::BenchResult bench, kernel::ParseBenchResult(raw_text, raw_path));
  std::map<std::string, std::string> current;
  HONE_ASSIGN_OR_RETURN(auto specs, LoadSpecs(o, cat));
  for (const auto& s : specs) current[s.task_id] = s.sha256;
  HONE_ASSIGN_OR_RETURN(auto sums, Report(bench, cat, raw_path, o.tables_out));
  std::printf("\nre-verification of %s's claims:\n", claims.backend.c_str());
  std::fputs(kernel::FormatClaimChecks(kernel::VerifyClaims(claims, sums, current)).c_str(), stdout);
  return Ok();
}

// Runs the harness (kbench.py verify by default) on a package and claims; returns RAW.
Result<std::string> RunHarness(const KernelOpts& o, const Context& ctx, const std::string& package,
                               const std::string& claims, const std::string& raw) {
  sys::ProcessSpec spec;
  spec.argv = o.harness.empty() ? std::vector<std::string>{"python3", Kbench(ctx), "verify"} : Words(o.harness);
  spec.argv.insert(spec.argv.end(), {"--package", package, "--claims", claims, "--out", raw, "--runs",
                                     std::to_string(o.runs)});
  HONE_ASSIGN_OR_RETURN(sys::CommandOutput out, sys::RunCommand(spec, std::chrono::seconds(o.timeout_s)));
  if (!out.status.success()) {
    return Fail(Error{ErrorCode::kUnavailable, "kernel harness failed (" + out.status.ToString() + ")",
                      {{"output_tail", LastLines(out.output, 20)}}});
  }
  return raw;
}

int RunValidate(const KernelOpts& o, const Context& ctx) {
  auto cat = kernel::OpCatalog::Load(OpsPath(o, ctx));
  if (!cat) return ReportError(cat.error());
  auto specs = LoadSpecs(o, *cat);
  if (!specs) return ReportError(specs.error());
  for (const auto& t : *specs) {
    std::printf("%s: ok  task %s, op %s, %zu case(s) + %zu held out, baseline %s, sha256 %s\n", t.source_path.c_str(),
                t.task_id.c_str(), t.op.c_str(), t.cases.size(), t.held_out_cases.size(),
                Join(t.baseline_impls, "|").c_str(), t.sha256.substr(0, 16).c_str());
  }
  return 0;
}

int RunPackage(const KernelOpts& o, const Context& ctx) {
  auto cat = kernel::OpCatalog::Load(OpsPath(o, ctx));
  if (!cat) return ReportError(cat.error());
  auto p = WritePackage(o, *cat, o.out);
  if (!p) return ReportError(p.error());
  std::printf("wrote %s\n", p->c_str());
  return 0;
}

int RunTune(const KernelOpts& o, const Context& ctx) {
  auto cat = kernel::OpCatalog::Load(OpsPath(o, ctx));
  if (!cat) return ReportError(cat.error());
  if (auto s = sys::EnsureDir(o.out_dir); !s) return ReportError(s.error());
  const std::string package = (fs::path(o.out_dir) / "package.json").string();
  const std::string result = (fs::path(o.out_dir) / "result.json").string();
  if (auto p = WritePackage(o, *cat, package); !p) return ReportError(p.error());
  kernel::BackendCommand cmd;
  cmd.argv = o.backend.empty() ? std::vector<std::string>{"python3", Kbench(ctx), "lane"} : Words(o.backend);
  cmd.timeout = std::chrono::seconds(o.timeout_s);
  cmd.log_path = (fs::path(o.out_dir) / "backend.log").string();
  auto r = kernel::RunBackend(cmd, package, result);
  if (!r) return ReportError(r.error());
  std::printf("backend %s: %s, %zu accepted, %zu rejected (claims, not results)\n", r->backend.c_str(),
              r->status.c_str(), r->accepted.size(), r->rejected.size());
  for (const auto& c : r->accepted) {
    std::printf("  claim %s/%s: %s splits=%d x%.3f vs %s\n", c.task_id.c_str(), c.case_id.c_str(),
                c.config.name.c_str(), c.config.num_splits, c.claimed_speedup, c.baseline.c_str());
  }
  if (!o.verify) return 0;
  const std::string raw = (fs::path(o.out_dir) / "raw.json").string();
  auto h = RunHarness(o, ctx, package, result, raw);
  if (!h) return ReportError(h.error());
  if (auto s = VerifyAgainst(result, raw, o, *cat); !s) return ReportError(s.error());
  return 0;
}

int RunVerify(const KernelOpts& o, const Context& ctx) {
  auto cat = kernel::OpCatalog::Load(OpsPath(o, ctx));
  if (!cat) return ReportError(cat.error());
  std::string raw = o.raw;
  if (raw.empty()) {
    if (o.package.empty()) return ReportError(Error{ErrorCode::kInvalidArgument, "give --raw or --package", {}});
    raw = (fs::path(o.claims).parent_path() / "raw.json").string();
    auto h = RunHarness(o, ctx, o.package, o.claims, raw);
    if (!h) return ReportError(h.error());
  }
  if (auto s = VerifyAgainst(o.claims, raw, o, *cat); !s) return ReportError(s.error());
  return 0;
}

int RunReport(const KernelOpts& o, const Context& ctx) {
  auto cat = kernel::OpCatalog::Load(OpsPath(o, ctx));
  if (!cat) return ReportError(cat.error());
  auto text = sys::ReadFile(o.raw);
  if (!text) return ReportError(text.error());
  auto bench = kernel::ParseBenchResult(*text, o.raw);
  if (!bench) return ReportError(bench.error());
  auto sums = Report(*bench, *cat, o.raw, o.tables_out);
  if (!sums) return ReportError(sums.error());
  return 0;
}

}  // namespace

Action RegisterKernel(CLI::App& app, const Context& ctx) {
  auto* cmd = app.add_subcommand("kernel", "Kernel tasks: validate specs, run a tuning backend, re-verify claims");
  cmd->require_subcommand(1);
  auto o = std::make_shared<KernelOpts>();
  auto add_ops = [&](CLI::App* c) { c->add_option("--ops", o->ops, "Op catalogue (default: data/kernel/ops.yaml)"); };

  auto* validate = cmd->add_subcommand("validate", "Parse and validate kernel task specs");
  validate->add_option("specs", o->specs, "Task spec files (YAML)")->required();
  add_ops(validate);

  auto* package = cmd->add_subcommand("package", "Write the backend package (JSON) for task specs");
  package->add_option("specs", o->specs, "Task spec files (YAML)")->required();
  package->add_option("--out", o->out, "Package path")->required();
  package->add_option("--workload", o->workload, "Workload description passed to the backend");
  package->add_option("--device", o->device, "Target device name");
  package->add_option("--arch", o->arch, "Target architecture");
  add_ops(package);

  auto* tune = cmd->add_subcommand("tune", "Run a kernel backend on task specs (default: the built-in lane)");
  tune->add_option("specs", o->specs, "Task spec files (YAML)")->required();
  tune->add_option("--out-dir", o->out_dir, "Where package, result, logs and measurements go")->required();
  tune->add_option("--backend", o->backend, "Backend command (words; --package/--result are appended)");
  tune->add_option("--harness", o->harness, "Verification harness command (default: kbench.py verify)");
  tune->add_option("--timeout-s", o->timeout_s, "Backend / harness timeout in seconds");
  tune->add_option("--runs", o->runs, "Independent measurement runs for re-verification (>= 3)")
      ->check(CLI::Range(3, 100));
  tune->add_flag("--verify", o->verify, "Re-measure the claims with the harness and print verdicts");
  tune->add_option("--tables-out", o->tables_out, "Write verified tuned-config tables here");
  tune->add_option("--device", o->device, "Target device name");
  add_ops(tune);

  auto* verify = cmd->add_subcommand("verify", "Re-verify a backend's claims against hone's own measurement");
  verify->add_option("--claims", o->claims, "The backend's result.json")->required();
  verify->add_option("--raw", o->raw, "An existing harness measurement (hone.kernel.bench/v1)");
  verify->add_option("--package", o->package, "Package to re-measure with the harness (needs the GPU)");
  verify->add_option("--harness", o->harness, "Harness command (default: kbench.py verify)");
  verify->add_option("--specs", o->specs, "Current task specs (refuse measurements of changed specs)");
  verify->add_option("--runs", o->runs, "Independent measurement runs (>= 3)")->check(CLI::Range(3, 100));
  verify->add_option("--timeout-s", o->timeout_s, "Harness timeout in seconds");
  verify->add_option("--tables-out", o->tables_out, "Write verified tuned-config tables here");
  add_ops(verify);

  auto* report = cmd->add_subcommand("report", "Recompute keep decisions and the per-family table from a measurement");
  report->add_option("raw", o->raw, "Harness measurement (hone.kernel.bench/v1)")->required();
  report->add_option("--tables-out", o->tables_out, "Write tuned-config tables (vLLM-style keys) here");
  add_ops(report);

  return [=, &ctx]() -> int {
    if (validate->parsed()) return RunValidate(*o, ctx);
    if (package->parsed()) return RunPackage(*o, ctx);
    if (tune->parsed()) return RunTune(*o, ctx);
    if (verify->parsed()) return RunVerify(*o, ctx);
    if (report->parsed()) return RunReport(*o, ctx);
    return 2;
  };
}

}  // namespace hone::cli
