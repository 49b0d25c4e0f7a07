#pragma once
// Per-stage statistics over a window of steps, an epoch or a run. Times in seconds; shares are fractions of
// the mean step wall time (0.38 = 38 %). No torch dependency.
#include <cstdint>
#include <string>
#include <vector>

#include "yolo11/instrument/contention.h"
#include "yolo11/instrument/stages.h"

namespace yolo11::instrument {

/// One loader part's times over an epoch (data::LoaderRecorder::take fills it, Profiler::record_loader writes it):
/// `name` is one of data::kLoaderParts. Times in seconds.
struct LoaderPartStats {
  std::string name;
  int64_t count = 0;            ///< calls (for "other": batches)
  double total_s = 0;           ///< summed over workers
  double p50_s = 0, p95_s = 0;  ///< per call
  double share = 0;             ///< total_s / the workers' busy time
};

struct StageSummary {
  std::string name;
  int64_t count = 0;  ///< samples (steps in which the stage ran, or calls for epoch-level stages)
  double total = 0;   ///< s, sum over the samples
  double mean = 0, p50 = 0, p95 = 0, max = 0;  ///< s per sample
  double share = 0;   ///< total / total step wall time (epoch-level stages: of the epoch wall time)
  bool per_epoch = false;  ///< an epoch-level stage (val, checkpoint, log): share is of the epoch wall time
};

/// One window (log_every steps), epoch or run.
struct WindowSummary {
  std::string kind = "window";  ///< "window" | "epoch" | "run"
  int64_t epoch = -1;
  int64_t first_step = -1, last_step = -1;  ///< inclusive global step indices
  int64_t steps = 0, images = 0;
  StageSummary step;                 ///< wall time per step (name "step")
  double images_per_s = 0;           ///< images / sum of step wall time
  std::vector<StageSummary> stages;  ///< step stages in kStepStages order, then others
  double gpu_util = -1;              ///< mean GPU utilisation % over the window; −1 = n/a
  double gpu_mem_mb = -1;            ///< max NVML memory used, MiB; −1 = n/a
  double peak_alloc_mb = -1;         ///< allocator peak device memory, MiB; −1 = n/a
  double cpu_percent = -1;           ///< mean process CPU % (100 = one core); −1 = n/a
  double rss_mb = -1;                ///< max resident set, MiB; −1 = n/a
  double sm_active = -1, sm_occupancy = -1, tensor_active = -1, dram_bw = -1;  ///< NVML GPM means, %; −1 = n/a
  double tflops = -1;                ///< achieved training TFLOP/s (FLOPs per image × img/s); −1 = n/a
  double mfu = -1;                   ///< model FLOPs utilisation, tflops / peak (0..1); −1 = n/a
  /// CPU time the loader workers used during the window's steps (s, Σ over workers, from their thread CPU clocks),
  /// and the part of it that fell inside the trainer's "dataloader" stage (its wait); −1 = n/a (no clock, or the
  /// synchronous loader). The rest ran while the trainer computed: on a CPU device it competed with the compute.
  double loader_cpu_s = -1, loader_cpu_wait_s = -1;
  /// Contention over the window (instrument/contention.h): the trainer threads' run-queue wait, cores other processes
  /// used, CPU / memory / I/O pressure, major faults, load; each −1 when n/a.
  ContentionRates contention;
  /// forward + loss + backward per step that the setting's calibration reached (engine/calibration.h), s,
  /// and this window's speed against it: calibrated time / measured time (1 = as fast, 0.5 = twice as slow);
  /// −1 = no calibration.
  double compute_expected_s = -1, compute_speed = -1;

  /// The stage of that name, or nullptr.
  const StageSummary* find(const std::string& name) const;
  /// Share of step time of that stage (0 when absent).
  double share(const std::string& name) const;
  const StageSummary* find(StepStage s) const { return find(std::string(stage_name(s))); }
  double share(StepStage s) const { return share(std::string(stage_name(s))); }
  /// Share of step time of forward + loss + backward (kComputeStages).
  double compute_share() const;
  /// Sets compute_expected_s and compute_speed from forward + loss + backward per step (no-op when expected ≤ 0).
  void set_compute_expected(double expected_s);
};

/// Linear-interpolated percentile (q in [0,1]) of `v` (copied and sorted); 0 for an empty vector.
double percentile(std::vector<double> v, double q);
/// Fills count/total/mean/p50/p95/max of `out` from samples (seconds).
void summarize_samples(const std::vector<double>& samples, StageSummary& out);

/// "dataloader: 0.214s (38%), h2d: 0.010s (2%), ... step: 0.560s, 28.6 img/s, data-wait 38%, GPU 54%"
/// (GPU n/a when unknown). Parsed back by parse_window_line.
std::string format_window_line(const WindowSummary& w);
/// Parses a window line (anywhere inside a log line); false when `line` is not one.
bool parse_window_line(const std::string& line, WindowSummary& out);
/// Table: stage | mean | p50 | p95 | max | % of step, plus a step row and throughput/utilisation footer. An epoch
/// table is headed "epoch N/E" (N 1-based; "epoch N" when `epochs` is 0, unknown).
std::string format_table(const WindowSummary& w, int64_t epochs = 0);

}  // namespace yolo11::instrument
