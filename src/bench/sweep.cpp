// bench::run_sweep (include/yolo11/bench/sweep.h): the grid, one child process per point, failures as data,
// progress with ETA and best so far, resume, outputs, and the what-if check against a data=synthetic re-run.
#include <spdlog/fmt/fmt.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "yolo11/bench/sweep.h"
#include "yolo11/config/train_config.h"
#include "yolo11/io/file.h"
#include "yolo11/io/run_dir.h"

namespace yolo11::bench {

namespace fs = std::filesystem;

namespace {

std::string tail_of(const std::string& path, size_t bytes) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "";
  in.seekg(0, std::ios::end);
  const auto size = static_cast<size_t>(in.tellg());
  const size_t from = size > bytes ? size - bytes : 0;
  in.seekg(static_cast<std::streamoff>(from));
  std::string s(size - from, '\0');
  in.read(s.data(), static_cast<std::streamsize>(s.size()));
  return s;
}

std::string duration(double s) {
  if (s < 60) return fmt::format("{:.0f}s", s);
  if (s < 3600) return fmt::format("{:.0f}m{:02.0f}s", std::floor(s / 60), std::fmod(s, 60));
  return fmt::format("{:.0f}h{:02.0f}m", std::floor(s / 3600), std::floor(std::fmod(s, 3600) / 60));
}

std::string row_id(const PointResult& r) { return r.point.id() + (r.synthetic ? "_synthetic" : ""); }

PointResult run_point(const SweepOptions& o, const Point& p, const std::string& dir, const std::string& exe,
                      bool synthetic) {
  PointResult r;
  r.point = p;
  r.synthetic = synthetic;
  const std::string points = dir + "/points";
  const std::string pdir = points + "/" + p.id() + (synthetic ? "_synthetic" : "");
  fs::remove_all(pdir);  // a point re-run starts clean (no stale breakdown.csv)
  fs::create_directories(pdir);
  const std::string log = pdir + "/console.log";
  const auto args = child_args(o, p, points, synthetic);
  const ChildOutcome c = run_child(exe, args, log, o.point_timeout);
  const auto [status, reason] = classify(c, tail_of(log, 16384), o.point_timeout);
  r.status = status;
  r.reason = reason;
  r.exit_code = c.exit_code;
  r.wall_s = c.wall_s;
  r.rss_mb = c.max_rss_mb;
  if (r.status == Status::ok) {
    try {
      read_point_measurements(pdir, r);
    } catch (const std::exception& e) {
      r.status = Status::error;
      r.reason = std::string("cannot read the child's breakdown.csv: ") + e.what();
    }
  }
  return r;
}

}  // namespace

SweepReport run_sweep(const SweepOptions& o) {
  SweepReport rep;
  // Catch a bad key or value here, once, not in every child (and before a directory is made).
  {
    std::vector<std::string> probe = o.passthrough;
    const Point p = expand_grid(o.grid).front();
    probe.insert(probe.end(), {fmt::format("batch={}", p.batch), fmt::format("workers={}", p.workers),
                               fmt::format("imgsz={}", p.imgsz)});
    (void)config::TrainConfig::load(o.cfg_file, probe);
  }
  // resume=true continues project/name, exist_ok=true re-runs into it; otherwise a taken name is incremented as
  // training runs are (sweep, sweep2, ...).
  rep.dir = o.resume || o.exist_ok ? (fs::path(o.project) / o.name).string()
                                   : io::make_run_dir(o.project, o.name, false, false);
  const std::string csv = rep.dir + "/sweep.csv";
  fs::create_directories(rep.dir + "/points");
  std::map<std::string, PointResult> previous;
  if (o.resume && fs::exists(csv))
    for (auto& r : read_sweep_csv(csv)) previous[row_id(r)] = r;
  const std::string exe = o.train_exe.empty() ? default_train_exe() : o.train_exe;
  const auto points = expand_grid(o.grid);
  spdlog::info("yolo11-sweep: {} points ({} batch × {} workers × {} imgsz{}{}), {} warm-up + {} measured steps each, "
               "children: {}, output: {}{}", points.size(), o.grid.batch.size(), o.grid.workers.size(),
               o.grid.imgsz.size(), o.grid.amp.empty() ? "" : fmt::format(" × {} amp", o.grid.amp.size()),
               o.grid.cache.empty() ? "" : fmt::format(" × {} cache", o.grid.cache.size()), o.warmup, o.steps, exe,
               rep.dir, previous.empty() ? "" : fmt::format(" (resuming: {} points on record)", previous.size()));

  auto& results = rep.results;
  std::map<std::string, int64_t> oom_batch;  // imgsz/amp/cache → smallest batch that ran out of memory
  auto oom_key = [](const Point& p) { return fmt::format("{}/{}/{}", p.imgsz, p.amp, p.cache); };
  double run_wall = 0;
  int64_t run_n = 0;
  for (size_t k = 0; k < points.size(); ++k) {
    const Point& p = points[k];
    PointResult r;
    std::string how;
    if (auto it = previous.find(p.id() + (o.synthetic ? "_synthetic" : "")); it != previous.end() &&
                                                                            it->second.status != Status::skipped) {
      r = it->second;
      how = "on record (resume)";
    } else if (auto ob = oom_batch.find(oom_key(p)); ob != oom_batch.end() && p.batch > ob->second) {
      r.point = p;
      r.status = Status::skipped;
      r.reason = fmt::format("batch={} ran out of memory at imgsz={}: larger batches skipped", ob->second, p.imgsz);
      how = "skipped";
    } else {
      r = run_point(o, p, rep.dir, exe, o.synthetic);
      run_wall += r.wall_s;
      ++run_n;
      how = fmt::format("in {}", duration(r.wall_s));
    }
    if (r.status == Status::oom) {
      auto& b = oom_batch.try_emplace(oom_key(p), p.batch).first->second;
      b = std::min(b, p.batch);
    }
    results.push_back(r);
    write_sweep_csv(csv, results);
    // progress: done/total, this point, ETA from the mean wall of the points run by this process, best so far
    size_t remaining = points.size() - k - 1;
    const double eta = run_n > 0 ? run_wall / static_cast<double>(run_n) * static_cast<double>(remaining) : 0;
    const Recommendation so_far = recommend(results);
    spdlog::info("[{}/{}] {}: {} {} | ETA {} | best so far: {}", k + 1, points.size(), p.id(),
                 r.status == Status::ok
                     ? fmt::format("{:.2f} img/s ({:.2f}–{:.2f}), data-wait {:.0f}%", r.img_s, r.img_s_lo, r.img_s_hi,
                                   100 * r.data_wait)
                     : fmt::format("{}: {}", to_string(r.status), r.reason),
                 how, remaining == 0 ? std::string("done") : duration(eta),
                 so_far.found ? fmt::format("{} {:.2f} img/s", results[so_far.best].point.id(),
                                            results[so_far.best].img_s)
                              : std::string("none yet"));
  }
  rep.rec = recommend(results);
  std::string extra;
  if (o.check_whatif && !o.synthetic && rep.rec.found) {
    // What-if check: the best point again with the loader removed (data=synthetic); its measured step against the
    // prediction "without dataloader" made from the real point.
    const PointResult best = results[rep.rec.best];  // a copy: results grows below
    PointResult s;
    if (auto it = previous.find(best.point.id() + "_synthetic"); it != previous.end() && it->second.status == Status::ok)
      s = it->second;
    else
      s = run_point(o, best.point, rep.dir, exe, true);
    results.push_back(s);
    write_sweep_csv(csv, results);
    if (s.status == Status::ok && best.whatif_no_data_ms > 0) {
      const double err = (best.whatif_no_data_ms - s.step_ms_mean) / s.step_ms_mean;
      extra = fmt::format("## What-if check\n\n{}: step {:.0f} ms with data wait {:.1f} %; predicted without the "
                          "loader wait: {:.0f} ms; measured with data=synthetic (one batch reused): {:.0f} ms "
                          "({:.1f} img/s); prediction error {:+.1f} %.",
                          best.point.label(), best.step_ms_mean, 100 * best.data_wait, best.whatif_no_data_ms,
                          s.step_ms_mean, s.img_s, 100 * err);
    } else {
      extra = fmt::format("## What-if check\n\nthe data=synthetic re-run of {} did not finish: {} {}",
                          best.point.label(), to_string(s.status), s.reason);
    }
  }
  std::vector<PointResult> grid_rows;
  for (const auto& r : results)
    if (!r.synthetic || o.synthetic) grid_rows.push_back(r);
  const Recommendation rec_rows = recommend(grid_rows);
  io::write_file_atomic(rep.dir + "/sweep.md", format_sweep_md(o, grid_rows, rec_rows, extra));
  plot_sweep(rep.dir + "/sweep.png", grid_rows);
  rep.summary = "recommendation: " + rec_rows.sentence;
  if (!extra.empty()) rep.summary += "\n" + extra.substr(extra.find("\n\n") + 2);
  spdlog::info("{}", rep.summary);
  spdlog::info("sweep.csv, sweep.md, sweep.png and points/ written to {}", rep.dir);
  return rep;
}

}  // namespace yolo11::bench
