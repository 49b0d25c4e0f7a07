#pragma once
// Bottleneck diagnosis from a window's stage shares, data-wait tail and GPU utilisation, with advice that
// names the current settings and a concrete change. Thresholds are relative (see docs/instrument.md).
#include <cstdint>
#include <string>
#include <vector>

#include "yolo11/core/settings.h"

namespace yolo11::instrument {

struct WindowSummary;
struct ProcessMemory;

/// none: nothing measured to judge (every step of the run fell in the instrument warm-up).
/// compute_slowed: compute dominates the step (or, with no stage over its threshold, is the largest), but the
/// trainer's threads spent a large share of their runnable time waiting for a core, were throttled or slept, or
/// compute ran below its calibrated speed (contention: other processes, the run's own oversubscription, a CPU quota,
/// memory pressure). balanced: no stage over its threshold and no sign of contention.
enum class Bottleneck { balanced, data, compute, optimizer_sync, none, compute_slowed };
/// "balanced" | "data-bound" | "compute-bound" | "optimizer/sync-bound" | "no diagnosis" | "compute slowed"
const char* to_string(Bottleneck b);

/// Relative thresholds; shares are fractions of the mean step wall time.
struct DiagnosisThresholds {
  double data_share = 0.25;       ///< data wait ≥ this share → data-bound
  double data_tail_share = 0.10;  ///< ... or data wait ≥ this share and p95/p50 of data wait ≥ data_tail
  double data_tail = 3.0;
  double optimizer_share = 0.30;  ///< h2d + optimizer + ema ≥ this share → optimizer/sync-bound
  double compute_share = 0.70;    ///< forward + loss + backward ≥ this share → compute-bound ...
  double gpu_busy = 80.0;         ///< ... on GPU also when util ≥ this % (below it: under-filled GPU)
  /// NVML GPM: a GPU "busy" (util ≥ gpu_busy) with SM activity under this % is launch-bound (tiny kernels).
  double sm_active_low = 50.0;
  /// Contention (instrument/contention.h): compute counts as slowed when the trainer's threads waited for a core for
  /// ≥ this share of their runnable time (run-queue wait / (wait + run)); on a quiet machine it stays under 5 %.
  double runq_wait = 0.20;
  double others_cpu_share = 0.25;  ///< other processes busy on ≥ this share of the usable cores → they are the cause
  double major_faults_per_s = 100;  ///< ... or memory pressure: major page faults per second ≥ this
  double memory_pressure = 0.10;    ///< ... or /proc/pressure/memory "some" ≥ this share of the time
  /// ... or a cgroup CPU quota that ran out in ≥ this share of its periods (the kernel stopped the run's threads)
  double quota_throttled = 0.5;
  /// ... or the process's threads switched out voluntarily ≥ this often per second (contention.h): the intra-op
  /// threads sleep between parallel regions instead of spinning. Measured on 2 cores: 20–40/s on a quiet run,
  /// about 5,800/s when a loader thread's OpenMP team made libgomp stop spinning (docs/instrument.md).
  double voluntary_switches_per_s = 1000;
  /// ... or compute below this share of its calibrated speed (engine/calibration.h: calibrated / measured time)
  double compute_speed_low = 0.7;
};

/// The settings the advice quotes back.
struct AdviceContext {
  int workers = 8;
  int64_t batch = 16;
  int64_t imgsz = 640;
  core::CacheMode cache = core::CacheMode::off;
  bool amp = true;
  int cores = 1;
  std::string device = "cpu";
  bool sync = false;  ///< profiler sync mode (a device sync per stage inflates optimizer/sync time)
  int threads = 0;    ///< intra-op compute threads (the what-if's CPU contention, whatif.h); 0 = unknown
  /// The trainer's build has CUDA (compat::built_with_cuda): the CPU advice then says device=0, else how to get a
  /// CUDA build (device=0 would stop with "no CUDA"). Analyses of finished runs keep the default.
  bool cuda_built = true;
  /// CUDA devices this process sees (compat::cuda_device_count); −1 = unknown (analyses of finished runs). With a
  /// CUDA build and 0 devices the advice names a machine with a GPU instead of device=0, which would stop here.
  int cuda_devices = -1;
  /// Where `cores` comes from (core/cpus.h): the cores the affinity mask allows (0 = unknown) and a cgroup CPU quota
  /// in cores (−1 = none) with the file that sets it. The quota is the cause when it is below the affinity cores.
  int affinity_cores = 0;
  double quota_cores = -1;
  std::string quota_file;
};

struct Diagnosis {
  Bottleneck bottleneck = Bottleneck::balanced;
  std::string reason;  ///< measured evidence, e.g. "data wait 72% of step, p95/p50 3.1, GPU 41%"
  std::string advice;  ///< concrete change naming current settings; empty when balanced
  double data_share = 0, data_tail = 0, compute_share = 0, optimizer_share = 0;
  double gpu_util = -1;  ///< −1 = n/a
  /// "data-bound: data wait 72% of step, p95/p50 3.1: workers=2 on 16 cores → try workers=8, cache=ram"
  std::string to_string() const;
};

/// Pure function of the window; deterministic (unit-tested on synthetic windows).
Diagnosis diagnose(const WindowSummary& w, const AdviceContext& ctx, const DiagnosisThresholds& t = {});

/// Memory over a run, one reading per epoch in order (instrument/sampler.h; the profiler takes one at each epoch
/// end), the first taken after epoch `first_epoch` (1-based). Returns "" while RSS is steady, else a warning: how much RSS grew since the third epoch, and whether the
/// heap in use grew (a leak or a growing cache) or only the allocator's free chunks (retention, not a leak), with
/// the figures. "Rising" = ≥ 6 epochs, RSS ≥ 5 % above the third reading's and higher at each of the last three.
std::string memory_trend(const std::vector<ProcessMemory>& per_epoch, int64_t first_epoch = 1);

}  // namespace yolo11::instrument
