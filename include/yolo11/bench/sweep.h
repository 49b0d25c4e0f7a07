#pragma once
// Benchmark sweeps (yolo11-sweep): every point of a batch × workers × imgsz [× amp × cache] grid trains in its own
// child process (yolo11-train with max_steps, instrument_warmup, log_every=1, no validation, no checkpoint), so an
// out-of-memory kill, a crash or a hang ends that point only. Each point's result is read from the child's own
// instrumentation (breakdown.csv: one window per measured step) and written to runs/sweep/<name>/:
//   sweep.csv  one row per point (kSweepColumns), rewritten after every point (resume= reads it back)
//   sweep.md   the table a person reads, the recommendation and the what-if check
//   sweep.png  img/s against batch (a line per workers value, a panel per imgsz) + stacked stage shares per point
//   points/<id>/  the child's run dir: console.log, train.log, breakdown.csv, summary.json, args.yaml
// No torch dependency in this header.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace yolo11::bench {

/// One grid point. Fields not swept (amp, cache empty) are left to the config.
struct Point {
  int64_t batch = 16, workers = 8, imgsz = 640;
  std::string amp;    ///< "" (config's), "true" or "false"
  std::string cache;  ///< "" (config's), "false", "ram" or "disk"
  /// "b16_w8_s640" (+ "_ampT"/"_ampF", "_cram"/"_cdisk"/"_cfalse" when swept): the points/ folder and CSV id.
  std::string id() const;
  /// "batch=16 workers=8 imgsz=640 [amp=..] [cache=..]"
  std::string label() const;
};

/// Grid axes; every value list non-empty after parse_sweep_args (amp/cache may stay empty = not swept).
struct Grid {
  std::vector<int64_t> batch, workers, imgsz;
  std::vector<std::string> amp, cache;
};

struct SweepOptions {
  std::string cfg_file;                 ///< --cfg, passed to every child
  std::vector<std::string> passthrough; ///< key=value for the child that are not sweep keys (data=, model=, ...)
  Grid grid;
  int64_t steps = 30;                   ///< measured steps per point (≥ 2)
  int64_t warmup = 10;                  ///< unmeasured steps first (the child's instrument_warmup)
  double point_timeout = 0;             ///< s per child, 0 = none; a point past it is killed and recorded "timeout"
  bool synthetic = false;               ///< data=synthetic: children reuse one batch (synthetic_data=true)
  bool check_whatif = true;             ///< after the grid: re-run the best point with data=synthetic (what-if check)
  std::string project = "runs/sweep";
  std::string name = "sweep";
  bool resume = false;                  ///< reuse runs/sweep/<name>/sweep.csv: points already there are not re-run
  bool exist_ok = false;                ///< write into an existing sweep dir without resume (points are re-run)
  std::string train_exe;                ///< child executable; "" → yolo11-train beside this executable
};

/// Parses `yolo11-sweep` arguments (without --cfg): batch=8,16,32 workers=0,2 imgsz=320,640 amp=true,false
/// cache=false,ram steps=30 warmup=10 point_timeout=600 data=synthetic name= project= resume=true exist_ok=true
/// check_whatif=false train_exe=PATH; other key=value go to `passthrough` (checked by the child's key table).
/// Defaults: batch=16 workers=8 imgsz=640 when an axis is not given. Throws std::runtime_error naming the argument.
SweepOptions parse_sweep_args(const std::vector<std::string>& args);

/// Every point, ordered imgsz, amp, cache, workers, then batch ascending (so an OOM at a batch skips the larger ones).
std::vector<Point> expand_grid(const Grid& g);

/// The child's arguments (without argv[0]) for `p`, writing its run dir to `<points_dir>/<id>`.
std::vector<std::string> child_args(const SweepOptions& o, const Point& p, const std::string& points_dir,
                                    bool synthetic);

enum class Status { ok, oom, timeout, crash, error, skipped };
const char* to_string(Status s);  ///< "ok" | "oom" | "timeout" | "crash" | "error" | "skipped"
Status parse_status(const std::string& s);  ///< inverse of to_string; throws std::runtime_error otherwise

/// What one point measured (−1 = n/a). Shares are fractions of the mean step.
struct PointResult {
  Point point;
  Status status = Status::error;
  std::string reason;               ///< failure reason (empty when ok)
  int exit_code = -1;               ///< child's exit status; 128 + signal when killed
  bool synthetic = false;
  int64_t steps = 0, images = 0;    ///< measured
  double img_s = -1, img_s_lo = -1, img_s_hi = -1;  ///< images / summed step time; 95 % interval (t, per step)
  double step_ms_mean = -1, step_ms_p50 = -1, step_ms_p95 = -1;
  std::map<std::string, double> shares;  ///< stage → share of the step (kStepStages)
  double data_wait = -1;            ///< dataloader share
  double cpu_percent = -1;          ///< mean process CPU % over the measured steps (100 = one core)
  double rss_mb = -1;               ///< child's peak RSS (wait4 ru_maxrss), MiB
  double gpu_mem_mb = -1, peak_alloc_mb = -1, gpu_util = -1, sm_activity = -1, mfu = -1;
  double whatif_no_data_ms = -1;    ///< predicted step without the loader wait (instrument::what_if)
  double wall_s = -1;               ///< child's wall time, start to exit
};

/// CSV header, in order. Stable: tests pin it.
const std::vector<std::string>& sweep_columns();
std::string to_csv_row(const PointResult& r);
/// Writes header + rows (atomically). Throws std::runtime_error when the file cannot be written.
void write_sweep_csv(const std::string& path, const std::vector<PointResult>& rows);
/// Reads a sweep.csv written by write_sweep_csv; throws std::runtime_error naming file and line when the header or a
/// row does not match sweep_columns().
std::vector<PointResult> read_sweep_csv(const std::string& path);

/// The rule: `best` = the highest img/s among ok points; `cheapest` = among ok points within `tolerance` (5 %) of it,
/// the fewest workers, then the smallest batch, then the smallest imgsz, then the highest img/s. Pure.
struct Recommendation {
  bool found = false;
  size_t best = 0, cheapest = 0;  ///< indices into the results
  std::string sentence;           ///< why, e.g. "workers beyond 2 add nothing: compute-bound at 96 %"
};
Recommendation recommend(const std::vector<PointResult>& results, double tolerance = 0.05);

/// sweep.md: settings, a table of every point (failed ones with their reason), the recommendation and `extra` lines.
std::string format_sweep_md(const SweepOptions& o, const std::vector<PointResult>& rows, const Recommendation& rec,
                            const std::string& extra);
/// sweep.png (plot/chart.h): per imgsz a chart of img/s against batch (y from 0, nice ticks, 95 % intervals as
/// vertical bars), one line per workers value (failed points marked × on the axis with their status), and a
/// stacked-bar chart of the stage shares (percent of the step) per ok point, named by its id. Throws
/// std::runtime_error when it cannot be written.
void plot_sweep(const std::string& path, const std::vector<PointResult>& rows);

/// How a child ended.
struct ChildOutcome {
  bool started = false;   ///< false: spawn failed (`error` says why)
  int exit_code = -1;     ///< WEXITSTATUS, or 128 + signal
  int signal = 0;         ///< terminating signal, 0 when it exited
  bool timed_out = false; ///< killed by us after the timeout
  double wall_s = 0;
  double max_rss_mb = -1; ///< ru_maxrss of the child
  std::string error;
};
/// posix_spawn `exe args...` in its own process group, stdout+stderr appended to `log_path` after a line
/// "# exe args..."; waits up to `timeout_s` (0 = forever), then SIGKILLs the group. Never throws for a failing child.
ChildOutcome run_child(const std::string& exe, const std::vector<std::string>& args, const std::string& log_path,
                       double timeout_s);

/// Status and reason of a finished child from its outcome and the tail of its log: exit 0 → ok; our kill → timeout;
/// SIGKILL otherwise → oom (the kernel's OOM killer); another signal → crash; a log naming "out of memory",
/// "bad_alloc" or "can't allocate memory" → oom; else error with the last error line. Pure.
std::pair<Status, std::string> classify(const ChildOutcome& c, const std::string& log_tail, double timeout_s);

/// Fills the measurements of `r` from a child's run dir (breakdown.csv windows, summary.json). Sets status error
/// with a reason when no measured step is there.
void read_point_measurements(const std::string& run_dir, PointResult& r);

/// Runs the sweep (skipping points in sweep.csv when resuming), prints a progress line per point (done/total, ETA,
/// best so far) via spdlog, writes every output, and returns the results in grid order. The what-if check re-runs the
/// best point with data=synthetic and reports predicted vs measured step time in sweep.md.
struct SweepReport {
  std::string dir;
  std::vector<PointResult> results;
  Recommendation rec;
  std::string summary;  ///< the recommendation and what-if lines, as printed
};
SweepReport run_sweep(const SweepOptions& o);

/// Path of yolo11-train next to the running executable (/proc/self/exe), else "yolo11-train" from PATH.
std::string default_train_exe();

}  // namespace yolo11::bench
