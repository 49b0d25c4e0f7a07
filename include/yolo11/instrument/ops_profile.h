#pragma once
// Operator profile over a step window (`profile_ops=START:STOP`): LibTorch's own profiler (the Kineto API of
// torch/csrc/autograd/profiler_kineto.h: prepareProfiler / enableProfiler / disableProfiler → KinetoEvent) records
// every dispatcher operator on the trainer thread (and autograd's threads) during global steps [START, STOP).
// Our stages are opened as user scopes (at::RecordScope::USER_SCOPE, what RECORD_USER_SCOPE does) and each step as
// "ProfilerStep#N" (the name torch.profiler gives its steps), so every operator sits under forward / loss / backward.
// At STOP (or finish) the profile is aggregated like PyTorch's key_averages() and written to the run directory:
//   ops.txt         the table (name, self CPU %/total, CPU total %/total, avg, self device, calls, dominant stage;
//                   top N by self time; grouped by name, or by name and input shapes with shapes=true), then the
//                   per-stage sums (our stage timer, the profiler's scope time, the operators' self time)
//   ops.csv         the same rows, machine-readable (kind "op" / "stage"), read back by yolo11-analyze
//   ops_trace.json  Chrome trace of the window: Kineto's own trace where LibTorch was built with Kineto (CUDA
//                   kernels through CUPTI included), else one written here from the recorded events (cpu_op and
//                   user_annotation events, thread and process metadata)
// Debian's LibTorch 1.13 is built without Kineto: its Kineto API still collects the CPU operators (through
// RecordFunction, the same observer the legacy profiler uses) but writes no trace, hence the fallback writer.
// Everything in this header is torch-free; the collector lives in src/instrument/ops_profile.cpp.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace yolo11::instrument {

struct OpsProfileOptions {
  int64_t start = 0, stop = 0;   ///< global steps [start, stop); 0 ≤ start < stop
  int top = 20;                  ///< rows of ops.txt and of the table printed (the log shows the top 5)
  bool shapes = false;           ///< record input shapes and group rows by (name, input shapes)
  bool memory = false;           ///< record allocator events: bytes allocated per stage
  bool cuda = false;             ///< also record CUDA activity (kernels; needs a LibTorch built with Kineto)
  std::string run_dir;           ///< where ops.txt / ops.csv / ops_trace.json go; empty → nothing written
};

/// One recorded event, as the aggregation sees it (times in ns on the profiler's clock).
struct OpEvent {
  std::string name;
  std::string shapes;      ///< "[[16, 3, 320, 320], [], ...]" or "" when not recorded
  uint64_t thread = 0;     ///< recording thread (device events: stream / resource id)
  int64_t start_ns = 0, dur_ns = 0;
  bool user_scope = false; ///< a user scope (our stage or ProfilerStep#N), not an operator
  bool device = false;     ///< a device (CUDA) activity: kernel, memcpy
  int64_t bytes = 0;       ///< memory events ("[memory]"): bytes allocated (> 0) or freed (< 0)
};

/// Operators with the same name (and shapes, when grouped by shape), over the window.
struct OpRow {
  std::string name, shapes;
  std::string stage;       ///< the stage holding most of its self time ("-" when outside every stage)
  bool device = false;     ///< a device activity row (kernel): its times are device times
  int64_t calls = 0;
  double self_us = 0;      ///< µs, time in the op minus time in its child ops, summed over calls
  double total_us = 0;     ///< µs, inclusive time summed over calls
};

/// One operator's share of one stage over the window: its calls and self time under that stage's scope (OpRow counts
/// every stage in one row and names only the stage holding most of its self time).
struct StageOpRow {
  std::string stage, name;
  bool device = false;
  int64_t calls = 0;
  double self_us = 0;  ///< µs, summed over the calls under this stage
};

/// One of our stages over the window.
struct StageOps {
  std::string stage;
  int64_t scopes = 0;       ///< times the stage's user scope was opened
  double scope_us = 0;      ///< µs, the profiler's own duration of those scopes
  double ops_self_us = 0;   ///< µs, self time of the CPU operators under them
  double device_us = 0;     ///< µs, device time of kernels launched under them (CUDA + Kineto only)
  double timer_us = -1;     ///< µs, our stage timer over the same steps; −1 = n/a (CUDA event timing)
  int64_t op_calls = 0;
  double alloc_mb = 0;      ///< MiB allocated under the stage (memory=true)
};

struct OpsReport {
  int64_t first_step = -1, last_step = -1;  ///< inclusive
  int64_t steps = 0;                        ///< ProfilerStep#N scopes seen
  bool by_shape = false;
  std::string collector;     ///< "kineto" or "kineto API without Kineto (CPU operators only)"
  double cpu_self_total_us = 0;    ///< Σ self time of all CPU operator rows (the 100 % of "Self CPU %")
  double device_self_total_us = 0;
  std::vector<OpRow> ops;          ///< every row, by self time, descending (CPU rows, then device rows)
  std::vector<StageOps> stages;    ///< in the order of the stage names given to aggregate_ops, present ones only
  std::vector<StageOpRow> stage_ops;  ///< per stage (same order), then by self time, descending; never split by shape
  double window_step_s = -1;       ///< mean wall time of a profiled step (from the step timer), s
  double baseline_step_s = -1;     ///< mean step of the window before the profile, s; −1 = none
  double postprocess_s = 0;        ///< disable + aggregate + write, s

  /// The stage row of that name, or nullptr.
  const StageOps* stage(const std::string& name) const;
};

/// Aggregates recorded events: self times from each thread's nesting (a child op's time is not its parent's
/// self time), rows grouped by name (and shapes when `by_shape`), each op attributed to the innermost user
/// scope named in `stage_names` whose interval holds its start (any thread: autograd's device threads too).
/// "ProfilerStep#N" scopes count the steps. Rows sorted by self time, descending.
OpsReport aggregate_ops(const std::vector<OpEvent>& events, const std::vector<std::string>& stage_names,
                        bool by_shape);

/// ops.txt: the table (top `top` rows by self time) and the stage sums. `top` ≤ 0 → every row.
std::string format_ops_table(const OpsReport& r, int top);
/// Each stage's operators (calls and self time under that stage only, over the window), top `top` per stage (0 = all):
/// what ran inside backward, say, which the table's Stage column (the stage of most self time) does not tell.
std::string format_ops_by_stage(const OpsReport& r, int top);
/// The stage section alone (stage | timer | scope | ops self | ops/timer | calls), per step.
std::string format_ops_stages(const OpsReport& r);
/// ops.csv text: header
///   kind,name,input_shapes,stage,device,calls,self_us,self_pct,total_us,avg_us,scope_us,timer_us,alloc_mb
/// then "op" rows (every row of r.ops), "stage_op" rows (r.stage_ops: name = operator, stage, calls and self_us
/// under that stage only) and "stage" rows (name = stage; self_us = its operators' self time).
std::string ops_csv(const OpsReport& r);
/// Reads ops.csv back (ops and stages; steps from the stage rows' header comment). Throws std::runtime_error naming
/// the file and line on a malformed row.
OpsReport read_ops_csv(const std::string& path);
/// Chrome trace (traceEvents with X events cat cpu_op / user_annotation / kernel, ts/dur in µs, process and thread
/// name metadata) of the recorded events; the fallback when LibTorch has no Kineto to write its own.
std::string ops_chrome_trace(const std::vector<OpEvent>& events, int rank = 0);

/// Records the window; owned by instrument::Profiler (the trainer sets ProfilerOptions::profile_ops), or usable
/// alone around any code: begin_step(s) for every step, push/pop around named regions, finish() at the end.
/// Trainer thread only. Without a window step it costs a branch per call.
class OpsProfiler {
 public:
  /// Throws std::runtime_error for an empty or negative window.
  explicit OpsProfiler(OpsProfileOptions o);
  ~OpsProfiler();  ///< finish()
  OpsProfiler(const OpsProfiler&) = delete;
  OpsProfiler& operator=(const OpsProfiler&) = delete;

  /// At the start of global step `step` (before its stages): starts the profiler at `start`, stops it and writes
  /// the files at `stop`; inside the window opens the "ProfilerStep#<step>" scope. `baseline_step_s`: the mean
  /// step before the window (to print the profile's cost), −1 unknown.
  void begin_step(int64_t step, double baseline_step_s = -1);
  /// Closes the step scope; `wall_s` = the step's wall time from the step timer.
  void end_step(double wall_s);
  /// Opens / closes a user scope named `name` (a string literal) while recording; no-ops otherwise.
  void push(const char* name);
  void pop();
  /// Our timer's seconds for `stage` in the current profiled step (summed into StageOps::timer_us).
  void add_timer(const char* stage, double seconds);
  bool active() const { return active_; }
  /// Stops a window still recording (training ended inside it) and writes the files. Idempotent.
  void finish();
  /// The aggregated window, once it is closed.
  const std::optional<OpsReport>& report() const { return report_; }
  const OpsProfileOptions& options() const { return o_; }

 private:
  void start();
  void stop();
  struct Impl;
  OpsProfileOptions o_;
  bool active_ = false, done_ = false;
  std::unique_ptr<Impl> impl_;
  std::optional<OpsReport> report_;
};

}  // namespace yolo11::instrument
