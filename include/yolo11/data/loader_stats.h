#pragma once
// Loader internals (issue 14, docs/instrument.md "Loader internals"): what each loader worker spends its time on.
// Every batch a worker builds is timed as a whole (its busy time) and split into the transforms below, timed where
// they run (ScopedPart); "other" is the rest of the batch's busy time (draws, label arithmetic, allocation), so
// the parts add up to the busy time exactly and a large "other" means a transform is not covered. No torch.
#include <array>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "yolo11/instrument/stats.h"

namespace yolo11::data {

enum class LoaderPart : int { decode, cache, mosaic, perspective, hsv, flip, letterbox, collate, other };
inline constexpr std::array<const char*, 9> kLoaderParts = {"decode",    "cache", "mosaic",  "perspective", "hsv",
                                                            "flip",      "letterbox", "collate", "other"};

/// Times one transform on a thread that is building a batch (LoaderRecorder::begin_batch); elsewhere it does
/// nothing but read a thread-local pointer.
class ScopedPart {
 public:
  explicit ScopedPart(LoaderPart p);
  ~ScopedPart();
  ScopedPart(const ScopedPart&) = delete;
  ScopedPart& operator=(const ScopedPart&) = delete;

 private:
  LoaderPart part_;
  int64_t t0_ = 0;
  bool on_ = false;
};

struct LoaderReport {
  std::vector<instrument::LoaderPartStats> parts;  ///< kLoaderParts order; what Profiler::record_loader writes
  double busy_s = 0;                     ///< Σ over workers of the time spent building batches
  std::vector<double> worker_busy_s;     ///< per worker (the synchronous loader counts as worker 0)
  double wall_s = 0;                     ///< since the previous take()
  int64_t batches = 0, images = 0;
  /// busy / (wall × workers): how much of the workers' time went into building batches.
  double utilisation() const;
  /// One line per part: "decode  count  total s  p50 ms  p95 ms  share", then busy / wall / utilisation.
  std::string table() const;
};

/// Owned by a Loader: collects what its workers record.
class LoaderRecorder {
 public:
  explicit LoaderRecorder(int workers);
  ~LoaderRecorder();
  /// On each worker thread, once, before its first batch: its CPU clock joins cpu_seconds().
  void register_worker_thread(int worker);
  /// Σ over the registered worker threads of their CPU time since they started (s; the threads' own CPU clocks, so
  /// time asleep or blocked does not count). 0 without registered threads. Any thread; a few µs per worker.
  double cpu_seconds() const;
  /// On the worker thread, around building one batch of `images` images.
  void begin_batch(int worker);
  void end_batch(int worker, int64_t images);
  /// Everything recorded since the previous take() (or construction), then starts over. Any thread.
  LoaderReport take();

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace yolo11::data
