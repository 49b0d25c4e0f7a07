// Isolated forward + loss + backward calibration of the run's setting, cached per setting (engine/calibration.h).
#include "yolo11/engine/calibration.h"

#include <ATen/core/Generator.h>
#include <torch/version.h>
#include <spdlog/fmt/fmt.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "yolo11/core/compat.h"
#include "yolo11/instrument/mfu.h"
#include "yolo11/instrument/sampler.h"
#include "yolo11/io/file.h"
#include "yolo11/loss/detection_loss.h"

namespace yolo11::engine {

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

constexpr double kStaleAfterS = 30.0 * 24 * 3600;  // re-measure a month-old figure (drivers, libraries, firmware)
constexpr int64_t kBoxesPerImage = 4;

fs::path cache_path() { return fs::path(io::user_cache_dir()) / "compute_calibration.json"; }

nlohmann::json read_cache() {
  const fs::path p = cache_path();
  if (fs::exists(p)) {
    auto j = nlohmann::json::parse(io::read_file(p.string()), nullptr, /*allow_exceptions=*/false);
    if (j.is_object()) return j;
  }
  return nlohmann::json::object();
}

void write_cache(const nlohmann::json& j) {
  try {
    fs::create_directories(cache_path().parent_path());
    io::write_file_atomic(cache_path().string(), j.dump(2));
  } catch (const std::exception& e) {
    spdlog::debug("compute calibration: cache not written ({})", e.what());
  }
}

std::string device_name(const c10::Device& device) {
  if (!device.is_cuda()) return instrument::cpu_model();
  const int idx = device.index() < 0 ? 0 : device.index();
  if (const auto nvml = instrument::Nvml::open(idx)) return nvml->device_name();
  return fmt::format("cuda:{}", idx);
}

double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

ComputeCalibration calibrate_compute(const model::ModelOptions& mo, int64_t batch, int64_t imgsz, const AmpPolicy& amp,
                                     const c10::Device& device, bool use_cache) {
  ComputeCalibration c;
  const auto t0 = Clock::now();
  const int threads = at::get_num_threads();
  c.key = fmt::format("{} scale {} nc {} | batch {} | imgsz {} | {} | channels_last | {} threads | {} | torch {}",
                      fs::path(mo.yaml).filename().string(), mo.scale, mo.nc, batch, imgsz, amp.precision(),
                      threads, device_name(device),
                      fmt::format("{}.{}.{}", TORCH_VERSION_MAJOR, TORCH_VERSION_MINOR, TORCH_VERSION_PATCH));
  nlohmann::json cache = read_cache();
  if (use_cache && cache.contains(c.key) && cache[c.key].is_object()) {
    const double s = cache[c.key].value("step_s", 0.0), at = cache[c.key].value("measured_at", 0.0);
    if (s > 0 && unix_now() - at < kStaleAfterS) {
      c.step_s = s;
      c.cached = true;
      c.took_s = std::chrono::duration<double>(Clock::now() - t0).count();
      c.line = fmt::format("compute calibration: forward+loss+backward {:.3f} s per step expected ({}; cached in {})",
                           s, c.key, cache_path().string());
      return c;
    }
  }
  try {
    // The calibration model's initialisation and the synthetic targets draw from the default CPU generator: its
    // state is put back, so a run draws the same numbers whether or not it calibrated.
    auto gen = at::detail::getDefaultCPUGenerator();
    const auto rng_state = gen.get_state();
    struct Restore {
      at::Generator g;
      at::Tensor s;
      ~Restore() { g.set_state(s); }
    } restore{gen, rng_state};
    model::YOLO net(mo);
    net->to(device);
    model::to_channels_last(*net);
    net->train();
    loss::DetectionLoss criterion(mo.nc, net->strides(), net->reg_max());
    const auto x = torch::full({batch, 3, imgsz, imgsz}, 0.5, torch::TensorOptions().device(device))
                       .contiguous(torch::MemoryFormat::ChannelsLast);
    const int64_t n = batch * kBoxesPerImage;
    const auto bidx = torch::arange(batch, torch::kLong).repeat_interleave(kBoxesPerImage);
    const auto cls = torch::arange(n, torch::kLong).remainder(mo.nc);
    auto boxes = torch::empty({n, 4});
    boxes.select(1, 0).fill_(0.3), boxes.select(1, 1).fill_(0.6), boxes.select(1, 2).fill_(0.2);
    boxes.select(1, 3).fill_(0.25);
    const int idx = device.is_cuda() ? (device.index() < 0 ? 0 : device.index()) : 0;
    double best = 0;
    for (int i = 0; i < 3; ++i) {  // 1 warm-up (primitive creation, allocator growth) + 2 timed
      const auto s0 = Clock::now();
      {
        compat::AutocastGuard ac(device.type(), amp.autocast, amp.dtype);
        auto feats = net->forward_feats(x);
        auto out = criterion(feats, bidx, cls, boxes);
        out.total.backward();
      }
      if (device.is_cuda()) compat::synchronize(idx);
      const double dt = std::chrono::duration<double>(Clock::now() - s0).count();
      net->zero_grad();
      if (i > 0) best = best > 0 ? std::min(best, dt) : dt;
    }
    c.step_s = best;
  } catch (const std::exception& e) {
    c.took_s = std::chrono::duration<double>(Clock::now() - t0).count();
    c.line = fmt::format("compute calibration failed ({}): no expected speed for this run", e.what());
    return c;
  }
  c.took_s = std::chrono::duration<double>(Clock::now() - t0).count();
  cache[c.key] = {{"step_s", c.step_s}, {"measured_at", unix_now()}};
  write_cache(cache);
  c.line = fmt::format("compute calibration: forward+loss+backward {:.3f} s per step expected ({}; measured in "
                       "{:.1f} s, cached in {})", c.step_s, c.key, c.took_s, cache_path().string());
  return c;
}

bool forget_compute_calibration(const std::string& key) {
  nlohmann::json cache = read_cache();
  if (!cache.contains(key)) return false;
  cache.erase(key);
  write_cache(cache);
  return true;
}

}  // namespace yolo11::engine
