// The in-run compute calibration and its per-setting cache (engine/calibration.h).
#include "yolo11/engine/calibration.h"

#include <ATen/Parallel.h>
#include <torch/version.h>
#include <spdlog/fmt/fmt.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "yolo11/core/compat.h"
#include "yolo11/core/strings.h"
#include "yolo11/data/loader.h"
#include "yolo11/instrument/mfu.h"
#include "yolo11/instrument/sampler.h"
#include "yolo11/io/file.h"

namespace yolo11::engine {

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

constexpr double kStaleAfterS = 30.0 * 24 * 3600;  // re-measure a month-old figure (drivers, libraries, firmware)
constexpr double kMinSpanForStatS = 0.5;           // /proc/stat counts 10 ms ticks: shorter spans read noise
constexpr int kMaxTries = 3;                       // epochs whose first steps are tried on a busy machine

fs::path cache_path() { return fs::path(io::user_cache_dir()) / "compute_calibration.json"; }

nlohmann::json read_cache() {
  const fs::path p = cache_path();
  std::error_code ec;
  if (fs::exists(p, ec)) {
    try {
      auto j = nlohmann::json::parse(io::read_file(p.string()), nullptr, /*allow_exceptions=*/false);
      if (j.is_object()) return j;
    } catch (const std::exception&) {}
  }
  return nlohmann::json::object();
}

bool write_cache(const nlohmann::json& j) {
  try {
    fs::create_directories(cache_path().parent_path());
    io::write_file_atomic(cache_path().string(), j.dump(2));
    return true;
  } catch (const std::exception& e) {
    spdlog::debug("compute calibration: cache not written ({})", e.what());
    return false;
  }
}

/// The CUDA device index of `device` (an unindexed "cuda" is device 0).
int cuda_index(const c10::Device& device) { return device.index() < 0 ? 0 : device.index(); }

std::string device_name(const c10::Device& device) {
  if (!device.is_cuda()) return instrument::cpu_model();
  const int idx = cuda_index(device);
  if (const auto nvml = instrument::Nvml::open(idx)) return nvml->device_name();
  return fmt::format("cuda:{}", idx);
}

double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count();
}

}  // namespace

std::string compute_calibration_key(const model::ModelOptions& mo, int64_t batch, int64_t imgsz, const AmpPolicy& amp,
                                    const c10::Device& device) {
  return fmt::format("{} scale {} nc {} | batch {} | imgsz {} | {} | channels_last | {} threads | {} | torch {}",
                     fs::path(mo.yaml).filename().string(), mo.scale, mo.nc, batch, imgsz, amp.precision(),
                     at::get_num_threads(), device_name(device),
                     fmt::format("{}.{}.{}", TORCH_VERSION_MAJOR, TORCH_VERSION_MINOR, TORCH_VERSION_PATCH));
}

ComputeCalibration cached_compute_calibration(const std::string& key) {
  ComputeCalibration c;
  c.key = key;
  const nlohmann::json cache = read_cache();
  if (!cache.contains(key) || !cache[key].is_object()) return c;
  const auto& e = cache[key];
  const double s = e.value("step_s", 0.0), at = e.value("measured_at", 0.0);
  if (!(s > 0) || unix_now() - at >= kStaleAfterS) return c;
  c.step_s = s;
  c.cached = true;
  c.line = fmt::format("compute calibration: forward+loss+backward {:.3f} s per step expected ({}; cached in {})", s,
                       key, cache_path().string());
  return c;
}

bool store_compute_calibration(const std::string& key, double step_s) {
  nlohmann::json cache = read_cache();
  cache[key] = {{"step_s", step_s}, {"measured_at", unix_now()}};
  return write_cache(cache);
}

bool forget_compute_calibration(const std::string& key) {
  nlohmann::json cache = read_cache();
  if (!cache.contains(key)) return false;
  cache.erase(key);
  return write_cache(cache);
}

std::string calibration_contention(const std::vector<CalibrationSpan>& spans, int cores,
                                   const instrument::DiagnosisThresholds& t) {
  cores = std::max(1, cores);
  std::vector<std::string> why;
  double total = 0, others = 0, steal = 0, runq = 0, switches = 0, faults = 0, throttled = 0;
  int unparked = 0;
  for (const auto& s : spans) {
    total += s.compute_s;
    runq = std::max(runq, s.rates.runq_wait);
    switches = std::max(switches, s.rates.voluntary_switches_per_s);
    faults = std::max(faults, s.rates.major_faults_per_s);
    throttled = std::max(throttled, s.rates.quota_throttled);
    others += std::max(0.0, s.rates.others_cpu) * s.compute_s;
    steal += std::max(0.0, s.rates.steal) * s.compute_s;
    unparked = std::max(unparked, s.unparked_workers);
  }
  if (runq >= 0.5 * t.runq_wait)
    why.push_back(fmt::format("run-queue wait {:.0f}% of the trainer threads' time", 100 * runq));
  if (throttled >= t.quota_throttled)
    why.push_back(fmt::format("throttled by the CPU quota in {:.0f}% of its periods", 100 * throttled));
  if (switches >= t.voluntary_switches_per_s)
    why.push_back(fmt::format("{:.0f} voluntary context switches/s (the intra-op threads slept)", switches));
  if (faults >= t.major_faults_per_s) why.push_back(fmt::format("{:.0f} major page faults/s", faults));
  if (unparked > 0) why.push_back(fmt::format("{} loader worker{} still running", unparked, unparked == 1 ? "" : "s"));
  if (total >= kMinSpanForStatS) {
    if (others / total >= t.others_cpu_share * cores)
      why.push_back(fmt::format("other processes {:.1f} of {} cores", others / total, cores));
    if (steal / total >= t.others_cpu_share * cores)
      why.push_back(fmt::format("steal {:.1f} of {} cores", steal / total, cores));
  }
  return core::join(why, ", ");
}

InRunCalibration::InRunCalibration(std::string key, int64_t first_step, int cores, c10::Device device)
    : key_(std::move(key)), first_step_(first_step), cores_(cores), device_(device) {
  result_.key = key_;
}

bool InRunCalibration::wants(int64_t step) const {
  return !finished_ && step >= first_step_ && step < first_step_ + kTimedSteps;
}

void InRunCalibration::begin(data::Loader* loader) {
  loader_ = loader;
  unparked_ = loader_ != nullptr ? loader_->pause() : 0;
  if (device_.is_cuda()) compat::synchronize(cuda_index(device_));
  c0_ = reader_.read();
  cpu0_ = instrument::process_cpu_seconds();
  t0_ns_ = now_ns();
  in_span_ = true;
}

void InRunCalibration::abandon() {
  in_span_ = false;
  if (loader_ != nullptr) loader_->resume();
  loader_ = nullptr;
  spans_.clear();
}

bool InRunCalibration::end() {
  if (!in_span_) return false;
  in_span_ = false;
  if (device_.is_cuda()) compat::synchronize(cuda_index(device_));
  CalibrationSpan s;
  s.compute_s = 1e-9 * static_cast<double>(now_ns() - t0_ns_);
  const instrument::ContentionCounters c1 = reader_.read();
  s.rates = instrument::contention_rates(c0_, c1, s.compute_s, instrument::process_cpu_seconds() - cpu0_);
  s.unparked_workers = unparked_;
  if (loader_ != nullptr) loader_->resume();
  loader_ = nullptr;
  spans_.push_back(s);
  if (static_cast<int>(spans_.size()) < kTimedSteps) return false;
  ++tries_;
  double best = spans_[0].compute_s;
  for (const auto& sp : spans_) best = std::min(best, sp.compute_s);
  const std::string busy = calibration_contention(spans_, cores_);
  if (busy.empty()) {
    finished_ = true;
    result_.step_s = best;
    const bool stored = store_compute_calibration(key_, best);
    result_.line = fmt::format(
        "compute calibration: forward+loss+backward {:.3f} s per step expected, measured on "
        "steps {}-{} with the loader paused ({}; {})",
        best, first_step_, first_step_ + kTimedSteps - 1, key_,
        stored ? "cached in " + cache_path().string() : std::string("not cached"));
  } else {
    result_.line = fmt::format(
        "compute calibration: not taken, the machine was busy over steps {}-{} ({}); no "
        "expected speed{}",
        first_step_, first_step_ + kTimedSteps - 1, busy,
        tries_ < kMaxTries ? ", tried again at the next epoch" : " for this run");
    if (tries_ >= kMaxTries) finished_ = true;
  }
  spans_.clear();
  return true;
}

void InRunCalibration::on_epoch_start(int64_t first_step_of_epoch) {
  if (finished_ || tries_ == 0) return;
  first_step_ = first_step_of_epoch + 1;
}

}  // namespace yolo11::engine
