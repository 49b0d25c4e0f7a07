// OpsProfiler (include/yolo11/instrument/ops_profile.h): LibTorch's profiler over a step window, our stages as user
// scopes. The one place that includes the profiler headers; LibTorch 1.13 vs 2.x differences are kept here:
//   1.13: KinetoEvent::startUs()/durationUs() (µs);  ≥ 2.1: startNs()/durationNs() (ns)
//   ProfilerConfig, ActivityType, ProfilerState: torch::profiler::impl in both (orchestration/observer.h).
#include <ATen/record_function.h>
#include <spdlog/fmt/fmt.h>
#include <spdlog/spdlog.h>
#include <torch/csrc/autograd/profiler_kineto.h>
#include <torch/version.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <stdexcept>

#include "yolo11/instrument/ops_profile.h"
#include "yolo11/instrument/profiler.h"

namespace yolo11::instrument {

namespace {

namespace tp = torch::profiler::impl;
namespace ap = torch::autograd::profiler;

#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 1)
int64_t start_ns(const ap::KinetoEvent& e) { return static_cast<int64_t>(e.startNs()); }
int64_t dur_ns(const ap::KinetoEvent& e) { return static_cast<int64_t>(e.durationNs()); }
#else
int64_t start_ns(const ap::KinetoEvent& e) { return static_cast<int64_t>(e.startUs()) * 1000; }
int64_t dur_ns(const ap::KinetoEvent& e) { return static_cast<int64_t>(e.durationUs()) * 1000; }
#endif

std::string shapes_of(const ap::KinetoEvent& e) {
  if (!e.hasShapes()) return {};
  std::string s = "[";
  bool first = true;
  for (const auto& dims : e.shapes()) {
    s += first ? "[" : ", [";
    first = false;
    for (size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
    s += "]";
  }
  return s + "]";
}

void write_file(const std::filesystem::path& p, const std::string& text) {
  const auto tmp = p.string() + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary);
    f << text;
    if (!f) throw std::runtime_error("cannot write " + tmp);
  }
  std::filesystem::rename(tmp, p);
}

double secs(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

struct OpsProfiler::Impl {
  std::vector<std::unique_ptr<at::RecordFunction>> scopes;  // open user scopes, innermost last
  std::vector<std::pair<std::string, double>> timers;       // stage → seconds over the window
  double wall_s = 0;
  int64_t steps = 0, first = -1, last = -1;
  double baseline = -1;
};

OpsProfiler::OpsProfiler(OpsProfileOptions o) : o_(std::move(o)), impl_(std::make_unique<Impl>()) {
  if (o_.start < 0 || o_.stop <= o_.start)
    throw std::runtime_error(fmt::format("profile_ops={}:{} is empty or negative; use START:STOP with 0 ≤ START < STOP "
                                         "(global step indices)", o_.start, o_.stop));
  if (o_.top < 1) o_.top = 20;
}

OpsProfiler::~OpsProfiler() {
  try {
    finish();
  } catch (const std::exception& e) {
    spdlog::error("profile_ops: {}", e.what());
  }
}

void OpsProfiler::start() {
  tp::ProfilerConfig cfg(tp::ProfilerState::KINETO, /*report_input_shapes=*/o_.shapes, /*profile_memory=*/o_.memory,
                         /*with_stack=*/false, /*with_flops=*/false, /*with_modules=*/false);
  std::set<tp::ActivityType> act = {tp::ActivityType::CPU};
  if (o_.cuda) act.insert(tp::ActivityType::CUDA);
  ap::prepareProfiler(cfg, act);
  ap::enableProfiler(cfg, act);
  active_ = true;
}

void OpsProfiler::begin_step(int64_t step, double baseline_step_s) {
  if (done_) return;
  if (active_ && step >= o_.stop) {
    stop();
    return;
  }
  if (!active_ && step >= o_.start && step < o_.stop) {
    impl_->baseline = baseline_step_s;
    spdlog::info("profile_ops: recording operators of steps {}-{} (LibTorch profiler{}{})", step, o_.stop - 1,
                 o_.shapes ? ", input shapes" : "", o_.memory ? ", memory" : "");
    start();
  }
  if (!active_) return;
  if (impl_->first < 0) impl_->first = step;
  impl_->last = step;
  ++impl_->steps;
  push(nullptr);  // the step scope: "ProfilerStep#<step>"
  auto& rf = impl_->scopes.back();
  if (rf && rf->isActive()) rf->before(fmt::format("ProfilerStep#{}", step));
}

void OpsProfiler::end_step(double wall_s) {
  if (!active_) return;
  impl_->scopes.clear();  // closes the step scope (and any stage left open)
  impl_->wall_s += wall_s;
  if (impl_->last >= o_.stop - 1) stop();  // the window's last step: val/checkpoint after it stay out
}

void OpsProfiler::push(const char* name) {
  if (!active_) return;
  auto rf = std::make_unique<at::RecordFunction>(at::RecordScope::USER_SCOPE);
  if (name != nullptr && rf->isActive()) rf->before(name);
  impl_->scopes.push_back(std::move(rf));
}

void OpsProfiler::pop() {
  if (!active_ || impl_->scopes.empty()) return;
  impl_->scopes.pop_back();  // ~RecordFunction ends the scope
}

void OpsProfiler::add_timer(const char* stage, double seconds) {
  if (!active_) return;
  for (auto& [n, s] : impl_->timers)
    if (n == stage) {
      s += seconds;
      return;
    }
  impl_->timers.emplace_back(stage, seconds);
}

void OpsProfiler::stop() {
  const auto t0 = std::chrono::steady_clock::now();
  impl_->scopes.clear();
  auto result = ap::disableProfiler();
  active_ = false;
  done_ = true;
  std::vector<OpEvent> ev;
  ev.reserve(result ? result->events().size() : 0);
  bool device_seen = false;
  if (result) {
    for (const auto& e : result->events()) {
      OpEvent o;
      o.name = e.name();
      o.shapes = o_.shapes ? shapes_of(e) : std::string();
      o.start_ns = start_ns(e);
      o.dur_ns = dur_ns(e);
      o.user_scope = e.scope() == static_cast<uint8_t>(at::RecordScope::USER_SCOPE);
      o.device = e.deviceType() != c10::DeviceType::CPU;
      o.thread = o.device ? static_cast<uint64_t>(e.deviceResourceId()) : e.startThreadId();
      if (o.name == "[memory]") o.bytes = e.nBytes(), o.device = false;
      device_seen = device_seen || o.device;
      ev.push_back(std::move(o));
    }
  }
  std::vector<std::string> names(kStepStages.begin(), kStepStages.end());
  names.emplace_back(stage_name(StepStage::allreduce));
  names.insert(names.end(), kEpochStages.begin(), kEpochStages.end());
  for (const auto& [n, s] : impl_->timers)
    if (std::find(names.begin(), names.end(), n) == names.end()) names.push_back(n);
  OpsReport r = aggregate_ops(ev, names, o_.shapes);
  r.first_step = impl_->first;
  r.last_step = impl_->last;
  r.steps = impl_->steps;
  for (auto& s : r.stages)
    for (const auto& [n, sec] : impl_->timers)
      if (n == s.stage) s.timer_us = sec * 1e6;
  r.window_step_s = impl_->steps > 0 ? impl_->wall_s / static_cast<double>(impl_->steps) : -1;
  r.baseline_step_s = impl_->baseline;
  if (!o_.run_dir.empty()) {
    const std::filesystem::path dir(o_.run_dir);
    std::filesystem::create_directories(dir);
    // Kineto's own trace where LibTorch has Kineto (it carries the CUDA kernels); otherwise save() writes nothing
    // (or throws) and the events recorded above are written as a Chrome trace here.
    bool kineto_trace = false;
    try {
      if (result) result->save((dir / "ops_trace.json").string());
      kineto_trace = std::filesystem::exists(dir / "ops_trace.json") && std::filesystem::file_size(dir / "ops_trace.json") > 0;
    } catch (const std::exception&) {
      kineto_trace = false;
    }
    r.collector = kineto_trace || device_seen ? "kineto" : "kineto API without Kineto (CPU operators only)";
    if (!kineto_trace) write_file(dir / "ops_trace.json", ops_chrome_trace(ev));
    r.postprocess_s = secs(t0);
    write_file(dir / "ops.txt", format_ops_table(r, o_.top) +
                                    "\nper stage (sums over the profiled steps, per step):\n" + format_ops_stages(r) +
                                    "\noperators of each stage (calls and self time under that stage only, over the "
                                    "profiled steps):\n" +
                                    format_ops_by_stage(r, o_.top));
    write_file(dir / "ops.csv", ops_csv(r));
  } else {
    r.collector = device_seen ? "kineto" : "kineto API without Kineto (CPU operators only)";
    r.postprocess_s = secs(t0);
  }
  std::string cost = fmt::format("{:.3f} s/step while recording", r.window_step_s);
  if (r.baseline_step_s > 0)
    cost += fmt::format(" vs {:.3f} s/step in the window before (+{:.0f}%)", r.baseline_step_s,
                        100.0 * (r.window_step_s / r.baseline_step_s - 1.0));
  spdlog::info("profile_ops: steps {}-{} ({}), {} events; cost {}, post-processing {:.2f} s{}\n{}{}", r.first_step,
               r.last_step, r.collector, ev.size(), cost, r.postprocess_s,
               o_.run_dir.empty() ? "" : "; wrote ops.txt, ops.csv, ops_trace.json", format_ops_table(r, 5),
               format_ops_stages(r));
  report_ = std::move(r);
}

void OpsProfiler::finish() {
  if (active_) stop();
  done_ = true;
}

}  // namespace yolo11::instrument
