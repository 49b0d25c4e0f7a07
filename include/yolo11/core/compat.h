#pragma once
// The one place that hides LibTorch 1.13 vs 2.x and CPU vs CUDA differences (docs/architecture.md, area core):
// device sync, peak allocator memory, CUDA event timing, Nsight capture control, autocast.
// Every function works (as a no-op / "n/a") in CPU-only builds; CUDA code lives in src/core/compat.cpp
// behind YOLO11_HAS_CUDA, so no CUDA header leaks here.
#include <ATen/Tensor.h>
#include <c10/core/DeviceType.h>
#include <c10/core/ScalarType.h>

#include <cstdint>
#include <memory>
#include <optional>

namespace yolo11::compat {

/// True when this build's LibTorch has CUDA (YOLO11_HAS_CUDA).
bool built_with_cuda();
/// True when CUDA is built in and at least one device is visible.
bool cuda_available();
/// Number of CUDA devices visible to this process (after CUDA_VISIBLE_DEVICES); 0 without CUDA.
int cuda_device_count();
/// Makes CUDA device `index` current for the calling thread (CUDA's current device is per thread; new threads start
/// on device 0, so threads that touch CUDA, such as the loader's pinning workers, call it too). core::plan_device
/// calls it on the main thread before the model, the loader or the process group touch the device. No-op without
/// CUDA.
void set_current_device(int index);

/// Applies Ultralytics' init_seeds(deterministic) switches: deterministic=true → deterministic algorithms (warn
/// only, so an operator without a deterministic implementation warns instead of throwing), cuDNN deterministic, cuDNN
/// benchmark off and CUBLAS_WORKSPACE_CONFIG=:4096:8 (when not already set; needed by cuBLAS >= 10.2 for
/// reproducible GEMMs, read when the first cuBLAS handle is made); deterministic=false → all of them off and cuDNN
/// benchmark ON (autotuned convolution algorithms for the fixed training shapes). The LibTorch global context
/// holds these flags on CPU builds too. Unlike the reference, deterministic=true does not fill every new tensor with
/// NaN (LibTorch >= 2.1's fill_uninitialized_memory, on by default under deterministic algorithms): that fill is
/// a debugging aid that changes no result of an operator that writes its whole output, and it cost 10 % of a yolo11n
/// CPU training step at 640 (docs/benchmarks.md). YOLO11_FILL_UNINITIALIZED=1 keeps it. Returns the one-line summary
/// the trainer logs.
std::string apply_determinism(bool deterministic);

/// Waits for all work on `device` (CUDA index); no-op without CUDA.
void synchronize(int device = 0);

/// Caching-allocator peak of allocated bytes on `device` since the last reset; −1 without CUDA.
int64_t peak_memory_allocated(int device = 0);
/// Currently allocated bytes on `device`; −1 without CUDA.
int64_t memory_allocated(int device = 0);
/// Device memory of one CUDA device, bytes (−1 each without CUDA): the driver's free/total (cudaMemGetInfo: other
/// processes' use counted) and this process's caching-allocator reserved bytes, now and peak since the last reset.
struct MemoryInfo {
  int64_t free = -1, total = -1, reserved = -1, peak_reserved = -1;
};
MemoryInfo memory_info(int device = 0);

/// Resets the allocator's peak statistics; no-op without CUDA.
void reset_peak_memory(int device = 0);
/// Returns the caching allocator's unused cached blocks to the driver (after an out-of-memory error); no-op without
/// CUDA or a visible GPU.
void empty_cache();

/// Pool of CUDA start/end event pairs recorded on the current stream of one device; durations are read
/// later without a device-wide sync (query) or with a wait on just that event (wait). Without CUDA every
/// call is a no-op and `acquire` returns −1.
class EventTimer {
 public:
  explicit EventTimer(int device = 0);
  ~EventTimer();
  EventTimer(const EventTimer&) = delete;
  EventTimer& operator=(const EventTimer&) = delete;
  /// Records a start event on the current stream; returns a slot (−1 without CUDA).
  int start();
  /// Records the end event of `slot` on the current stream.
  void stop(int slot);
  /// Milliseconds between start and end of `slot` if the end event has completed (no blocking), else nullopt.
  std::optional<double> query(int slot);
  /// Milliseconds between start and end of `slot`, waiting for the end event (not the whole device).
  double wait(int slot);
  /// Returns `slot` to the pool.
  void release(int slot);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// Nsight Systems capture range: cuProfilerStart / cuProfilerStop from libcuda (dlopen, no link dependency).
/// Returns false (and does nothing) in CPU builds or when the driver library is absent.
bool profiler_start();
bool profiler_stop();

/// State of the default CUDA generator of `device` (uint8 tensor, as torch.cuda.get_rng_state); an undefined
/// tensor in CPU builds or when no CUDA device is visible.
at::Tensor cuda_rng_state(int device = 0);
/// Restores cuda_rng_state(); no-op for an undefined tensor, in CPU builds or without a CUDA device.
void set_cuda_rng_state(const at::Tensor& state, int device = 0);

/// Autocast switches of either LibTorch generation (1.13: set_enabled / set_cpu_enabled / set_autocast_*_dtype;
/// 2.4+: device-typed set_autocast_enabled / set_autocast_dtype).
void set_autocast_enabled(c10::DeviceType device, bool enabled);
bool is_autocast_enabled(c10::DeviceType device);
void set_autocast_dtype(c10::DeviceType device, c10::ScalarType dtype);

/// RAII autocast region (like torch.autocast): enables autocast for `device` with `dtype`, restores the
/// previous state and clears the autocast cache on exit when the outermost region closes. `enabled=false`
/// does nothing.
class AutocastGuard {
 public:
  AutocastGuard(c10::DeviceType device, bool enabled, c10::ScalarType dtype = c10::ScalarType::Half);
  ~AutocastGuard();
  AutocastGuard(const AutocastGuard&) = delete;
  AutocastGuard& operator=(const AutocastGuard&) = delete;

 private:
  c10::DeviceType device_;
  bool enabled_;
  bool prev_enabled_ = false;
  c10::ScalarType prev_dtype_ = c10::ScalarType::Half;
};

}  // namespace yolo11::compat
