#pragma once
// Graceful stop on SIGINT / SIGTERM (issue 10). The executable installs the handlers; the trainer polls
// stop_signal() after each step (world 1) or at each epoch end (DDP, where rank 0's decision is broadcast), stops
// there, writes what the run has (results.csv so far, summary.json with "interrupted": true) and returns a
// TrainSummary with `interrupted`; yolo11-train then exits with 128 + signal (130 SIGINT, 143 SIGTERM).
// A second signal exits at once (_exit(128 + signal)) without writing anything more: every file the run writes is
// replaced atomically, so nothing is left half-written (train.log and breakdown.csv are appended line by line).
#include <string>

namespace yolo11::engine {

/// Installs the SIGINT and SIGTERM handlers described above (idempotent). Not called by the library itself.
void install_stop_signal_handlers();

/// The first stop signal received (SIGINT, SIGTERM), or 0 when none. Async-signal-safe to read.
int stop_signal();

/// Sets the stop request as if `sig` had been received (tests, embedding applications). 0 clears it.
void request_stop(int sig);

/// "SIGINT", "SIGTERM", or "signal N".
std::string signal_name(int sig);

/// Records how the run ended in <run_dir>/summary.json: {"interrupted": false, "epochs_done": N} for sig 0 (only
/// when the profiler wrote a summary.json); else {"interrupted": true, "signal": NAME, "interrupted_at": {"epoch": E,
/// "step": S}, "epochs_done": N} (E 1-based, S the global step index the run stopped before), writing a minimal file
/// when the profiler wrote none (instrument=off). Atomic replace. No-op for an empty run_dir.
void mark_summary_interrupted(const std::string& run_dir, int sig, int64_t epoch, int64_t step, int64_t epochs_done);

}  // namespace yolo11::engine
