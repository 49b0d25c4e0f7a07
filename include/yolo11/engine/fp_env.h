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

}  // namespace yolo11::engine
