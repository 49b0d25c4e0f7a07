// Window/epoch statistics, the window log line (and its parser, for yolo11-analyze), the summary table.
#include "yolo11/instrument/stats.h"

#include <spdlog/fmt/fmt.h>

#include <algorithm>
#include <cmath>
#include <regex>

namespace yolo11::instrument {

const StageSummary* WindowSummary::find(const std::string& name) const {
  for (const auto& s : stages) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

double WindowSummary::share(const std::string& name) const {
  const StageSummary* s = find(name);
  return s != nullptr ? s->share : 0.0;
}

double WindowSummary::compute_share() const {
  double sum = 0;
  for (StepStage st : kComputeStages) sum += share(st);
  return sum;
}

double percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const double pos = std::clamp(q, 0.0, 1.0) * static_cast<double>(v.size() - 1);
  const auto lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (pos - static_cast<double>(lo));
}

void summarize_samples(const std::vector<double>& samples, StageSummary& out) {
  out.count = static_cast<int64_t>(samples.size());
  out.total = 0;
  out.max = 0;
  for (double x : samples) out.total += x, out.max = std::max(out.max, x);
  out.mean = samples.empty() ? 0.0 : out.total / static_cast<double>(samples.size());
  out.p50 = percentile(samples, 0.50);
  out.p95 = percentile(samples, 0.95);
}

namespace {
std::string pct(double v) { return v >= 0 ? fmt::format("{:.0f}%", v) : std::string("n/a"); }

// Seconds with about three significant digits and never an exponent: 0.214, 0.0123, 0.00123, 0.000012.
std::string secs(double v) {
  const double a = std::abs(v);
  if (a >= 0.1) return fmt::format("{:.3f}", v);
  if (a >= 0.01) return fmt::format("{:.4f}", v);
  if (a >= 0.001) return fmt::format("{:.5f}", v);
  return fmt::format("{:.6f}", v);
}
}  // namespace

void WindowSummary::set_compute_expected(double expected_s) {
  if (expected_s <= 0) return;
  compute_expected_s = expected_s;
  double total = 0;
  int64_t count = 0;
  for (StepStage st : kComputeStages)
    if (const StageSummary* s = find(st)) total += s->total, count = std::max(count, s->count);
  if (total > 0 && count > 0) compute_speed = expected_s / (total / static_cast<double>(count));
}

std::string format_window_line(const WindowSummary& w) {
  std::string line;
  const double steps = std::max<double>(1.0, static_cast<double>(w.steps));
  for (const auto& s : w.stages) {
    if (s.count == 0 || s.per_epoch) continue;
    line += fmt::format("{}: {}s ({:.0f}%), ", s.name, secs(s.total / steps), 100.0 * s.share);
  }
  line += fmt::format("step: {}s, {:.1f} img/s, data-wait {:.0f}%, GPU {}", secs(w.step.mean), w.images_per_s,
                      100.0 * w.share(StepStage::dataloader), pct(w.gpu_util));
  if (w.cpu_percent >= 0) line += fmt::format(", CPU {:.0f}%", w.cpu_percent);
  if (w.mfu >= 0) line += fmt::format(", MFU {:.1f}% ({:.3g} TFLOP/s)", 100.0 * w.mfu, w.tflops);
  if (w.sm_active >= 0) line += fmt::format(", SM active {:.0f}%", w.sm_active);
  if (w.compute_speed >= 0) line += fmt::format(", compute {:.2f}x calibrated", w.compute_speed);
  return line;
}

bool parse_window_line(const std::string& line, WindowSummary& out) {
  static const std::regex tail_re(
      R"(step: ([0-9.]+)s, ([0-9.]+) img/s, data-wait ([0-9.]+)%, GPU (n/a|[0-9.]+%)(, CPU ([0-9.]+)%)?)");
  static const std::regex stage_re(R"(([A-Za-z_][A-Za-z0-9_]*): ([0-9.]+)s \(([0-9.]+)%\))");
  std::smatch m;
  if (!std::regex_search(line, m, tail_re)) return false;
  WindowSummary w;
  w.step.name = "step";
  w.step.count = 1;
  w.step.mean = w.step.p50 = w.step.p95 = w.step.max = w.step.total = std::stod(m[1].str());
  w.images_per_s = std::stod(m[2].str());
  const std::string gpu = m[4].str();
  w.gpu_util = gpu == "n/a" ? -1.0 : std::stod(gpu.substr(0, gpu.size() - 1));
  if (m[6].matched) w.cpu_percent = std::stod(m[6].str());
  static const std::regex mfu_re(R"(, MFU ([0-9.]+)% \(([0-9.eE+-]+) TFLOP/s\))");
  std::smatch mm;
  const std::string rest = m.suffix().str();
  if (std::regex_search(rest, mm, mfu_re)) w.mfu = std::stod(mm[1].str()) / 100.0, w.tflops = std::stod(mm[2].str());
  const std::string head = line.substr(0, static_cast<size_t>(m.position(0)));
  for (auto it = std::sregex_iterator(head.begin(), head.end(), stage_re); it != std::sregex_iterator(); ++it) {
    StageSummary s;
    s.name = (*it)[1].str();
    s.count = 1;
    s.mean = s.p50 = s.p95 = s.max = s.total = std::stod((*it)[2].str());
    s.share = std::stod((*it)[3].str()) / 100.0;
    w.stages.push_back(s);
  }
  w.steps = 1;
  out = std::move(w);
  return true;
}

std::string format_table(const WindowSummary& w, int64_t epochs) {
  std::string t;
  const std::string epoch = epochs > 0 ? fmt::format("epoch {}/{}", w.epoch + 1, epochs)  // w.epoch counts from 0
                                       : fmt::format("epoch {}", w.epoch + 1);
  if (w.kind == "epoch" && w.first_step < 0) {  // every step of the epoch was in the warm-up window
    t += epoch + " (all its steps in the warm-up window): ";
  } else if (w.kind == "epoch") {
    t += fmt::format("{} (steps {}-{}): ", epoch, w.first_step, w.last_step);
  } else if (w.first_step >= 0) {
    t += fmt::format("{} (steps {}-{}): ", w.kind, w.first_step, w.last_step);
  }
  t += fmt::format("{} steps, {} images, {:.1f} img/s, GPU {}", w.steps, w.images, w.images_per_s, pct(w.gpu_util));
  if (w.cpu_percent >= 0) t += fmt::format(", CPU {:.0f}%", w.cpu_percent);
  if (w.rss_mb >= 0) t += fmt::format(", RSS {:.0f} MiB", w.rss_mb);
  // Contention (instrument/contention.h), where it is large enough to matter.
  if (w.contention.runq_wait >= 0.05) t += fmt::format(", run-queue wait {:.0f}%", 100.0 * w.contention.runq_wait);
  if (w.contention.others_cpu >= 0.25) t += fmt::format(", other processes {:.1f} cores", w.contention.others_cpu);
  if (w.gpu_mem_mb >= 0) t += fmt::format(", GPU mem {:.0f} MiB", w.gpu_mem_mb);
  if (w.peak_alloc_mb >= 0) t += fmt::format(", peak alloc {:.0f} MiB", w.peak_alloc_mb);
  if (w.mfu >= 0) t += fmt::format(", MFU {:.1f}% ({:.3g} TFLOP/s)", 100.0 * w.mfu, w.tflops);
  if (w.compute_speed >= 0)
    t += fmt::format(", compute {:.2f}x calibrated ({:.3f} s expected)", w.compute_speed, w.compute_expected_s);
  if (w.sm_active >= 0)
    t += fmt::format(", SM active {:.0f}%, SM occupancy {:.0f}%, tensor active {:.0f}%, DRAM bw {:.0f}%", w.sm_active,
                     w.sm_occupancy, w.tensor_active, w.dram_bw);
  t += "\n";
  t += fmt::format("{:<12} {:>7} {:>10} {:>10} {:>10} {:>10} {:>9}\n", "stage", "count", "mean", "p50", "p95", "max",
                   "% of step");
  auto row = [&](const StageSummary& s) {
    t += fmt::format("{:<12} {:>7} {:>9.4f}s {:>9.4f}s {:>9.4f}s {:>9.4f}s {:>8.1f}%{}\n", s.name, s.count, s.mean,
                     s.p50, s.p95, s.max, 100.0 * s.share, s.per_epoch ? " of epoch" : "");
  };
  for (const auto& s : w.stages) {
    if (s.count > 0 && !s.per_epoch) row(s);
  }
  StageSummary step = w.step;
  step.name = "step";
  step.share = 1.0;
  row(step);
  for (const auto& s : w.stages) {
    if (s.count > 0 && s.per_epoch) row(s);
  }
  return t;
}

}  // namespace yolo11::instrument
