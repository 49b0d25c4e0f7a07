#pragma once
// The speed this model's compute should reach here, measured inside the run at no extra step: forward + loss +
// backward of two of the run's own steps (the last two of the instrument warm-up, never the first step), timed with the
// loader's workers paused (data::Loader::pause) so that nothing of the run competes with them, and kept only when the
// contention signals over those steps say the machine was quiet. The figure is cached per setting in
// <user cache>/compute_calibration.json; a cached figure is used from the run's first window, measured again when
// older than 30 days or found implausible (a run computing faster than its calibration: it was measured on a busy
// machine). The diagnosis compares each window's compute against it (instrument/diagnosis.h, "compute slowed").
#include <c10/core/Device.h>

#include <cstdint>
#include <string>
#include <vector>

#include "yolo11/engine/amp.h"
#include "yolo11/instrument/contention.h"
#include "yolo11/instrument/diagnosis.h"
#include "yolo11/model/yolo.h"

namespace yolo11::data {
class Loader;
}

namespace yolo11::engine {

struct ComputeCalibration {
  double step_s = 0;   ///< forward + loss + backward per step, s (the fastest of the timed steps); 0 = unknown
  std::string key;     ///< the setting: model, batch, imgsz, precision, threads, device, LibTorch
  bool cached = false;
  std::string line;  ///< one log line: the figure, the setting, cached or measured, or why there is none
};

/// The cache key of a setting: "<model yaml> scale S nc N | batch B | imgsz I | <precision> | channels_last | T threads
/// | <CPU model or GPU name> | torch X.Y.Z", with T the current intra-op threads.
std::string compute_calibration_key(const model::ModelOptions& mo, int64_t batch, int64_t imgsz, const AmpPolicy& amp,
                                    const c10::Device& device);
/// The cached figure of `key` (cached = true, step_s > 0), or step_s 0 when absent, older than 30 days or the cache
/// is unreadable (a broken file counts as empty). Never throws.
ComputeCalibration cached_compute_calibration(const std::string& key);
/// Stores `step_s` for `key` with the time now; false (and a debug log) when the cache cannot be written.
bool store_compute_calibration(const std::string& key, double step_s);
/// Drops the cache entry `key` (a run computed faster than it: measured on a busy machine). False when absent.
bool forget_compute_calibration(const std::string& key);

/// One timed step of the in-run calibration: its forward + loss + backward wall time and the contention over it.
struct CalibrationSpan {
  double compute_s = 0;
  instrument::ContentionRates rates;
  int unparked_workers = 0;  ///< loader workers still building when the span began (Loader::pause timed out)
};

/// Whether timed steps ran on a quiet machine: "" when they did, else the evidence ("run-queue wait 31% of the
/// trainer threads' time", "other processes 0.9 of 2 cores", ...). A span is contended when its run-queue wait is
/// ≥ half the diagnosis's `t.runq_wait`, the CPU quota throttled it (≥ t.quota_throttled of its periods), the
/// intra-op threads slept (≥ t.voluntary_switches_per_s), major faults ≥ t.major_faults_per_s, a loader worker did
/// not park, or, over spans of ≥ 0.5 s together (the /proc/stat ticks are 10 ms), other processes or steal took
/// ≥ t.others_cpu_share of the `cores`.
std::string calibration_contention(const std::vector<CalibrationSpan>& spans, int cores,
                                   const instrument::DiagnosisThresholds& t = {});

/// Runs the in-run calibration for the trainer: wants() says which global steps to time, begin()/end() bracket their
/// forward + loss + backward (begin pauses the loader and reads the counters; end synchronises a CUDA device, reads
/// them again and resumes the loader). After the last timed step, result() holds the figure (stored in the cache)
/// or step_s 0 with the reason in its line; a refused calibration tries again on the first steps of the next epoch.
/// Trainer thread only.
class InRunCalibration {
 public:
  /// `first_step`: the first global step to time (the trainer: the last two steps of the instrument warm-up, never
  /// the run's first step, which creates the kernels' primitives); `cores`: the usable cores.
  InRunCalibration(std::string key, int64_t first_step, int cores, c10::Device device);
  bool wants(int64_t step) const;
  void begin(data::Loader* loader);
  /// Closes the timed step; true when it completed a try (result().line then says what came of it).
  bool end();
  /// The timed step did not finish (an exception): resumes the loader, drops the try's spans.
  void abandon();
  /// Called at each epoch start: a refused calibration moves its timed steps to `first_step_of_epoch` + 1.
  void on_epoch_start(int64_t first_step_of_epoch);
  bool finished() const { return finished_; }
  const ComputeCalibration& result() const { return result_; }

  static constexpr int kTimedSteps = 2;

 private:
  std::string key_;
  int64_t first_step_;
  int cores_;
  c10::Device device_;
  instrument::ContentionReader reader_;
  instrument::ContentionCounters c0_;
  double cpu0_ = 0;
  int64_t t0_ns_ = 0;
  data::Loader* loader_ = nullptr;
  int unparked_ = 0;
  std::vector<CalibrationSpan> spans_;
  int tries_ = 0;
  bool finished_ = false, in_span_ = false;
  ComputeCalibration result_;
};

}  // namespace yolo11::engine
