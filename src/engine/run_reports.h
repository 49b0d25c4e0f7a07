#pragma once
// The trainer's reports on a Run (src/engine/trainer.cpp calls them): the DDP straggler report of each closed window
// (src/engine/straggler_report.cpp), the loader's per-part table of each epoch and the end-of-run tables
// (src/engine/run_reports.cpp). Internal to the engine: user callbacks read the same figures from the Profiler.
#include "yolo11/engine/detail/run.h"

namespace yolo11::engine {

/// DDP, after Profiler::end_step on every rank: when that step closed a window, gathers every rank's stage times
/// per step (one all-reduce of a world × kRankFields double matrix; every rank closes the same windows) and, on rank
/// 0, logs the straggler report and records it (breakdown.csv kind "rank", summary.json "ranks";
/// instrument/straggler.h).
void report_ranks(Run& run);

/// After each epoch's table: the train loader's per-part times of the epoch (Run::loader_report, else
/// Loader::take_stats now; every rank) and, on rank 0, logs them to train.log with the disk read rate since the
/// previous report (instrument::process_read_bytes), keeps them as Run::loader_table and records them (breakdown.csv
/// kind "loader").
void report_loader(Run& run);

/// The end of a run, on the console and in train.log (rank 0, instrument on): the stage table of every step
/// measured outside the warm-up and the latest epoch's loader-part table; the run diagnosis follows
/// (Profiler::finish). The per-epoch tables are in train.log only.
void report_run(Run& run);

}  // namespace yolo11::engine
