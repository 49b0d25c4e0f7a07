// yolo11-sweep's outputs: sweep.csv (write and read back), the recommendation rule, sweep.md
// (include/yolo11/bench/sweep.h).
#include <spdlog/fmt/fmt.h>

#include <algorithm>
#include <initializer_list>
#include <tuple>
#include <cmath>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "yolo11/bench/sweep.h"
#include "yolo11/instrument/profiler.h"
#include "yolo11/io/file.h"

namespace yolo11::bench {

namespace {

std::string num(double v, int prec = 4) {
  if (v < 0 && v > -1.5 && v < -0.5) return "-1";  // n/a
  return fmt::format("{:.{}f}", v, prec);
}

std::string quote(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) {
    if (c == '"') q += '"';
    q += c == '\n' ? ' ' : c;
  }
  return q + "\"";
}


double fnum(const std::string& s, const std::string& where) {
  try {
    size_t pos = 0;
    const double v = std::stod(s, &pos);
    if (pos == s.size()) return v;
  } catch (...) {
  }
  throw std::runtime_error(where + ": '" + s + "' is not a number");
}

std::string na(double v, const std::string& fmt_spec_unit) {
  return v < 0 ? std::string("n/a") : fmt::format(fmt::runtime(fmt_spec_unit), v);
}

double compute_share(const PointResult& r) {
  double c = 0;
  for (instrument::StepStage s : instrument::kComputeStages)
    if (auto it = r.shares.find(instrument::stage_name(s)); it != r.shares.end()) c += it->second;
  return c;
}

std::string bottleneck_phrase(const PointResult& r) {
  const double c = compute_share(r);
  if (r.data_wait >= 0.25) return fmt::format("data-bound at {:.0f} % data wait", 100 * r.data_wait);
  if (c >= 0.70) return fmt::format("compute-bound at {:.0f} %", 100 * c);
  return fmt::format("balanced (compute {:.0f} %, data wait {:.0f} %)", 100 * c, 100 * std::max(0.0, r.data_wait));
}

}  // namespace

const std::vector<std::string>& sweep_columns() {
  static const std::vector<std::string> cols = {
      "id", "status", "reason", "exit_code", "batch", "workers", "imgsz", "amp", "cache", "synthetic", "steps",
      "images", "img_s", "img_s_lo95", "img_s_hi95", "step_ms_mean", "step_ms_p50", "step_ms_p95",
      "share_dataloader", "share_h2d", "share_forward", "share_loss", "share_backward", "share_optimizer",
      "share_ema", "data_wait", "cpu_percent", "rss_mb", "gpu_mem_mb", "peak_alloc_mb", "gpu_util", "sm_activity",
      "mfu", "whatif_no_data_ms", "wall_s"};
  return cols;
}

std::string to_csv_row(const PointResult& r) {
  std::vector<std::string> f = {r.point.id() + (r.synthetic ? "_synthetic" : ""), to_string(r.status), quote(r.reason), std::to_string(r.exit_code),
                                std::to_string(r.point.batch), std::to_string(r.point.workers),
                                std::to_string(r.point.imgsz), r.point.amp, r.point.cache, r.synthetic ? "true" : "false",
                                std::to_string(r.steps), std::to_string(r.images), num(r.img_s, 3), num(r.img_s_lo, 3),
                                num(r.img_s_hi, 3), num(r.step_ms_mean, 2), num(r.step_ms_p50, 2), num(r.step_ms_p95, 2)};
  for (const char* s : instrument::kStepStages) {
    auto it = r.shares.find(s);
    f.push_back(it == r.shares.end() ? std::string("-1") : num(it->second, 4));
  }
  for (double v : {r.data_wait, r.cpu_percent, r.rss_mb, r.gpu_mem_mb, r.peak_alloc_mb, r.gpu_util, r.sm_activity, r.mfu,
                   r.whatif_no_data_ms, r.wall_s})
    f.push_back(num(v, 4));
  std::string line;
  for (size_t i = 0; i < f.size(); ++i) line += (i ? "," : "") + f[i];
  return line;
}

void write_sweep_csv(const std::string& path, const std::vector<PointResult>& rows) {
  std::string s;
  const auto& cols = sweep_columns();
  for (size_t i = 0; i < cols.size(); ++i) s += (i ? "," : "") + cols[i];
  s += "\n";
  for (const auto& r : rows) s += to_csv_row(r) + "\n";
  io::write_file_atomic(path, s);
}

std::vector<PointResult> read_sweep_csv(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::string line;
  const auto& cols = sweep_columns();
  if (!std::getline(in, line) || io::split_csv_line(line) != cols)
    throw std::runtime_error(path + ":1: header is not the sweep.csv header (" + cols.front() + "," + cols[1] +
                             ",...); was it written by another version?");
  std::vector<PointResult> rows;
  int ln = 1;
  while (std::getline(in, line)) {
    ++ln;
    if (line.empty()) continue;
    const auto f = io::split_csv_line(line);
    const std::string where = fmt::format("{}:{}", path, ln);
    if (f.size() != cols.size())
      throw std::runtime_error(fmt::format("{}: {} fields, expected {}", where, f.size(), cols.size()));
    PointResult r;
    size_t i = 0;
    ++i;  // id: derived from the point
    r.status = parse_status(f[i++]);
    r.reason = f[i++];
    r.exit_code = static_cast<int>(fnum(f[i++], where));
    r.point.batch = static_cast<int64_t>(fnum(f[i++], where));
    r.point.workers = static_cast<int64_t>(fnum(f[i++], where));
    r.point.imgsz = static_cast<int64_t>(fnum(f[i++], where));
    r.point.amp = f[i++];
    r.point.cache = f[i++];
    r.synthetic = f[i++] == "true";
    r.steps = static_cast<int64_t>(fnum(f[i++], where));
    r.images = static_cast<int64_t>(fnum(f[i++], where));
    for (double* d : {&r.img_s, &r.img_s_lo, &r.img_s_hi, &r.step_ms_mean, &r.step_ms_p50, &r.step_ms_p95})
      *d = fnum(f[i++], where);
    for (const char* s : instrument::kStepStages) {
      const double v = fnum(f[i++], where);
      if (v >= 0) r.shares[s] = v;
    }
    for (double* d : {&r.data_wait, &r.cpu_percent, &r.rss_mb, &r.gpu_mem_mb, &r.peak_alloc_mb, &r.gpu_util,
                      &r.sm_activity, &r.mfu, &r.whatif_no_data_ms, &r.wall_s})
      *d = fnum(f[i++], where);
    if (r.point.id() + (r.synthetic ? "_synthetic" : "") != f[0])
      throw std::runtime_error(fmt::format("{}: id '{}' does not match its columns ({})", where, f[0], r.point.id()));
    rows.push_back(std::move(r));
  }
  return rows;
}

Recommendation recommend(const std::vector<PointResult>& rs, double tolerance) {
  Recommendation rec;
  for (size_t i = 0; i < rs.size(); ++i) {
    if (rs[i].status != Status::ok || rs[i].img_s <= 0) continue;
    if (!rec.found || rs[i].img_s > rs[rec.best].img_s) rec.best = i;
    rec.found = true;
  }
  if (!rec.found) {
    rec.sentence = "no point finished: nothing to recommend (see the reasons in the table)";
    return rec;
  }
  const PointResult& best = rs[rec.best];
  const double floor = (1.0 - tolerance) * best.img_s;
  rec.cheapest = rec.best;
  auto key = [&](const PointResult& r) {
    return std::make_tuple(r.point.workers, r.point.batch, r.point.imgsz, -r.img_s);
  };
  for (size_t i = 0; i < rs.size(); ++i)
    if (rs[i].status == Status::ok && rs[i].img_s >= floor && key(rs[i]) < key(rs[rec.cheapest])) rec.cheapest = i;
  const PointResult& ch = rs[rec.cheapest];
  if (rec.cheapest == rec.best) {
    rec.sentence = fmt::format("{} is the fastest ({:.1f} img/s) and no point with fewer workers or a smaller batch "
                               "comes within {:.0f} % of it: {}",
                               best.point.label(), best.img_s, 100 * tolerance, bottleneck_phrase(best));
    if (best.data_wait >= 0.25) rec.sentence += "; more workers or cache=ram may still help";
    return rec;
  }
  std::vector<std::string> parts;
  if (ch.point.workers < best.point.workers) parts.push_back(fmt::format("workers beyond {} add nothing", ch.point.workers));
  if (ch.point.batch < best.point.batch) parts.push_back(fmt::format("batch beyond {} adds nothing", ch.point.batch));
  if (ch.point.imgsz != best.point.imgsz) parts.push_back(fmt::format("imgsz {} instead of {}", ch.point.imgsz, best.point.imgsz));
  std::string why;
  for (size_t i = 0; i < parts.size(); ++i) why += (i ? ", " : "") + parts[i];
  rec.sentence = fmt::format("{} reaches {:.1f} img/s, within {:.1f} % of the fastest ({}, {:.1f} img/s): {}: {}",
                             ch.point.label(), ch.img_s, 100.0 * (1.0 - ch.img_s / best.img_s), best.point.label(),
                             best.img_s, why.empty() ? std::string("cheaper settings") : why, bottleneck_phrase(ch));
  return rec;
}

std::string format_sweep_md(const SweepOptions& o, const std::vector<PointResult>& rows, const Recommendation& rec,
                            const std::string& extra) {
  std::ostringstream s;
  s << "# Sweep " << o.name << "\n\n";
  s << "Each point: a child `yolo11-train` process, " << o.warmup << " warm-up steps (unmeasured), then " << o.steps
    << " measured steps; no validation, no checkpoint" << (o.synthetic ? "; data=synthetic (one batch reused)" : "")
    << (o.point_timeout > 0 ? fmt::format("; point_timeout={} s", o.point_timeout) : std::string()) << ".\n";
  s << "Config: `" << (o.cfg_file.empty() ? std::string("configs/default.yaml") : o.cfg_file) << "`";
  for (const auto& p : o.passthrough) s << " `" << p << "`";
  s << "\n\n";
  s << "| point | status | img/s (95 % interval) | step ms p50 / p95 | data-wait | forward+loss+backward | optimizer+ema | "
       "CPU % | peak RSS MiB | GPU util | GPU mem MiB | MFU | step ms without loader wait (what-if) |\n";
  s << "|---|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  for (const auto& r : rows) {
    s << "| " << r.point.label() << " | " << to_string(r.status);
    if (r.status != Status::ok) {
      s << ": " << r.reason << " |  |  |  |  |  |  | " << na(r.rss_mb, "{:.0f}") << " |  |  |  |  |\n";
      continue;
    }
    using St = instrument::StepStage;
    auto sh = [&](std::initializer_list<St> stages) {
      double v = 0;
      for (auto n : stages)
        if (auto it = r.shares.find(instrument::stage_name(n)); it != r.shares.end()) v += it->second;
      return fmt::format("{:.0f} %", 100 * v);
    };
    s << fmt::format(
        " | {:.2f} ({:.2f}–{:.2f}) | {:.0f} / {:.0f} | {:.1f} % | {} | {} | {} | {} | {} | {} | {} | {} |\n", r.img_s,
        r.img_s_lo, r.img_s_hi, r.step_ms_p50, r.step_ms_p95, 100 * r.data_wait,
        sh({St::forward, St::loss, St::backward}), sh({St::optimizer, St::ema}), na(r.cpu_percent, "{:.0f}"),
        na(r.rss_mb, "{:.0f}"), na(r.gpu_util, "{:.0f} %"), na(r.gpu_mem_mb, "{:.0f}"),
        na(r.mfu < 0 ? -1.0 : 100 * r.mfu, "{:.1f} %"), na(r.whatif_no_data_ms, "{:.0f}"));  // MFU in %
  }
  s << "\n## Recommendation\n\n";
  if (rec.found) {
    s << "- fastest: **" << rows[rec.best].point.label() << "** " << fmt::format("{:.2f} img/s", rows[rec.best].img_s)
      << "\n- cheapest within 5 %: **" << rows[rec.cheapest].point.label() << "** "
      << fmt::format("{:.2f} img/s", rows[rec.cheapest].img_s) << "\n";
  }
  s << "- " << rec.sentence << "\n";
  if (!extra.empty()) s << "\n" << extra << "\n";
  return s.str();
}

}  // namespace yolo11::bench
