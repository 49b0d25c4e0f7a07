#pragma once
// core/device: the one place that turns `device=` into the torch::Device a process works on. Training, validation,
// prediction, AutoBatch, the profiler (CUDA events, NVML, allocator stats), checkpoint loading (map location) and
// every collective take their device from a DevicePlan; nothing else parses `device=` or picks a CUDA index.
//
// resolve_device() is a pure function of the value and the facts (CUDA available, device count, LOCAL_RANK,
// WORLD_SIZE, CUDA_VISIBLE_DEVICES), so every rule is tested on a CPU machine with injected facts
// (tests/core/test_device.cpp). plan_device() reads the facts of this process and makes the chosen CUDA device
// current (c10::cuda::set_device through compat), so kernels, events, NVML and the NCCL communicator of this rank
// all land on it.
#include <c10/core/Device.h>

#include <optional>
#include <string>

namespace yolo11::core {

/// What the resolution depends on: read from the process by probe_device_facts(), injected by tests.
struct DeviceFacts {
  bool built_with_cuda = false;  ///< this LibTorch has CUDA (compat::built_with_cuda)
  int cuda_count = 0;            ///< CUDA devices visible to this process (after CUDA_VISIBLE_DEVICES)
  int world = 1;                 ///< WORLD_SIZE (1: a single process)
  int local_rank = 0;            ///< LOCAL_RANK: this process's rank on its machine
  std::optional<std::string> cuda_visible_devices;  ///< CUDA_VISIBLE_DEVICES as set (for messages), nullopt: unset
};

/// The device a process trains / validates / predicts on, and why.
struct DevicePlan {
  c10::Device device{c10::kCPU};
  std::string reason;        ///< one line for the start-up log, e.g. "device='' and 1 CUDA device visible: cuda:0"
  bool cuda() const { return device.is_cuda(); }
  /// CUDA index (0 for a CPU plan, so index-taking calls of compat stay valid no-ops).
  int cuda_index() const { return device.is_cuda() ? static_cast<int>(device.index()) : 0; }
};

/// Ultralytics' `device=` meaning, resolved against `facts`:
///   ""             → cuda:0 when a CUDA device is visible, else cpu; under DDP (world > 1) cuda:LOCAL_RANK
///   "cpu"          → cpu
///   "0", "cuda:N", "cuda" → that CUDA device (under DDP: cuda:LOCAL_RANK, one GPU per process as torchrun)
///   "0,1,..."      → under DDP the LOCAL_RANK-th of the list; in a single process it is an error naming the
///                    launch command (this trainer does not spawn DDP itself)
/// Throws std::runtime_error naming the value, the accepted forms and what to do: a malformed value, "mps", a CUDA
/// value on a build without CUDA or with no device visible (CUDA_VISIBLE_DEVICES quoted when set), an index or
/// LOCAL_RANK past the visible devices, a list shorter than LOCAL_WORLD ranks need, a repeated index.
DevicePlan resolve_device(const std::string& device, const DeviceFacts& facts);

/// The facts of this process: compat::built_with_cuda, the visible CUDA device count and CUDA_VISIBLE_DEVICES;
/// `world` / `local_rank` as dist::Env parsed them (the defaults: a single process).
DeviceFacts probe_device_facts(int world = 1, int local_rank = 0);

/// resolve_device(device, probe_device_facts(world, local_rank)); a CUDA plan becomes this process's current CUDA
/// device (compat::set_current_device) before anything allocates on it.
DevicePlan plan_device(const std::string& device, int world = 1, int local_rank = 0);

}  // namespace yolo11::core
