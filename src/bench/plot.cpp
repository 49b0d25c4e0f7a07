// sweep.png (include/yolo11/bench/sweep.h): img/s against batch per imgsz (a line per workers value) and the stage
// shares of every finished point as stacked bars, drawn with the project's chart code (plot/chart.h): this file only
// lays the panels out and turns the sweep's results into series and stacks.
#include <spdlog/fmt/fmt.h>

#include <algorithm>
#include <cmath>
#include <opencv2/imgcodecs.hpp>
#include <set>
#include <stdexcept>

#include "yolo11/bench/sweep.h"
#include "yolo11/instrument/profiler.h"
#include "yolo11/io/file.h"
#include "yolo11/plot/chart.h"

namespace yolo11::bench {

namespace {

void draw_throughput_panel(cv::Mat& img, cv::Rect cell, int64_t imgsz, const std::vector<PointResult>& rows,
                           const std::vector<int64_t>& workers, double ymax) {
  const double nan = std::nan("");
  std::vector<plot::Series> series;
  struct Failed {
    double batch;
    std::string what;
    cv::Scalar color;
  };
  std::vector<Failed> failed;
  std::vector<double> all_batches;
  for (size_t wi = 0; wi < workers.size(); ++wi) {
    const cv::Scalar col = plot::palette(wi);
    plot::Series line{{}, {}, col, 2, fmt::format("workers {}", workers[wi]), 4};
    plot::Series ci{{}, {}, col, 1, ""};  // 95 % intervals: vertical segments separated by gaps
    std::vector<const PointResult*> pts;
    for (const auto& x : rows)
      if (x.point.imgsz == imgsz && x.point.workers == workers[wi] && !x.synthetic) pts.push_back(&x);
    std::sort(pts.begin(), pts.end(), [](auto* a, auto* b) { return a->point.batch < b->point.batch; });
    for (const auto* p : pts) {
      const auto b = static_cast<double>(p->point.batch);
      all_batches.push_back(b);
      if (p->status != Status::ok) {  // failed: a cross on the axis with its status, and a break in the line
        failed.push_back({b, to_string(p->status), col});
        line.x.push_back(nan), line.y.push_back(nan);
        continue;
      }
      line.x.push_back(b), line.y.push_back(p->img_s);
      if (p->img_s_hi > 0)
        ci.x.insert(ci.x.end(), {b, b, nan}), ci.y.insert(ci.y.end(), {p->img_s_lo, p->img_s_hi, nan});
    }
    series.push_back(std::move(ci));
    series.push_back(std::move(line));
  }
  plot::ChartOptions o;
  o.title = fmt::format("imgsz {}: throughput", imgsz);
  o.xlabel = "batch";
  o.ylabel = "img/s";
  o.integer_x = true;
  o.grid = true;
  o.font_scale = 0.4;
  o.ylim = std::array<double, 2>{0.0, ymax};
  if (!all_batches.empty()) {
    const double lo = *std::min_element(all_batches.begin(), all_batches.end());
    const double hi = *std::max_element(all_batches.begin(), all_batches.end());
    const double pad = lo == hi ? 1.0 : (hi - lo) * 0.08;
    o.xlim = std::array<double, 2>{std::max(0.0, lo - pad), hi + pad};
  }
  o.legend = plot::Legend::kInsideBest;
  const plot::Axes ax = plot::draw_chart(img, cell, series, o);
  for (const auto& f : failed) plot::draw_cross(img, ax.to_px(f.batch, 0) + cv::Point(0, -6), f.what, f.color);
}

}  // namespace

void plot_sweep(const std::string& path, const std::vector<PointResult>& rows) {
  std::set<int64_t> sz, ws;
  double ymax = 0;
  std::vector<const PointResult*> ok;
  for (const auto& r : rows) {
    if (r.synthetic) continue;
    sz.insert(r.point.imgsz), ws.insert(r.point.workers);
    if (r.status == Status::ok) ymax = std::max(ymax, r.img_s_hi > 0 ? std::min(r.img_s_hi, 2 * r.img_s) : r.img_s), ok.push_back(&r);
  }
  if (ymax <= 0) ymax = 1;
  ymax *= 1.1;
  const std::vector<int64_t> workers(ws.begin(), ws.end());
  const int pw = 460, ph = 340;
  const int n_panels = std::max<int>(1, static_cast<int>(sz.size()));
  const int bars_w = 260 + 28 * static_cast<int>(ok.size()) + 160;
  const int W = std::max(pw * n_panels, bars_w), H = ph + 420;
  cv::Mat img(H, W, CV_8UC3, cv::Scalar(255, 255, 255));
  int i = 0;
  for (int64_t s : sz) draw_throughput_panel(img, {i++ * pw, 0, pw, ph}, s, rows, workers, ymax);
  // Stacked stage shares (percent of the step), one bar per ok point, named by its id under it.
  plot::ChartOptions o;
  o.title = "share of the step per stage (finished points)";
  o.ylabel = "% of step time";
  o.font_scale = 0.4;
  o.grid = true;
  o.ylim = std::array<double, 2>{0.0, 100.0};
  o.legend = plot::Legend::kOutsideRight;
  for (const auto* p : ok) o.xcategories.push_back(p->point.id());
  if (o.xcategories.empty()) o.xcategories.push_back("(none finished)");
  std::vector<plot::Series> legend;  // legend entries only: a thick sample of each stage's colour
  for (size_t si = 0; si < instrument::kStepStages.size(); ++si)
    legend.push_back({{}, {}, plot::palette(si), 8, instrument::kStepStages[si]});
  const plot::Axes ax = plot::draw_chart(img, {0, ph, std::min(W, bars_w), H - ph}, legend, o);
  std::vector<std::vector<double>> stacks;  // percent of the step per stage, kStepStages order
  for (const auto* p : ok) {
    auto& st = stacks.emplace_back();
    for (const char* name : instrument::kStepStages) {
      const auto it = p->shares.find(name);
      st.push_back(it == p->shares.end() ? 0.0 : 100 * it->second);
    }
  }
  plot::draw_stacked_bars(img, ax, stacks);
  std::vector<uchar> buf;  // written atomically: a sweep still running rewrites it after each point
  if (!cv::imencode(".png", img, buf)) throw std::runtime_error("cannot encode " + path + " as PNG");
  io::write_file_atomic(path, std::string_view(reinterpret_cast<const char*>(buf.data()), buf.size()));
}

}  // namespace yolo11::bench
