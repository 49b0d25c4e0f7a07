#pragma once
// Offline analysis of a run's instrumentation output (yolo11-analyze): reads breakdown.csv (preferred) or the
// window lines of train.log, combines the windows into one per-stage summary and diagnoses the bottleneck.
#include <optional>
#include <string>
#include <vector>

#include "yolo11/instrument/diagnosis.h"
#include "yolo11/instrument/ops_profile.h"
#include "yolo11/instrument/stats.h"

namespace yolo11::instrument {

struct AnalyzeResult {
  std::string source;                  ///< the file the windows came from
  std::vector<WindowSummary> windows;  ///< in file order
  std::vector<StageSummary> epoch_stages;  ///< val / checkpoint / log, combined over epochs (breakdown.csv only)
  WindowSummary overall;               ///< windows combined (kind "run")
  AdviceContext context;               ///< settings quoted by the advice (summary.json / args.yaml / defaults)
  std::string context_source;          ///< "summary.json", "args.yaml" or "" (not found: Ultralytics defaults assumed)
  Diagnosis diagnosis;                 ///< of `overall`
  /// Where `overall` comes from: "summary.json" (the trainer's run summary, exact per-step percentiles, used when it
  /// covers the same steps as the windows) or "windows" (combine_windows).
  std::string overall_source = "windows";
  std::vector<Diagnosis> window_diagnoses;
  std::string report;                  ///< human-readable table + diagnosis
  bool warmup_only = false;            ///< no steady window: the warm-up window was analyzed (said in the report)
  std::optional<OpsReport> ops;        ///< the run's ops.csv (profile_ops), when present; its top 10 are in the report
};

/// Window rows (kind "window") of a breakdown.csv. Throws std::runtime_error naming the file and line when
/// the header or a row is malformed.
/// Warm-up rows (kind "warmup") go to `warmup` when given, never into the returned windows.
std::vector<WindowSummary> read_breakdown_csv(const std::string& path, std::vector<StageSummary>* epoch_stages = nullptr,
                                              std::vector<WindowSummary>* warmup = nullptr);
/// Every window line found in a log (train.log or a captured console); other lines are ignored; the warm-up line
/// ("warm-up (steps a-b, ...): ...") goes to `warmup` when given.
std::vector<WindowSummary> read_log_windows(const std::string& path, std::vector<WindowSummary>* warmup = nullptr);
/// Combines windows: totals add up; mean = total / count; p50 = median of window p50s, p95 = 95th percentile of
/// window p95s (windows keep no raw samples), max = max; shares of the summed step time.
WindowSummary combine_windows(const std::vector<WindowSummary>& windows);
/// The `run` entry of a summary.json written by the Profiler (every measured step of the run, exact percentiles),
/// without its epoch-level stages; nullopt when the file is missing, unreadable or has no run entry.
std::optional<WindowSummary> read_summary_run(const std::string& path);
/// The settings a run's advice and what-if depend on (workers, batch, imgsz, cache, amp, cores, threads, device,
/// sync): `options` of <run_dir>/summary.json (written by the Profiler), else <run_dir>/args.yaml, else defaults
/// (cores: this machine's). `source` is set to "summary.json", "args.yaml" or "" accordingly. Throws
/// std::runtime_error naming args.yaml when it exists but cannot be read.
AdviceContext load_context(const std::string& run_dir, std::string& source);
/// `path`: a run directory (breakdown.csv, else train.log; summary.json / args.yaml give the advice context),
/// or a breakdown.csv / log file. Throws std::runtime_error when nothing can be read or no window is found.
AnalyzeResult analyze_run(const std::string& path);

}  // namespace yolo11::instrument
