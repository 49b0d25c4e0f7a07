// LibTorch 1.13 / 2.x and CPU / CUDA differences, kept out of every other file (include/yolo11/core/compat.h).
#include "yolo11/core/compat.h"

#include <ATen/Context.h>
#include <ATen/autocast_mode.h>
#include <dlfcn.h>
#include <torch/cuda.h>
#include <torch/version.h>

#include <cstdlib>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "yolo11/core/strings.h"

#ifdef YOLO11_HAS_CUDA
#include <ATen/cuda/CUDAEvent.h>
#include <ATen/cuda/CUDAGeneratorImpl.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAFunctions.h>
#include <cuda_runtime_api.h>
#include <c10/cuda/CUDAStream.h>
#endif

// 2.4 introduced the device-typed autocast API (set_autocast_enabled(device, on), set_autocast_dtype(...)).
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
#define YOLO11_AUTOCAST_DEVICE_TYPED 1
#endif
// 2.1 introduced the fill of uninitialized memory under deterministic algorithms (on by default).
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 1)
#define YOLO11_HAS_DETERMINISTIC_FILL 1
#endif

namespace yolo11::compat {

bool built_with_cuda() {
#ifdef YOLO11_HAS_CUDA
  return true;
#else
  return false;
#endif
}

bool cuda_available() {
#ifdef YOLO11_HAS_CUDA
  return torch::cuda::is_available();
#else
  return false;
#endif
}

int cuda_device_count() {
#ifdef YOLO11_HAS_CUDA
  return static_cast<int>(torch::cuda::device_count());
#else
  return 0;
#endif
}

void set_current_device(int index) {
#ifdef YOLO11_HAS_CUDA
  if (torch::cuda::is_available()) c10::cuda::set_device(static_cast<c10::DeviceIndex>(index));
#else
  (void)index;
#endif
}

std::string apply_determinism(bool deterministic) {
  auto& ctx = at::globalContext();
  ctx.setDeterministicAlgorithms(deterministic, /*warn_only=*/true);
  ctx.setDeterministicCuDNN(deterministic);
  ctx.setBenchmarkCuDNN(!deterministic);
  std::string line;
  if (deterministic) {
    const char* prev = std::getenv("CUBLAS_WORKSPACE_CONFIG");
    if (prev == nullptr || *prev == '\0') ::setenv("CUBLAS_WORKSPACE_CONFIG", ":4096:8", 1);
    line = std::string("deterministic=true: deterministic algorithms (warn only), cuDNN deterministic, cuDNN benchmark "
                       "off, CUBLAS_WORKSPACE_CONFIG=") + std::getenv("CUBLAS_WORKSPACE_CONFIG");
#ifdef YOLO11_HAS_DETERMINISTIC_FILL
    const bool keep_fill = core::env_flag("YOLO11_FILL_UNINITIALIZED");
    ctx.setDeterministicFillUninitializedMemory(keep_fill);
    line += keep_fill ? ", new tensors filled with NaN (YOLO11_FILL_UNINITIALIZED set)"
                      : ", new tensors not NaN-filled (YOLO11_FILL_UNINITIALIZED=1 fills them)";
#endif
  } else {
    line = "deterministic=false: cuDNN benchmark on (autotuned convolutions), non-deterministic algorithms allowed";
  }
  return line;
}

void synchronize(int device) {
#ifdef YOLO11_HAS_CUDA
  if (torch::cuda::is_available()) torch::cuda::synchronize(device);
#else
  (void)device;
#endif
}

int64_t peak_memory_allocated(int device) {
#ifdef YOLO11_HAS_CUDA
  if (!torch::cuda::is_available()) return -1;
  // allocated_bytes[0] is StatType::AGGREGATE in every generation (the enum moved namespaces in 2.5).
  const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(static_cast<c10::DeviceIndex>(device));
  return stats.allocated_bytes[0].peak;
#else
  (void)device;
  return -1;
#endif
}

int64_t memory_allocated(int device) {
#ifdef YOLO11_HAS_CUDA
  if (!torch::cuda::is_available()) return -1;
  const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(static_cast<c10::DeviceIndex>(device));
  return stats.allocated_bytes[0].current;
#else
  (void)device;
  return -1;
#endif
}

MemoryInfo memory_info(int device) {
  MemoryInfo m;
#ifdef YOLO11_HAS_CUDA
  if (!torch::cuda::is_available()) return m;
  c10::cuda::CUDAGuard guard(static_cast<c10::DeviceIndex>(device));  // cudaMemGetInfo reads the current device
  size_t free_b = 0, total_b = 0;
  if (cudaMemGetInfo(&free_b, &total_b) == cudaSuccess) {
    m.free = static_cast<int64_t>(free_b);
    m.total = static_cast<int64_t>(total_b);
  }
  const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(static_cast<c10::DeviceIndex>(device));
  m.reserved = stats.reserved_bytes[0].current;
  m.peak_reserved = stats.reserved_bytes[0].peak;
#else
  (void)device;
#endif
  return m;
}

void reset_peak_memory(int device) {
#ifdef YOLO11_HAS_CUDA
  if (torch::cuda::is_available())
    c10::cuda::CUDACachingAllocator::resetPeakStats(static_cast<c10::DeviceIndex>(device));
#else
  (void)device;
#endif
}

void empty_cache() {
#ifdef YOLO11_HAS_CUDA
  if (torch::cuda::is_available()) c10::cuda::CUDACachingAllocator::emptyCache();
#endif
}

// ---- EventTimer ----------------------------------------------------------------------------------------------
struct EventTimer::Impl {
  int device = 0;
  bool cuda = false;  // a GPU is visible: a CUDA build on a machine without one times nothing, like a CPU build
#ifdef YOLO11_HAS_CUDA
  struct Pair {
    at::cuda::CUDAEvent start{cudaEventDefault};  // timing enabled (CUDAEvent's default disables it)
    at::cuda::CUDAEvent end{cudaEventDefault};
  };
  std::vector<std::unique_ptr<Pair>> pairs;
  std::vector<int> free_slots;
#endif
};

EventTimer::EventTimer(int device) : impl_(std::make_unique<Impl>()) {
  impl_->device = device;
  impl_->cuda = cuda_available();
}
EventTimer::~EventTimer() = default;

int EventTimer::start() {
#ifdef YOLO11_HAS_CUDA
  Impl& m = *impl_;
  if (!m.cuda) return -1;
  int slot;
  if (!m.free_slots.empty()) {
    slot = m.free_slots.back();
    m.free_slots.pop_back();
  } else {
    slot = static_cast<int>(m.pairs.size());
    m.pairs.push_back(std::make_unique<Impl::Pair>());
  }
  m.pairs[slot]->start.record(at::cuda::getCurrentCUDAStream(static_cast<c10::DeviceIndex>(m.device)));
  return slot;
#else
  return -1;
#endif
}

void EventTimer::stop(int slot) {
#ifdef YOLO11_HAS_CUDA
  if (slot < 0) return;
  impl_->pairs.at(slot)->end.record(at::cuda::getCurrentCUDAStream(static_cast<c10::DeviceIndex>(impl_->device)));
#else
  (void)slot;
#endif
}

std::optional<double> EventTimer::query(int slot) {
#ifdef YOLO11_HAS_CUDA
  if (slot < 0) return std::nullopt;
  auto& p = *impl_->pairs.at(slot);
  if (!p.end.query()) return std::nullopt;
  return static_cast<double>(p.start.elapsed_time(p.end));
#else
  (void)slot;
  return std::nullopt;
#endif
}

double EventTimer::wait(int slot) {
#ifdef YOLO11_HAS_CUDA
  if (slot < 0) return 0;
  auto& p = *impl_->pairs.at(slot);
  p.end.synchronize();
  return static_cast<double>(p.start.elapsed_time(p.end));
#else
  (void)slot;
  return 0;
#endif
}

void EventTimer::release(int slot) {
#ifdef YOLO11_HAS_CUDA
  if (slot >= 0) impl_->free_slots.push_back(slot);
#else
  (void)slot;
#endif
}

// ---- Nsight capture range --------------------------------------------------------------------------------------
namespace {
using CuProfilerFn = int (*)();
bool call_cuda_profiler(const char* symbol) {
#ifdef YOLO11_HAS_CUDA
  static void* lib = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
  if (lib == nullptr) return false;
  auto fn = reinterpret_cast<CuProfilerFn>(dlsym(lib, symbol));
  return fn != nullptr && fn() == 0;
#else
  (void)symbol;
  return false;
#endif
}
}  // namespace

bool profiler_start() { return call_cuda_profiler("cuProfilerStart"); }
bool profiler_stop() { return call_cuda_profiler("cuProfilerStop"); }

// ---- CUDA generator state --------------------------------------------------------------------------------------
at::Tensor cuda_rng_state(int device) {
#ifdef YOLO11_HAS_CUDA
  if (!torch::cuda::is_available()) return {};
  auto gen = at::cuda::detail::getDefaultCUDAGenerator(static_cast<c10::DeviceIndex>(device));
  std::lock_guard<std::mutex> lock(gen.mutex());
  return gen.get_state();
#else
  (void)device;
  return {};
#endif
}

void set_cuda_rng_state(const at::Tensor& state, int device) {
#ifdef YOLO11_HAS_CUDA
  if (!state.defined() || !torch::cuda::is_available()) return;
  auto gen = at::cuda::detail::getDefaultCUDAGenerator(static_cast<c10::DeviceIndex>(device));
  std::lock_guard<std::mutex> lock(gen.mutex());
  gen.set_state(state);
#else
  (void)state;
  (void)device;
#endif
}

// ---- autocast -----------------------------------------------------------------------------------------------------
void set_autocast_enabled(c10::DeviceType device, bool enabled) {
#ifdef YOLO11_AUTOCAST_DEVICE_TYPED
  at::autocast::set_autocast_enabled(device, enabled);
#else
  if (device == c10::DeviceType::CUDA) {
    at::autocast::set_enabled(enabled);
  } else if (device == c10::DeviceType::CPU) {
    at::autocast::set_cpu_enabled(enabled);
  } else {
    throw std::runtime_error("compat::set_autocast_enabled: autocast on device type " +
                             c10::DeviceTypeName(device) + " is not supported by LibTorch " TORCH_VERSION
                             "; use cpu or cuda");
  }
#endif
}

bool is_autocast_enabled(c10::DeviceType device) {
#ifdef YOLO11_AUTOCAST_DEVICE_TYPED
  return at::autocast::is_autocast_enabled(device);
#else
  if (device == c10::DeviceType::CUDA) return at::autocast::is_enabled();
  if (device == c10::DeviceType::CPU) return at::autocast::is_cpu_enabled();
  return false;
#endif
}

namespace {
c10::ScalarType get_autocast_dtype(c10::DeviceType device) {
#ifdef YOLO11_AUTOCAST_DEVICE_TYPED
  return at::autocast::get_autocast_dtype(device);
#else
  return device == c10::DeviceType::CPU ? at::autocast::get_autocast_cpu_dtype()
                                        : at::autocast::get_autocast_gpu_dtype();
#endif
}
}  // namespace

void set_autocast_dtype(c10::DeviceType device, c10::ScalarType dtype) {
#ifdef YOLO11_AUTOCAST_DEVICE_TYPED
  at::autocast::set_autocast_dtype(device, dtype);
#else
  if (device == c10::DeviceType::CPU) {
    at::autocast::set_autocast_cpu_dtype(dtype);
  } else {
    at::autocast::set_autocast_gpu_dtype(dtype);
  }
#endif
}

AutocastGuard::AutocastGuard(c10::DeviceType device, bool enabled, c10::ScalarType dtype)
    : device_(device), enabled_(enabled) {
  if (!enabled_) return;
  prev_enabled_ = is_autocast_enabled(device_);
  prev_dtype_ = get_autocast_dtype(device_);
  set_autocast_enabled(device_, true);
  set_autocast_dtype(device_, dtype);
  at::autocast::increment_nesting();
}

AutocastGuard::~AutocastGuard() {
  if (!enabled_) return;
  if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
  set_autocast_enabled(device_, prev_enabled_);
  set_autocast_dtype(device_, prev_dtype_);
}

}  // namespace yolo11::compat
