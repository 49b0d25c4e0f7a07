#include "yolo11/engine/fp_env.h"

#include <ATen/Context.h>
#include <ATen/Parallel.h>

#include <atomic>
#include <cstdlib>
#include <cstring>

namespace yolo11::engine {

std::string flush_denormals() {
  const char* keep = std::getenv("YOLO11_KEEP_DENORMALS");
  if (keep && std::strcmp(keep, "0") != 0 && *keep)
    return "denormal floats kept (YOLO11_KEEP_DENORMALS set): CPU inference may slow down as training proceeds";
  if (!at::globalContext().setFlushDenormal(true))
    return "flush-to-zero not supported on this CPU: denormal floats kept";
  // One task per pool thread (grain 1): each sets its own MXCSR.
  const int64_t n = at::get_num_threads();
  std::atomic<int> ok{0};
  at::parallel_for(0, n, 1, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) ok += at::globalContext().setFlushDenormal(true) ? 1 : 0;
  });
  return "CPU flush-to-zero + denormals-are-zero on (trainer thread and " + std::to_string(n) +
         " intra-op threads): denormal floats read and written as 0";
}

}  // namespace yolo11::engine
