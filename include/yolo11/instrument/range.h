#pragma once
// The one way code marks a stage: an RAII range that is an NVTX range (domain "yolo11") and, when tracing
// is on, a Chrome-trace event on the calling thread. Costs a branch when instrumentation is off.
// Stage names are shared by NVTX, timers, trace and logs: dataloader, h2d, forward, loss, backward,
// optimizer, ema, val, checkpoint, log; loader threads: load, mosaic, augment, collate.

namespace yolo11::instrument {

class ScopedRange {
 public:
  /// `name` must outlive the range (use string literals or strings owned by the caller).
  explicit ScopedRange(const char* name);
  ~ScopedRange();
  ScopedRange(const ScopedRange&) = delete;
  ScopedRange& operator=(const ScopedRange&) = delete;

 private:
  const char* name_;
  bool active_;
  long long start_ns_;
};

}  // namespace yolo11::instrument
