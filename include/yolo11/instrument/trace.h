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
/// What Holistic Trace Analysis / Kineto consumers read besides the events (docs/instrument.md "HTA / Perfetto").
struct TraceMeta {
  std::string process_name = "yolo11";  ///< the process track's name ("yolo11 rank R" in DDP)
  int rank = 0, world_size = 1;         ///< distributedInfo
  std::string backend;                  ///< distributedInfo.backend ("gloo", "nccl"; "" = not distributed)
  std::string device;                   ///< process_labels, e.g. "cpu" or "cuda:0 NVIDIA H200"
};
/// Writes {"schemaVersion": 1, "traceEvents": [...], "displayTimeUnit": "ms", "distributedInfo": {...},
/// "otherData": {...}} atomically to `path`: X events have cat "user_annotation" (our stages, "step N" and
/// "ProfilerStep#N", as torch.profiler names its steps), M events name the process (with process_labels and
/// process_sort_index = rank) and each thread. `other_data_json` must be a JSON object text (or empty).
/// Throws std::runtime_error on I/O failure.
void write(const std::string& path, const std::string& other_data_json = "", const TraceMeta& meta = {});
/// Drops every recorded event (thread names are kept) and stops recording.
void clear();

}  // namespace trace
}  // namespace yolo11::instrument
