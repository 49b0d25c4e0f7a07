#pragma once
// The one way code marks a stage: an RAII range that is an NVTX range (domain "yolo11") and, while a trace is
// recording, a Chrome-trace event on the calling thread. Costs a branch when instrumentation is off.
// Stage names are shared by NVTX, timers, trace and logs: the vocabulary in stages.h (loader threads use
// LoaderStage).
// Safe from any thread. ScopedRange is not a timer for the step breakdown: the trainer's stages go through
// Profiler::stage (profiler.h), which adds timing; loader threads use ScopedRange directly.
#include "yolo11/instrument/stages.h"

namespace yolo11::instrument {

class ScopedRange {
 public:
  /// `name` must outlive the range (use string literals or strings owned by the caller).
  explicit ScopedRange(const char* name);
  explicit ScopedRange(LoaderStage s) : ScopedRange(stage_name(s)) {}
  ~ScopedRange();
  ScopedRange(const ScopedRange&) = delete;
  ScopedRange& operator=(const ScopedRange&) = delete;

 private:
  const char* name_;
  bool active_;
  long long start_ns_;
};

/// Names the calling thread in NVTX (nvtxNameOsThread) and in trace.json (thread track name), e.g.
/// "loader 3". Loader workers call it once at start; unnamed threads appear under their OS name.
void name_this_thread(const char* name);

/// Call from the thread that starts worker threads, before it starts them (Loader and Sampler do): initializes
/// NVTX once per process. NVTX3 initializes itself lazily on the first call, writing its function pointers without
/// synchronizing against other threads' first calls (a data race ThreadSanitizer reports, tools/sanitize.sh);
/// done here first, the thread start orders those writes before every worker's calls. Cheap when repeated.
void prepare_threads();

/// Process-wide switch for ScopedRange (default on). Profiler sets it from its level (off → false), so
/// level=off makes every ScopedRange a single relaxed load and branch.
void set_ranges_enabled(bool enabled);
bool ranges_enabled();

}  // namespace yolo11::instrument
