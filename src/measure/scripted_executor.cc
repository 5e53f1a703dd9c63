#include "measure/scripted_executor.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <thread>

#include "core/rng.h"
#include "core/strings.h"
#include "sys/clock.h"
#include "sys/files.h"
#include "sys/process.h"

namespace hone::measure {

namespace fs = std::filesystem;
using json = nlohmann::json;

Result<std::unique_ptr<ScriptedExecutor>> ScriptedExecutor::Load(const std::string& path, const std::string& run_dir) {
  HONE_ASSIGN_OR_RETURN(std::string text, sys::ReadFile(path));
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return InvalidArgument(path + ": not a JSON object");
  auto e = std::unique_ptr<ScriptedExecutor>(new ScriptedExecutor());
  e->run_dir_ = run_dir;
  try {
    e->base_ = j.value("base", e->base_);
    e->noise_ = j.value("noise", e->noise_);
    e->seed_ = j.value("seed", e->seed_);
    e->trial_ms_ = j.value("trial_ms", e->trial_ms_);
    e->factors_ = j.value("factors", e->factors_);
    e->point_factors_ = j.value("point_factors", e->point_factors_);
    e->launch_failures_ = j.value("launch_failures", e->launch_failures_);
    e->inaccurate_ = j.value("inaccurate", e->inaccurate_);
    e->itl_ms_ = j.value("itl_ms", e->itl_ms_);
  } catch (const json::exception& ex) {
    return InvalidArgument(path + ": " + ex.what());
  }
  return e;
}

int ScriptedExecutor::FinishedLike(const TrialRequest& req) const {
  int n = 0;
  std::error_code ec;
  for (const auto& d : fs::directory_iterator(fs::path(run_dir_) / "trials", ec)) {
    if (d.path().filename() == req.id) continue;
    auto t = ReadTrialOutcome(d.path().string());
    if (t && t->role == req.role && t->config == req.config) ++n;
  }
  return n;
}

Result<TrialOutcome> ScriptedExecutor::Run(const TrialRequest& req) {
  TrialOutcome o;
  o.id = req.id;
  o.role = req.role;
  o.config = req.config;
  o.point = req.point;
  o.retry_of = req.retry_of;
  o.dir = (fs::path(run_dir_) / "trials" / req.id).string();
  o.start_unix_us = sys::DefaultClock().WallMicros();
  const int k = FinishedLike(req);
  HONE_TRY(sys::EnsureDir(o.dir));
  // The stand-in server: what a kill -9 of hone must not leave behind.
  HONE_ASSIGN_OR_RETURN(auto server, sys::ChildProcess::Start({.argv = {"sleep", "120"}}));
  HONE_TRY(sys::AppendLineSync(fs::path(run_dir_) / "scripted-servers.pids", std::to_string(server->pid())));
  std::this_thread::sleep_for(std::chrono::milliseconds(trial_ms_));
  server->Stop(std::chrono::milliseconds(1000));
  o.wall_s = trial_ms_ / 1000.0;
  o.command = "scripted " + req.config.ToString();
  for (const auto& [knob, value] : req.config.values()) {
    auto it = launch_failures_.find(knob + "=" + value);
    if (it != launch_failures_.end()) {
      o.failure_kind = it->second;
      o.failure_detail = "scripted launch failure";
      HONE_TRY(WriteTrialOutcome(o));
      return o;
    }
  }
  double value = base_;
  auto at_point = point_factors_.find(std::to_string(req.point.concurrency));
  for (const auto& [knob, v] : req.config.values()) {
    auto it = factors_.find(knob + "=" + v);
    if (it != factors_.end()) value *= it->second;
    if (at_point != point_factors_.end()) {
      auto pt = at_point->second.find(knob + "=" + v);
      if (pt != at_point->second.end()) value *= pt->second;
    }
  }
  Rng rng(MixSeed(MixSeed(seed_, std::hash<std::string>{}(req.config.Hash() + "|" + std::string(TrialRoleName(req.role)))),
                  static_cast<uint64_t>(k)));
  o.launched = true;
  o.valid = true;
  o.objective = value * (1 + noise_ * rng.NextGaussian());
  o.result.total_tps = o.objective;
  o.result.per_gpu_total_tps = o.objective;
  o.result.intvty["p50"] = 10;
  if (!itl_ms_.empty()) {
    double per_load = itl_ms_.count("(stock)") ? itl_ms_.at("(stock)") : 0;
    for (const auto& [knob, v] : req.config.values()) {
      auto it = itl_ms_.find(knob + "=" + v);
      if (it != itl_ms_.end()) {
        per_load = it->second;
        break;
      }
    }
    const double itl_s = per_load * req.point.concurrency / 1e3;
    o.result.successful = o.result.total = 8;
    o.result.duration_s = 10;
    for (int i = 0; i < 8; ++i) {
      o.result.samples.ttft.push_back(0.1);
      o.result.samples.tpot.push_back(itl_s);
      o.result.samples.e2el.push_back(0.1 + 4 * itl_s);
      for (int g = 0; g < 4; ++g) o.result.samples.itl.push_back(itl_s);
    }
  }
  HONE_TRY(WriteTrialOutcome(o));
  return o;
}

Result<AccuracyOutcome> ScriptedExecutor::CheckAccuracy(const Config& config, const std::string&, const std::string&) {
  AccuracyOutcome a;
  a.ran = true;
  for (const auto& [knob, value] : config.values()) {
    if (std::find(inaccurate_.begin(), inaccurate_.end(), knob + "=" + value) != inaccurate_.end()) a.passed = false;
  }
  a.token_agreement = a.passed ? 1.0 : 0.5;
  a.detail = a.passed ? "scripted: token agreement 100%" : "scripted: token agreement 50%";
  return a;
}

}  // namespace hone::measure
