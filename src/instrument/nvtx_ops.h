#pragma once
// Internal: operator NVTX ranges (nvtx_ops=true). A thread-local RecordFunction observer on the calling thread (and
// the threads that inherit its thread-local state: autograd's workers) pushes an NVTX range in domain "yolo11" for
// every dispatcher operator and autograd node, so Nsight shows operators nested under our stage ranges. This is what
// LibTorch's NVTX observer (torch/csrc/profiler/nvtx_observer.h, ProfilerState::NVTX, the C++ side of
// torch.autograd.profiler.emit_nvtx) does, but in our domain and through our NVTX wrappers: LibTorch's goes through its
// CUDA stubs, which a CPU build does not have. Returns false (and does nothing) without NVTX3 at build time.
namespace yolo11::instrument::nvtx {

/// Installs the observer on the calling thread (idempotent); false when NVTX is compiled out.
bool ops_start();
/// Removes it (call on the same thread; idempotent).
void ops_stop();

}  // namespace yolo11::instrument::nvtx
