// One sweep point's measurements, read from the child's run dir (include/yolo11/bench/sweep.h).
#include <spdlog/fmt/fmt.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "yolo11/bench/sweep.h"
#include "yolo11/instrument/analyze.h"
#include "yolo11/instrument/profiler.h"
#include "yolo11/instrument/whatif.h"

namespace yolo11::bench {

namespace {

/// Two-sided 95 % Student t quantile for `dof` degrees of freedom.
double t95(int64_t dof) {
  static const double t[] = {0,     12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
                             2.201, 2.179,  2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080,
                             2.074, 2.069,  2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042};
  if (dof <= 0) return 0;
  if (dof <= 30) return t[dof];
  if (dof <= 60) return 2.00;
  return 1.96;
}

}  // namespace

void read_point_measurements(const std::string& run_dir, PointResult& r) {
  namespace fs = std::filesystem;
  const std::string csv = run_dir + "/breakdown.csv";
  if (!fs::exists(csv)) {
    r.status = Status::error;
    r.reason = "the child wrote no breakdown.csv";
    return;
  }
  std::vector<instrument::WindowSummary> warm;
  const auto windows = instrument::read_breakdown_csv(csv, nullptr, &warm);
  if (windows.empty()) {
    r.status = Status::error;
    r.reason = "no measured step in breakdown.csv (the run ended within its warm-up steps)";
    return;
  }
  const instrument::WindowSummary all = instrument::combine_windows(windows);
  std::vector<double> t;  // per-step seconds
  double cpu_w = 0, cpu_t = 0;
  for (const auto& w : windows) {
    if (w.steps <= 0) continue;
    for (int64_t i = 0; i < w.steps; ++i) t.push_back(w.step.total / static_cast<double>(w.steps));
    if (w.cpu_percent >= 0) cpu_w += w.cpu_percent * w.step.total, cpu_t += w.step.total;
    r.gpu_util = std::max(r.gpu_util, w.gpu_util);  // max over steps: what the device reached
    r.gpu_mem_mb = std::max(r.gpu_mem_mb, w.gpu_mem_mb);
    r.peak_alloc_mb = std::max(r.peak_alloc_mb, w.peak_alloc_mb);
  }
  if (all.gpu_util >= 0) r.gpu_util = all.gpu_util;  // the time-weighted mean when combine_windows has one
  r.steps = static_cast<int64_t>(t.size());
  r.images = all.images;
  double sum = 0;
  for (double x : t) sum += x;
  const double n = static_cast<double>(t.size());
  const double m = sum / n;
  double ss = 0;
  for (double x : t) ss += (x - m) * (x - m);
  const double sd = t.size() > 1 ? std::sqrt(ss / (n - 1)) : 0.0;
  const double h = t95(r.steps - 1) * sd / std::sqrt(n);
  const double per_step_images = static_cast<double>(r.images) / n;
  r.img_s = sum > 0 ? static_cast<double>(r.images) / sum : -1;
  r.img_s_lo = per_step_images / (m + h);
  r.img_s_hi = m - h > 0 ? per_step_images / (m - h) : per_step_images / (m * 1e-3);
  r.step_ms_mean = 1000 * m;
  r.step_ms_p50 = 1000 * instrument::percentile(t, 0.5);
  r.step_ms_p95 = 1000 * instrument::percentile(t, 0.95);
  for (const char* s : instrument::kStepStages)
    if (all.find(s) != nullptr) r.shares[s] = all.share(s);
  r.data_wait = all.share(instrument::StepStage::dataloader);
  r.cpu_percent = cpu_t > 0 ? cpu_w / cpu_t : -1;
  // MFU and SM activity when the child's summary.json has them (instrumentation issue 14).
  std::ifstream js(run_dir + "/summary.json");
  if (js) {
    try {
      const auto j = nlohmann::json::parse(js);
      const auto& run = j.contains("run") ? j["run"] : j;
      if (run.contains("mfu") && run["mfu"].is_number()) r.mfu = run["mfu"].get<double>();
      if (run.contains("sm_active") && run["sm_active"].is_number()) r.sm_activity = run["sm_active"].get<double>();  // GPM
    } catch (const std::exception&) {  // a summary from an older trainer: leave n/a
    }
  }
  // The child's device, cores and threads for the what-if's CPU contention (the same reading as yolo11-analyze).
  instrument::CpuShare cpu;
  try {
    std::string context_source;
    cpu = instrument::cpu_share(instrument::load_context(run_dir, context_source));
  } catch (const std::exception&) {  // an unreadable args.yaml: no contention term, as for an older trainer
  }
  for (const auto& x : instrument::what_if(all, static_cast<int>(r.point.workers), cpu))
    if (x.stage == instrument::stage_name(instrument::StepStage::dataloader)) r.whatif_no_data_ms = 1000 * x.step_s;
  r.status = Status::ok;
  r.reason.clear();
}

}  // namespace yolo11::bench
