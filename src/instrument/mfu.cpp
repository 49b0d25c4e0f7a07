// MFU helpers (include/yolo11/instrument/mfu.h): the GPU peak table and the CPU micro-benchmark with its cache.
#include "yolo11/instrument/mfu.h"

#include <spdlog/fmt/fmt.h>
#include <spdlog/spdlog.h>
#include <torch/torch.h>
#include <torch/version.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <vector>

#include "yolo11/io/file.h"

namespace yolo11::instrument {

namespace {

struct GpuPeak {
  const char* key;  // substring of the NVML name; more specific entries first
  double bf16, tf32, fp32;  // dense TFLOP/s (−1: no such unit)
};
constexpr GpuPeak kGpuPeaks[] = {
    {"H200", 989, 494, 67},    {"H100 PCIe", 756, 378, 51}, {"H100", 989, 494, 67}, {"A100", 312, 156, 19.5},
    {"L40S", 362, 183, 91.6},  {"L4", 121, 60, 30.3},       {"A10", 125, 62.5, 31.2}, {"RTX 4090", 165, 82.6, 82.6},
    {"RTX 3090", 71, 35.6, 35.6}, {"V100", 125, -1, 15.7},  {"T4", 65, -1, 8.1}};

// Sanitizer builds measure (and so cache) under their own key.
constexpr const char* kBuildFlavor =
#if defined(__SANITIZE_THREAD__)
    " | tsan";
#elif defined(__SANITIZE_ADDRESS__)
    " | asan";
#else
    "";
#endif


// Best FLOP/s of `fn` (which does `flops` FLOPs) over ~budget_s of repetitions, after one warm-up call.
template <typename F>
double best_rate(F fn, double flops, double budget_s) {
  using C = std::chrono::steady_clock;
  fn();
  double best = 0;
  const auto t_end = C::now() + std::chrono::duration<double>(budget_s);
  for (int i = 0; i < 3 || (C::now() < t_end && i < 200); ++i) {
    const auto t0 = C::now();
    fn();
    const double s = std::chrono::duration<double>(C::now() - t0).count();
    if (s > 0) best = std::max(best, flops / s);
  }
  return best;
}

}  // namespace

std::string cpu_model() {
  std::ifstream f("/proc/cpuinfo");
  for (std::string l; std::getline(f, l);) {
    if (l.rfind("model name", 0) == 0) {
      const auto c = l.find(':');
      if (c != std::string::npos) return l.substr(c + 2);
    }
  }
  return "unknown cpu";
}

std::optional<double> gpu_peak_flops(const std::string& gpu_name, const std::string& dtype) {
  for (const auto& p : kGpuPeaks) {
    if (gpu_name.find(p.key) == std::string::npos) continue;
    const double t = dtype == "fp32" ? p.fp32 : dtype == "tf32" ? p.tf32 : p.bf16;
    if (t <= 0) return std::nullopt;
    return t * 1e12;
  }
  return std::nullopt;
}

std::optional<double> mfu(double train_flops_per_image, double images_per_s, double peak_flops_per_s) {
  if (train_flops_per_image <= 0 || images_per_s <= 0 || peak_flops_per_s <= 0) return std::nullopt;
  return train_flops_per_image * images_per_s / peak_flops_per_s;
}

static std::string peak_key(const std::string& cpu, int threads, const std::string& dtype) {
  return fmt::format("{} | {} threads | {} | torch {}{}", cpu, threads, dtype, TORCH_VERSION, kBuildFlavor);
}
static std::filesystem::path peak_cache_path() { return std::filesystem::path(io::user_cache_dir()) / "cpu_peak.json"; }
static nlohmann::json read_peak_cache(const std::filesystem::path& path) {
  if (std::filesystem::exists(path)) {
    auto j = nlohmann::json::parse(io::read_file(path.string()), nullptr, /*allow_exceptions=*/false);
    if (j.is_object()) return j;
  }
  return nlohmann::json::object();
}
static double cached_rate(const nlohmann::json& cache, const std::string& key) {
  return cache.contains(key) && cache[key].is_object() ? cache[key].value("flops_per_s", 0.0) : 0.0;
}

bool forget_cpu_peak(const std::string& dtype, int threads) {
  const std::filesystem::path path = peak_cache_path();
  nlohmann::json cache = read_peak_cache(path);
  const std::string key = peak_key(cpu_model(), threads > 0 ? threads : at::get_num_threads(), dtype);
  if (!cache.contains(key)) return false;
  cache.erase(key);
  try {
    io::write_file_atomic(path.string(), cache.dump(2));
  } catch (const std::exception& e) {
    spdlog::debug("cpu peak: cache not rewritten ({})", e.what());
    return false;
  }
  return true;
}

CpuPeak cpu_peak_flops(const std::string& dtype, int threads, bool use_cache) {
  if (dtype != "float32" && dtype != "bfloat16")
    throw std::runtime_error("cpu_peak_flops: dtype '" + dtype + "' is not float32 or bfloat16");
  CpuPeak p;
  p.dtype = dtype;
  p.threads = threads > 0 ? threads : at::get_num_threads();
  p.cpu = cpu_model();
  const std::string key = peak_key(p.cpu, p.threads, dtype);
  const std::filesystem::path path = peak_cache_path();
  nlohmann::json cache = read_peak_cache(path);
  double fewer_threads_best = 0;  // more threads cannot have a lower peak
  for (int t = 1; t < p.threads; ++t)
    fewer_threads_best = std::max(fewer_threads_best, cached_rate(cache, peak_key(p.cpu, t, dtype)));
  if (const double cached = cached_rate(cache, key); use_cache && cached > 0 && cached >= fewer_threads_best) {
    p.flops_per_s = cached;
    p.kernel = cache[key].value("kernel", "");
    p.cached = true;
    p.cache_path = path.string();
    return p;
  }
  const int prev = at::get_num_threads();
  if (p.threads != prev) at::set_num_threads(p.threads);
  torch::NoGradGuard ng;
  const auto dt = dtype == "bfloat16" ? torch::kBFloat16 : torch::kFloat;
  const auto opt = torch::TensorOptions().dtype(dt);
  {
    const int64_t n = 1024;
    auto a = torch::randn({n, n}, opt), b = torch::randn({n, n}, opt), c = torch::empty({n, n}, opt);
    const double r = best_rate([&] { at::mm_out(c, a, b); }, 2.0 * n * n * n, 0.2);
    if (r > p.flops_per_s) p.flops_per_s = r, p.kernel = "gemm 1024x1024x1024";
  }
  {
    auto x = torch::randn({8, 64, 56, 56}, opt).contiguous(torch::MemoryFormat::ChannelsLast);
    auto w = torch::randn({64, 64, 3, 3}, opt).contiguous(torch::MemoryFormat::ChannelsLast);
    const double flops = 2.0 * 8 * 64 * 64 * 9 * 56 * 56;
    const double r = best_rate([&] { (void)torch::conv2d(x, w, {}, 1, 1); }, flops, 0.2);
    if (r > p.flops_per_s) p.flops_per_s = r, p.kernel = "conv3x3 64->64 56x56 b8 (channels_last)";
  }
  if (p.threads != prev) at::set_num_threads(prev);
  cache[key] = {{"flops_per_s", p.flops_per_s}, {"kernel", p.kernel}, {"measured_at",
                 std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count()}};
  try {
    std::filesystem::create_directories(path.parent_path());
    io::write_file_atomic(path.string(), cache.dump(2));
    p.cache_path = path.string();
  } catch (const std::exception& e) {
    spdlog::debug("cpu peak: cache not written ({})", e.what());
  }
  return p;
}

}  // namespace yolo11::instrument
