#pragma once
// Profiler::Impl, private to src/instrument: the profiler's state and the methods shared by profiler.cpp (stage timing,
// windows, epochs) and profiler_report.cpp (breakdown.csv rows, summary.json, trace.json).
#include <nlohmann/json.hpp>

#include <cstdint>
#include <fstream>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "yolo11/core/compat.h"
#include "yolo11/instrument/ops_profile.h"
#include "yolo11/instrument/profiler.h"
#include "yolo11/instrument/sampler.h"

namespace yolo11::instrument {

namespace detail {

// Samples of one window / epoch / run, per stage index.
struct Accum {
  int64_t epoch = -1, first_step = -1, last_step = -1, images = 0;
  int64_t t0_ns = 0, t1_ns = 0;
  std::vector<double> step;                // wall seconds per step
  std::vector<std::vector<double>> stage;  // per stage: seconds per step in which it ran / per call (epoch-level)
  double loader_cpu = 0, loader_cpu_wait = 0;  // Σ over the steps that have them (loader_cpu_steps)
  int64_t loader_cpu_steps = 0;
  void reset(size_t n_stages) {
    *this = Accum();
    stage.resize(n_stages);
  }
  int64_t steps() const { return static_cast<int64_t>(step.size()); }
};

// One step whose GPU-timed stages may still be in flight.
struct StepRecord {
  int64_t step = 0, images = 0;
  double wall = 0;
  std::vector<double> seconds;  // per stage, summed over calls in the step
  std::vector<char> ran;
  std::vector<std::pair<int, int>> pending;  // (stage index, event slot)
  double loader_cpu = -1, loader_cpu_wait = 0;  // loader workers' CPU s in this step / in its dataloader stage; −1 n/a
};

}  // namespace detail

struct Profiler::Impl {
  using Accum = detail::Accum;
  using StepRecord = detail::StepRecord;

  ProfilerOptions o;
  AdviceContext ctx;
  std::vector<const char*> names;  // stage index → name (known stages first)
  std::vector<char> per_epoch;     // stage index → epoch-level stage
  std::vector<char> gpu_timed;     // stage index → timed with CUDA events
  bool cuda_timing = false;
  mutable bool peak_rejected = false;  // a window achieved more than the CPU peak: MFU n/a from then on (warned once)
  std::unique_ptr<compat::EventTimer> events;
  std::unique_ptr<Sampler> sampler;
  std::unique_ptr<OpsProfiler> ops;  // profile_ops window (null without one)
  std::function<double()> loader_cpu_clock;  // set_loader_cpu_clock; empty = none
  double loader_cpu_last = -1;               // clock at the previous step end (or epoch start); −1 = no baseline
  double loader_cpu_wait_t0 = -1;            // clock when the open "dataloader" stage began
  /// The loader clock (negative when there is none or it failed).
  double read_loader_clock() const;

  int64_t t_start = 0;
  int64_t epoch = -1;
  int64_t epoch_t0 = 0;
  uint64_t epoch_nvtx = 0;
  bool epoch_open = false, epoch_traced = false;
  // The "epoch N" NVTX/trace range stays open after end_epoch() until the next begin_epoch() or finish(), so
  // stages the trainer runs after taking the table (log, checkpoint) still nest inside it; their times are
  // added to that epoch's breakdown.csv rows and summary.json entry ("late" stages).
  bool epoch_range_open = false;
  double closed_epoch_wall = 0;
  WindowSummary closed_epoch;
  int64_t step = -1;
  int64_t step_t0 = 0, last_step_end = 0;
  bool step_open = false;
  StepRecord cur;
  std::vector<StepRecord> window_steps;
  int64_t window_t0 = 0;
  std::vector<StepRecord> warmup_rec;  // steps of the warm-up window (ProfilerOptions::warmup_steps)
  int64_t steps_seen = 0;              // steps ended in this process
  std::optional<WindowSummary> warmup;  // the closed warm-up window

  Accum epoch_acc, run_acc;
  std::vector<std::vector<double>> epoch_level;  // per stage: seconds per call outside steps, this epoch
  WindowSummary last_window;
  bool have_window = false;
  Diagnosis last_diag;
  bool have_diag = false;
  std::optional<std::string> pending_line;
  std::vector<nlohmann::json> epochs_json;
  std::vector<ProcessMemory> epoch_memory;  // one reading per epoch end of this process (summary.json "memory")
  int64_t memory_first_epoch = 1;           // 1-based epoch of epoch_memory[0]
  bool memory_warned = false;               // memory_trend's warning is logged once per run

  // DDP straggler reports recorded by rank 0 (record_ranks): per-rank sums of the window rows, for summary.json.
  std::vector<RankRow> rank_sums;
  int64_t rank_windows = 0;
  std::vector<int64_t> straggler_counts;  // [rank]
  std::string last_rank_verdict;

  std::ofstream csv;
  bool profiling = false, profile_done = false, finished = false;
  int64_t windows = 0;

  // breakdown.csv rows are buffered and written at most once a minute from end_step, and at every epoch end
  // and finish: the trainer thread makes no file I/O in ordinary steps.
  static constexpr int64_t kCsvFlushNs = 60'000'000'000;
  std::string csv_buffer;
  int64_t csv_last_flush = 0;

  int index_of(const char* name);
  void new_step_record();
  // GPU durations of the steps in the window: non-blocking queries first, then a wait on what is left
  // (one event wait per window, never a device-wide sync per stage).
  void resolve(std::vector<StepRecord>& steps);
  // val / checkpoint / log, and any stage opened outside a step, each as its share of the epoch's wall time.
  std::vector<StageSummary> epoch_level_summaries(double epoch_wall) const;
  WindowSummary summarize(const std::string& kind, const Accum& a, bool with_epoch_level, double epoch_wall) const;
  void add_to(Accum& a, const StepRecord& r);
  void close_window(int64_t t_end);
  void close_warmup(int64_t t_end);
  void close_epoch_range(int64_t end);
  void find_peak();  // o.peak_flops / o.peak_source for MFU

  // ---- reports (profiler_report.cpp) ----
  void flush_csv();
  void write_csv(const WindowSummary& w, const Diagnosis& d, bool with_step_row = true);
  nlohmann::json to_json(const WindowSummary& w, const Diagnosis* d) const;
  /// summary.json (merged with an earlier process's epochs on resume) and trace.json (instrument=full): at finish().
  void write_summary(bool traced);
};

}  // namespace yolo11::instrument
