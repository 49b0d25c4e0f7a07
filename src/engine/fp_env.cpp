#include "yolo11/engine/fp_env.h"

#include <ATen/Context.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <string>

#include "yolo11/core/cpus.h"
#include "yolo11/core/strings.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace yolo11::engine {

std::string flush_denormals() {
  if (core::env_flag("YOLO11_KEEP_DENORMALS"))
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

std::string tune_malloc() {
  if (core::env_flag("YOLO11_MALLOC_DEFAULTS"))
    return "malloc: glibc defaults kept (YOLO11_MALLOC_DEFAULTS set): large tensors are mmap'd and page-faulted anew";
  const char* tun = std::getenv("GLIBC_TUNABLES");
  if (tun && std::strstr(tun, "glibc.malloc."))
    return std::string("malloc: GLIBC_TUNABLES sets malloc tunables (") + tun + "): left as given";
#if defined(__GLIBC__) && !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
  // Order matters: a fixed M_MMAP_THRESHOLD / M_TRIM_THRESHOLD also turns off glibc's dynamic threshold.
  const bool ok = mallopt(M_MMAP_MAX, 0) == 1 && mallopt(M_TRIM_THRESHOLD, INT_MAX) == 1 &&
                  mallopt(M_TOP_PAD, 64 << 20) == 1;
  if (!ok) return "malloc: mallopt refused the settings: glibc defaults kept";
  // One arena per usable core instead of glibc's 8 per core: each loader worker thread otherwise gets an arena of its
  // own whose freed chunks stay resident (yolo11n, coco128 at 640, batch 16, fp32, 8 workers on 2 cores: peak RSS
  // 6,558 → 6,079 MiB, epoch time unchanged; docs/benchmarks.md). MALLOC_ARENA_MAX, when set, is left as given.
  std::string arenas = "MALLOC_ARENA_MAX as given";
  if (const char* a = std::getenv("MALLOC_ARENA_MAX"); a == nullptr || *a == '\0') {
    const int n = std::max(2, core::usable_cores().usable);
    arenas = mallopt(M_ARENA_MAX, n) == 1 ? std::to_string(n) + " arenas (one per usable core)" : "arenas: glibc's";
  }
  return "malloc: freed memory kept for reuse within an epoch (glibc: no mmap for large blocks, the heap trimmed at "
         "each epoch end, " +
         arenas + "; YOLO11_MALLOC_DEFAULTS=1 turns this off)";
#else
  return "malloc: not glibc's (or a sanitizer's): allocator defaults kept";
#endif
}

}  // namespace yolo11::engine
