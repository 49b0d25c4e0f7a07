// bench::verify_advice (include/yolo11/bench/verify.h): A/B of a diagnosis' advice in alternating child processes.
#include "yolo11/bench/verify.h"

#include <spdlog/fmt/fmt.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "yolo11/bench/sweep.h"
#include "yolo11/instrument/advice_check.h"
#include "yolo11/instrument/analyze.h"
#include "yolo11/io/file.h"
#include "yolo11/core/strings.h"

namespace yolo11::bench {

namespace fs = std::filesystem;

namespace {

using core::trim;

double t95(double dof) {  // Student t, two-sided 95 %, interpolated coarsely for non-integer dof
  if (dof < 1) return 12.706;
  static const double t[] = {12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228};
  if (dof <= 10) return t[static_cast<int>(dof) - 1];
  if (dof <= 20) return 2.086 + (20 - dof) * (2.228 - 2.086) / 10;
  if (dof <= 30) return 2.042 + (30 - dof) * (2.086 - 2.042) / 10;
  if (dof <= 60) return 2.0;
  return 1.96;
}

/// Per-step img/s of a child's measured steps (breakdown.csv windows of one step each).
std::vector<double> step_samples(const std::string& run_dir) {
  std::vector<instrument::WindowSummary> warm;
  const auto windows = instrument::read_breakdown_csv(run_dir + "/breakdown.csv", nullptr, &warm);
  std::vector<double> out;
  for (const auto& w : windows)
    if (w.steps > 0 && w.step.total > 0) out.push_back(static_cast<double>(w.images) / w.step.total);
  return out;
}

}  // namespace

std::vector<std::pair<std::string, std::string>> parse_advice(const std::string& advice) {
  std::vector<std::pair<std::string, std::string>> out;
  const size_t at = advice.rfind("try ");
  if (at == std::string::npos) return out;
  const std::string list = advice.substr(at + 4);
  std::vector<std::string> items;
  std::string cur;
  int depth = 0;
  for (char c : list) {
    if (c == '(') ++depth;
    if (c == ')') --depth;
    if (c == ',' && depth == 0) items.push_back(cur), cur.clear();
    else cur += c;
  }
  items.push_back(cur);
  for (auto it : items) {
    it = trim(it);
    size_t k = 0;
    while (k < it.size() && (std::isalnum(static_cast<unsigned char>(it[k])) || it[k] == '_')) ++k;
    if (k == 0 || k >= it.size() || it[k] != '=') continue;
    const std::string key = it.substr(0, k);
    std::string rest = it.substr(k + 1);
    const std::string arrow = "→";
    if (const size_t a = rest.find(arrow); a != std::string::npos) {
      rest = trim(rest.substr(a + arrow.size()));
      if (rest.rfind(key + "=", 0) == 0) rest = rest.substr(key.size() + 1);  // "amp=False → amp=True"
    }
    const std::string value = rest.substr(0, rest.find_first_of(" (\t"));
    if (!value.empty()) out.emplace_back(key, value);
  }
  return out;
}

Verdict compare_arms(const std::vector<double>& a, const std::vector<double>& b) {
  Verdict v;
  auto stats = [](const std::vector<double>& x, double& m, double& var) {
    m = 0, var = 0;
    for (double y : x) m += y;
    m /= static_cast<double>(x.size());
    for (double y : x) var += (y - m) * (y - m);
    var /= static_cast<double>(x.size() - 1);
  };
  if (a.size() < 2 || b.size() < 2) {
    v.text = "rejected: fewer than 2 measured steps in an arm";
    return v;
  }
  double ma, va, mb, vb;
  stats(a, ma, va);
  stats(b, mb, vb);
  const double na = static_cast<double>(a.size()), nb = static_cast<double>(b.size());
  const double se2 = va / na + vb / nb;
  const double dof = se2 > 0 ? se2 * se2 / ((va / na) * (va / na) / (na - 1) + (vb / nb) * (vb / nb) / (nb - 1)) : 1e9;
  const double h = t95(dof) * std::sqrt(se2);
  v.a_img_s = ma, v.b_img_s = mb;
  v.delta = mb - ma, v.lo = v.delta - h, v.hi = v.delta + h;
  v.verified = v.lo > 0;
  v.text = fmt::format("{}: {:+.2f} img/s ({:+.1f} %), 95 % interval [{:+.2f}, {:+.2f}] ({:.2f} → {:.2f} img/s){}",
                       v.verified ? "verified" : "rejected", v.delta, 100.0 * v.delta / ma, v.lo, v.hi, ma, mb,
                       v.verified ? "" : (v.hi < 0 ? ": slower" : ": does not beat noise"));
  return v;
}

VerifyReport verify_advice(const VerifyOptions& o) {
  VerifyReport rep;
  const std::string args_yaml = o.run_dir + "/args.yaml";
  if (!fs::exists(args_yaml)) throw std::runtime_error("--verify " + o.run_dir + ": no args.yaml (not a run directory)");
  if (o.advice.empty()) {
    const auto an = instrument::analyze_run(o.run_dir);
    rep.advice = an.diagnosis.to_string();
    rep.changes = parse_advice(an.diagnosis.advice);
  } else {
    rep.advice = o.advice;
    std::string s = o.advice;
    for (auto& c : s)
      if (c == ' ') c = ',';
    rep.changes = parse_advice("try " + s);
  }
  if (rep.changes.empty())
    throw std::runtime_error("--verify " + o.run_dir + ": the advice names no concrete key=value change to test (" +
                             rep.advice + "); pass advice=key=value,... to test one");
  std::string change_text;
  for (const auto& [k, v] : rep.changes) change_text += (change_text.empty() ? "" : " ") + k + "=" + v;
  spdlog::info("verify: {} | testing {} against the run's settings, {} rounds of A/B, {} + {} steps each", rep.advice,
               change_text, o.rounds, o.warmup, o.steps);
  const std::string vdir = o.run_dir + "/verify";
  fs::remove_all(vdir);
  fs::create_directories(vdir);
  const std::string exe = o.train_exe.empty() ? default_train_exe() : o.train_exe;
  std::vector<double> sa, sb;
  for (int round = 0; round < o.rounds; ++round)
    for (int arm = 0; arm < 2; ++arm) {
      const std::string name = fmt::format("{}{}", arm == 0 ? "A" : "B", round + 1);
      std::vector<std::string> a = {"--cfg", args_yaml};
      a.insert(a.end(), o.passthrough.begin(), o.passthrough.end());
      a.push_back(fmt::format("epochs={}", std::max<int64_t>(100, o.warmup + o.steps)));
      a.insert(a.end(), {fmt::format("max_steps={}", o.warmup + o.steps), fmt::format("instrument_warmup={}", o.warmup),
                         "log_every=1", "instrument=basic", "val=false", "save=false", "plots=false",
                         "tensorboard=false", "metrics_port=0", "resume=false", "verify_advice=false",
                         "project=" + vdir, "name=" + name, "exist_ok=true"});
      if (arm == 1)
        for (const auto& [k, v] : rep.changes) a.push_back(k + "=" + v);
      fs::create_directories(vdir + "/" + name);
      const ChildOutcome c = run_child(exe, a, vdir + "/" + name + "/console.log", o.point_timeout);
      if (c.exit_code != 0)
        throw std::runtime_error(fmt::format("--verify: child {} failed (exit {}); see {}/{}/console.log", name,
                                             c.exit_code, vdir, name));
      const auto s = step_samples(vdir + "/" + name);
      (arm == 0 ? sa : sb).insert((arm == 0 ? sa : sb).end(), s.begin(), s.end());
      double m = 0;
      for (double x : s) m += x;
      spdlog::info("verify: {} {:.2f} img/s over {} steps", name, s.empty() ? 0.0 : m / static_cast<double>(s.size()),
                   s.size());
    }
  rep.verdict = compare_arms(sa, sb);
  rep.summary = fmt::format("advice {} → {}", change_text, rep.verdict.text);
  nlohmann::json j;
  j["advice"] = rep.advice;
  j["changes"] = change_text;
  j["verified"] = rep.verdict.verified;
  j["a_img_s"] = rep.verdict.a_img_s;
  j["b_img_s"] = rep.verdict.b_img_s;
  j["delta_img_s"] = rep.verdict.delta;
  j["interval"] = {rep.verdict.lo, rep.verdict.hi};
  j["rounds"] = o.rounds;
  j["steps"] = o.steps;
  j["warmup"] = o.warmup;
  j["summary"] = rep.summary;
  io::write_file_atomic(o.run_dir + "/advice_verified.json", j.dump(2) + "\n");
  spdlog::info("verify: {}", rep.summary);
  return rep;
}

bool verify_after_training(const std::string& run_dir) {
  try {
    const auto an = instrument::analyze_run(run_dir);
    if (parse_advice(an.diagnosis.advice).empty()) {
      spdlog::info("verify_advice: nothing to test: the diagnosis ({}) names no key=value change", an.diagnosis.to_string());
      return true;
    }
    VerifyOptions o;
    o.run_dir = run_dir;
    const VerifyReport rep = verify_advice(o);
    spdlog::info("instrument: run diagnosis: {}", instrument::with_advice_check(rep.advice, run_dir));
    return true;
  } catch (const std::exception& e) {
    spdlog::error("verify_advice: {}", e.what());
    return false;
  }
}

}  // namespace yolo11::bench
