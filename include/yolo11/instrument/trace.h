#pragma once
// Process-wide Chrome trace recorder (trace event format, opens in Perfetto / chrome://tracing): one track
// per thread ("X" complete events), counters ("C": GPU %, queue depth, RSS ...), thread names ("M").
// Process-wide because loader threads mark ranges through ScopedRange without a profiler handle; the
// Profiler switches recording on and off for its trace step range. Each thread appends to its own buffer
// (an uncontended mutex), so recording costs ~0.1 µs per event and nothing while off.
#include <cstdint>
#include <string>

namespace yolo11::instrument {

/// Monotonic clock (std::chrono::steady_clock), nanoseconds.
int64_t now_ns();

namespace trace {

/// Whether events are being recorded now (a relaxed atomic load).
bool recording();
/// Starts/stops recording. Starting the first time fixes the time origin (ts 0) unless set_origin was called.
void set_recording(bool on);
/// Time origin for ts (default: first set_recording(true)).
void set_origin(int64_t origin_ns);
/// Complete event on the calling thread; `name` must outlive the trace (string literal). Ignored when not
/// recording. Times from now_ns().
void complete(const char* name, int64_t start_ns, int64_t end_ns);
/// Same with an owned name (e.g. "step 12") and an integer arg shown in the viewer (args.value).
/// `even_if_stopped` records it although recording is off (an epoch range that encloses traced steps).
void complete(std::string name, int64_t start_ns, int64_t end_ns, int64_t arg, bool even_if_stopped = false);
/// Counter sample (a separate counter track named `name`). Ignored when not recording.
void counter(const char* name, double value, int64_t ts_ns);
/// Names the calling thread's track (also done by instrument::name_this_thread).
void set_thread_name(const std::string& name);
/// Number of events recorded so far (all threads).
int64_t event_count();
/// Writes {"traceEvents": [...], "displayTimeUnit": "ms", "otherData": {...}} atomically to `path`.
/// `other_data_json` must be a JSON object text (or empty). Throws std::runtime_error on I/O failure.
void write(const std::string& path, const std::string& other_data_json = "");
/// Drops every recorded event (thread names are kept) and stops recording.
void clear();

}  // namespace trace
}  // namespace yolo11::instrument
