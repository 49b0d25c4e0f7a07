#pragma once
// The training loop's one handle on instrumentation: stage timers (monotonic wall time on CPU, CUDA events on
// GPU), NVTX ranges (domain "yolo11"), Chrome trace events, a utilisation sampler, per-window log lines, an
// epoch summary table, breakdown.csv, trace.json, summary.json, and a bottleneck diagnosis with advice.
//
// Use (engine::Trainer):
//   instrument::Profiler prof(opts);                  // starts the sampler thread unless level == off
//   prof.begin_epoch(epoch);                          // NVTX range "epoch N"
//   for (...) {
//     prof.begin_step(step);                          // NVTX range "step N" (step = global step index)
//     { auto s = prof.stage(StepStage::dataloader); batch = loader.next(); }
//     { auto s = prof.stage(StepStage::h2d); ... }    // forward, loss, backward, optimizer, ema
//     prof.end_step(batch.size());                    // every log_every steps: spdlog::info(window line)
//   }
//   spdlog::info("\n{}", prof.end_epoch());           // table; rows also appended to breakdown.csv
//   prof.finish();                                    // summary.json, trace.json; stops the sampler
//
// Stage names (shared by NVTX, timers, trace, logs): the vocabulary in stages.h.
// Threading: begin_*/end_*/stage/finish are called from the trainer thread only; set_queue_depth and
// ScopedRange (range.h) from any thread.
#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "yolo11/core/settings.h"
#include "yolo11/instrument/diagnosis.h"
#include "yolo11/instrument/stages.h"
#include "yolo11/instrument/stats.h"
#include "yolo11/instrument/straggler.h"

namespace yolo11::instrument {

/// off: nothing (a branch per call); basic: timers, NVTX, sampler, log lines, breakdown.csv, summary.json;
/// full: basic + trace.json (Chrome trace events for `trace_steps`, default steps 5:25). The `instrument=` key's enum,
/// parsed by config (core/settings.h).
using Level = core::InstrumentLevel;
using core::to_string;

struct ProfilerOptions {
  Level level = Level::basic;
  int64_t log_every = 10;  ///< steps per window (log line, breakdown.csv rows, window diagnosis); ≥ 1
  int64_t epochs = 0;      ///< the run's epochs: the epoch tables say "epoch N/E"; 0 = unknown ("epoch N")
  /// The first `warmup_steps` steps of this process (oneDNN/cuDNN primitive creation, allocator growth: ~2× a
  /// steady step on CPU) form their own "warmup" window: logged, written to breakdown.csv (kind "warmup") and to
  /// summary.json ("warmup": steps, mean step, ratio to the steady mean), and kept out of the windows, the epoch
  /// tables, the run summary and every diagnosis. 0 = none. ≥ 0.
  int64_t warmup_steps = 0;
  /// Chrome-trace step range [first, last) recorded when level == full; nullopt → steps 5:25.
  std::optional<std::pair<int64_t, int64_t>> trace_steps;
  /// Nsight capture range [first, last): cudaProfilerStart at begin_step(first), Stop at begin_step(last)
  /// (or finish). CUDA builds only; elsewhere logged once and ignored.
  std::optional<std::pair<int64_t, int64_t>> profile_steps;
  /// Operator profile window [first, last) (global steps; ops_profile.h): LibTorch's profiler records every operator
  /// under our stages (user scopes) and writes ops.txt, ops.csv, ops_trace.json to run_dir; the top-5 table and
  /// the window's cost are logged at `last`. Needs level ≠ off.
  std::optional<std::pair<int64_t, int64_t>> profile_ops;
  bool profile_ops_shapes = false;  ///< group the operator table by input shape too (records shapes)
  bool profile_ops_memory = false;  ///< record allocator events: MiB allocated per stage
  int profile_ops_top = 20;         ///< rows of ops.txt
  /// MFU (mfu.h): FLOPs of one training image, 3 × the forward FLOPs at imgsz; 0 → no MFU anywhere.
  double train_flops_per_image = 0;
  /// Peak FLOP/s for MFU; 0 → found at construction when train_flops_per_image > 0: the GPU table by NVML's device
  /// name (bf16/fp16 with amp, else tf32), or on CPU the cached/measured micro-benchmark (bfloat16 with amp, else
  /// float32). `peak_source` says which (filled in when found here).
  double peak_flops = 0;
  std::string peak_source;
  int world_size = 1;         ///< DDP world (trace.json's distributedInfo; world > 1 → trace_rank{rank}.json)
  std::string dist_backend;  ///< "gloo" | "nccl" | "" (not distributed)
  /// NVTX range per operator (and autograd node) in domain "yolo11", nested under the stage ranges, from
  /// construction to finish(), on the constructing (trainer) thread; needs NVTX3 at build time, else logged and ignored.
  bool nvtx_ops = false;
  bool sync = false;  ///< CUDA: synchronize the device at every stage end (exact attribution, slower)
  bool cuda = false;  ///< training on a CUDA device: time GPU stages with CUDA events on the current stream
  int cuda_device = 0;       ///< device index for events, NVML and peak memory
  std::string run_dir;       ///< breakdown.csv, trace.json, summary.json go here; empty → no files
  int rank = 0;              ///< DDP rank of this process (breakdown.csv `rank` column; only rank 0 writes files)
  double sample_hz = 10.0;   ///< sampler frequency (CPU %, RSS, GPU util/memory/clock/power)
  /// Log each window line through spdlog::info. Set false when the trainer prints take_window_line() itself
  /// (diagnosis changes and the final diagnosis are logged either way).
  bool log_lines = true;
  /// The run's settings (workers, batch, imgsz, cache, amp, cores, threads, device; diagnosis.h), quoted back in
  /// advice and written to summary.json "setting". `setting.cores` ≤ 0 → found at construction with
  /// core::usable_cores() (affinity and cgroup quota, core/cpus.h), which fills affinity_cores and quota_* too;
  /// `setting.sync`, `cuda_built` and `cuda_devices` are set at construction from `sync` and this build.
  AdviceContext setting = [] {
    AdviceContext c;
    c.cores = 0;  // found at construction unless the run says
    return c;
  }();
  /// forward + loss + backward per step of this setting's calibration (engine/calibration.h), s; 0 = none.
  /// Every window then carries compute_speed, and the diagnosis calls compute far below it "compute slowed".
  double compute_expected_s = 0;
  DiagnosisThresholds thresholds;
};

class Profiler;

/// RAII stage timer returned by Profiler::stage(): NVTX push/pop + timer (+ CUDA events) + trace event.
/// Move-only; ends at destruction or at stop(), whichever is first. Empty (free) when level == off.
class Stage {
 public:
  Stage() = default;
  Stage(Stage&& o) noexcept;
  Stage& operator=(Stage&&) = delete;
  Stage(const Stage&) = delete;
  Stage& operator=(const Stage&) = delete;
  ~Stage() { stop(); }
  /// Ends the stage now (idempotent).
  void stop() {
    if (prof_ != nullptr) end();
  }

 private:
  friend class Profiler;
  void end();
  Profiler* prof_ = nullptr;
  int index_ = -1;         // stage index inside the profiler
  int64_t start_ns_ = 0;   // steady clock
  int event_slot_ = -1;    // CUDA event pair, −1 without CUDA timing
};

class Profiler {
 public:
  /// Starts the sampler thread unless level == off; creates run_dir if needed. Throws std::runtime_error
  /// for invalid options (log_every < 1, empty/inverted ranges).
  explicit Profiler(ProfilerOptions opts);
  ~Profiler();  ///< calls finish() if it was not called
  Profiler(const Profiler&) = delete;
  Profiler& operator=(const Profiler&) = delete;

  void begin_epoch(int64_t epoch);  ///< opens NVTX range "epoch N" (closed by end_epoch)
  void begin_step(int64_t step);    ///< opens NVTX push range "step N" (closed by end_step)
  /// Starts stage `s` of the vocabulary (stages.h). Call from the trainer thread.
  [[nodiscard]] Stage stage(StepStage s) { return stage(stage_name(s)); }
  /// Starts a stage by name: one of the vocabulary's, or another (a tool's own stage, e.g. "export"), reported
  /// after the known ones. `name` must be a string literal (or outlive the profiler).
  [[nodiscard]] Stage stage(const char* name);
  /// Closes the step: `images` = images in this step's batch. Every log_every steps, closes the window:
  /// logs the window line via spdlog::info, appends breakdown.csv rows, runs the window diagnosis.
  void end_step(int64_t images);
  /// The last window line not yet taken (one per window), e.g.
  /// "dataloader: 0.214s (38%), h2d: ... step: 0.560s, 28.6 img/s, data-wait 38%, GPU 54%".
  std::optional<std::string> take_window_line();
  void set_queue_depth(size_t depth);  ///< loader prefetch queue depth (trace counter); any thread
  /// The expected forward + loss + backward per step (s, ProfilerOptions::compute_expected_s) from now on: windows,
  /// epochs and the run closed after this call compare against it (engine/calibration.h). Trainer thread.
  void set_compute_expected(double step_s);
  /// The loader workers' cumulative CPU seconds (data::Loader::worker_cpu_seconds; negative = gone). Read on the
  /// trainer thread at each step's end and around its "dataloader" stage, it gives every window its
  /// loader_cpu_s and loader_cpu_wait_s (stats.h): the what-if's measure of how much CPU the loader took from the
  /// compute (whatif.h). Without a clock both stay n/a.
  void set_loader_cpu_clock(std::function<double()> cumulative_cpu_s);
  /// Closes the epoch's statistics (flushes a partial window); returns the table (stage, mean, p50, p95, max,
  /// % of step) with the epoch's diagnosis; rows also appended to breakdown.csv (kind "epoch"). The "epoch N"
  /// range itself stays open until the next begin_epoch() or finish(), so stages run after taking the table
  /// (log, checkpoint) still nest inside it; their times go to that epoch's breakdown.csv rows and
  /// summary.json entry (marked after_table), not to the returned table.
  std::string end_epoch();
  /// Writes summary.json (whole run: stages, throughput, utilisation, peak memory, diagnosis) and trace.json
  /// (level full), stops the sampler. Idempotent.
  void finish();
  /// DDP, rank 0: records the straggler report of a closed window (every rank's stage times, straggler.h):
  /// breakdown.csv rows of kind "rank" (one per rank and field; `rank` column = that rank, mean_s = s per step)
  /// and the summary.json "ranks" section (per-rank means over the run, straggler counts, the last verdict).
  void record_ranks(const RankReport& r);
  /// Rank 0, each epoch: the loader workers' per-transform times (data/loader_stats.h), as breakdown.csv rows of
  /// kind "loader" (stage = part, count, mean_s = total / count, p50_s, p95_s, share of the workers' busy time;
  /// the `other` row carries the utilisation line in `diagnosis`).
  void record_loader(int64_t epoch, const std::vector<LoaderPartStats>& parts, const std::string& note);
  /// Diagnosis over the last closed window (over the run so far if no window closed yet).
  Diagnosis diagnose() const;

  /// Stats of the last closed window / of the whole run so far (for tests and the trainer's results).
  const WindowSummary& last_window() const;
  WindowSummary run_summary() const;
  const ProfilerOptions& options() const;
  bool enabled() const { return enabled_; }

  struct Impl;

 private:
  friend class Stage;
  void end_stage(Stage& s);
  bool enabled_ = false;
  std::unique_ptr<Impl> impl_;
};

}  // namespace yolo11::instrument
