#pragma once
// Floating-point environment of the CPU threads that compute (trainer/validator thread, LibTorch's intra-op pool).
#include <string>

namespace yolo11::engine {

/// Turns on flush-to-zero + denormals-are-zero (x86 MXCSR FTZ/DAZ; ARM FZ) on the calling thread and on every
/// thread of LibTorch's intra-op pool (threads created later inherit the caller's setting). Denormal floats
/// (|x| < 1.2e-38, e.g. SiLU/sigmoid tails of large negative activations, which grow as training proceeds) cost
/// ~100× a normal operation on x86, which made CPU validation slower epoch after epoch. Results change only
/// where a value would have been denormal. The environment variable YOLO11_KEEP_DENORMALS=1 skips it (A/B runs).
/// Returns the line to log (what was set, or why nothing was).
std::string flush_denormals();

/// Keeps freed heap memory in the process instead of handing it back to the kernel (glibc malloc: no mmap for large
/// blocks, no trimming of the heap top). LibTorch's CPU tensors of a 640² batch are tens to hundreds of MB; with
/// glibc's defaults each one is a fresh mmap, so every forward/backward/val batch page-faults its activations in
/// again (measured: yolo11n val of coco128 at 640, 5.1 M minor faults and 10.3 s of kernel time in a 13.9 s run;
/// with this, 0.97 M and 2.3 s, inference 88.7 → 52.2 ms/image; docs/benchmarks.md). The cost is a resident set
/// that stays at its peak. Also one malloc arena per usable core (core::usable_cores(), at least 2) instead of glibc's
/// 8 per core, unless MALLOC_ARENA_MAX is set: the loader's worker threads otherwise keep an arena each.
/// Call once, early (before the big allocations and before any thread) on the main thread. Skipped, and said so,
/// when YOLO11_MALLOC_DEFAULTS=1, when GLIBC_TUNABLES already sets malloc tunables, or off glibc / under a
/// sanitizer's allocator. Returns the line to log.
std::string tune_malloc();

}  // namespace yolo11::engine
