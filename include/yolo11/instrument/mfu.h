#pragma once
// Model FLOPs utilisation (MFU): achieved FLOP/s = training FLOPs per image (3 × the forward FLOPs at the input size:
// forward + backward ≈ 3 × forward, the convention of PaLM / Lightning's ThroughputMonitor) × images/s, divided by
// the device's peak. GPU peaks come from a table of dense (no sparsity) data-sheet figures per dtype; a CPU's peak is
// measured once per machine by a short GEMM / 3×3-convolution micro-benchmark in the training dtype and cached in
// io::user_cache_dir()/cpu_peak.json (keyed by CPU model, threads, dtype and LibTorch version). Torch-free header.
#include <optional>
#include <string>

namespace yolo11::instrument {

/// Dense peak FLOP/s of a GPU named like NVML names it ("NVIDIA H200", "NVIDIA A100-SXM4-80GB", ...), for `dtype`
/// "fp16"/"bf16" (tensor cores), "tf32" or "fp32". nullopt when the GPU is not in the table (then MFU is n/a).
/// Table (TFLOP/s, bf16 / tf32 / fp32): H200 989/494/67, H100 SXM 989/494/67, H100 PCIe 756/378/51, A100 312/156/19.5,
/// L40S 362/183/91.6, L4 121/60/30.3, A10 125/62.5/31.2, RTX 4090 165/82.6/82.6, RTX 3090 71/35.6/35.6,
/// V100 125/-/15.7, T4 65/-/8.1 (NVIDIA data sheets; docs/instrument.md lists them with the links).
std::optional<double> gpu_peak_flops(const std::string& gpu_name, const std::string& dtype = "bf16");

/// A CPU's measured peak.
struct CpuPeak {
  double flops_per_s = 0;  ///< best of the kernels below, FLOP/s
  std::string dtype;       ///< "float32" | "bfloat16"
  int threads = 0;         ///< intra-op threads it ran with
  std::string kernel;      ///< the winning kernel, e.g. "gemm 1024x1024x1024" or "conv3x3 64->64 56x56 b8"
  std::string cpu;         ///< /proc/cpuinfo model name
  bool cached = false;     ///< read from the cache file, not measured now
  std::string cache_path;  ///< the cache file ("" when it could not be written)
};

/// /proc/cpuinfo "model name" of the first CPU ("unknown cpu" when unreadable).
std::string cpu_model();

/// The CPU's peak FLOP/s in `dtype` ("float32" | "bfloat16") at `threads` intra-op threads (0 = current): from the
/// cache when present (use_cache), else measured (~0.5 s: each kernel run repeatedly, best time kept) and cached.
/// Throws std::runtime_error for an unknown dtype.
/// A cached figure is measured again when it is below the cached figure for fewer threads (a measurement taken on
/// a busy machine).
CpuPeak cpu_peak_flops(const std::string& dtype, int threads = 0, bool use_cache = true);
/// Removes the cached peak for `dtype` at `threads` (0 = current) so the next cpu_peak_flops measures it again;
/// false when there was none. Used when training achieves more than the cached peak.
bool forget_cpu_peak(const std::string& dtype, int threads = 0);

/// achieved / peak, with achieved = flops_per_image × images_per_s; nullopt when any input is ≤ 0.
std::optional<double> mfu(double train_flops_per_image, double images_per_s, double peak_flops_per_s);

}  // namespace yolo11::instrument
