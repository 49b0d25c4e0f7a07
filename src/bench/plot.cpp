// sweep.png (include/yolo11/bench/sweep.h): img/s against batch per imgsz (a line per workers value) and the stage
// shares of every finished point as stacked bars. Plain OpenCV drawing, as the project's other plots.
#include <spdlog/fmt/fmt.h>

#include <algorithm>
#include <map>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#include <set>
#include <stdexcept>

#include "yolo11/bench/sweep.h"
#include "yolo11/instrument/profiler.h"
#include "yolo11/io/file.h"

namespace yolo11::bench {

namespace {

cv::Scalar palette(size_t i) {  // BGR, Ultralytics-like
  static const cv::Scalar c[] = {{56, 56, 255},  {31, 112, 255}, {29, 178, 255}, {49, 210, 207}, {10, 249, 72},
                                 {23, 204, 146}, {134, 219, 61}, {187, 212, 0},  {168, 153, 44}, {255, 194, 0},
                                 {147, 69, 52},  {255, 115, 100}};
  return c[i % (sizeof c / sizeof c[0])];
}

void text(cv::Mat& img, const std::string& s, int x, int y, double scale = 0.4, cv::Scalar col = {30, 30, 30}) {
  cv::putText(img, s, {x, y}, cv::FONT_HERSHEY_SIMPLEX, scale, col, 1, cv::LINE_AA);
}

void draw_throughput_panel(cv::Mat& img, cv::Rect area, int64_t imgsz, const std::vector<PointResult>& rows,
                           const std::vector<int64_t>& batches, const std::vector<int64_t>& workers, double ymax) {
  cv::rectangle(img, area, {200, 200, 200});
  const int l = area.x + 50, r = area.x + area.width - 15, t = area.y + 25, b = area.y + area.height - 35;
  text(img, fmt::format("imgsz {}: img/s vs batch", imgsz), area.x + 10, area.y + 16, 0.45);
  cv::line(img, {l, b}, {r, b}, {0, 0, 0});
  cv::line(img, {l, b}, {l, t}, {0, 0, 0});
  auto xpos = [&](int64_t batch) {
    const auto it = std::find(batches.begin(), batches.end(), batch);
    const double i = static_cast<double>(it - batches.begin());
    return batches.size() < 2 ? (l + r) / 2 : static_cast<int>(l + 20 + i * (r - l - 40) / static_cast<double>(batches.size() - 1));
  };
  auto ypos = [&](double v) { return static_cast<int>(b - (b - t) * std::clamp(v / ymax, 0.0, 1.0)); };
  for (int k = 0; k <= 4; ++k) {
    const double v = ymax * k / 4.0;
    cv::line(img, {l - 3, ypos(v)}, {r, ypos(v)}, {230, 230, 230});
    text(img, fmt::format("{:.1f}", v), area.x + 5, ypos(v) + 4, 0.35);
  }
  for (int64_t bt : batches) text(img, std::to_string(bt), xpos(bt) - 8, b + 15, 0.38);
  text(img, "batch", (l + r) / 2 - 15, b + 30, 0.38);
  for (size_t wi = 0; wi < workers.size(); ++wi) {
    const cv::Scalar col = palette(wi);
    cv::Point prev(-1, -1);
    for (int64_t bt : batches) {
      const PointResult* p = nullptr;
      for (const auto& x : rows)
        if (x.point.imgsz == imgsz && x.point.workers == workers[wi] && x.point.batch == bt && !x.synthetic) p = &x;
      if (p == nullptr) continue;
      if (p->status != Status::ok) {  // failed: a cross on the axis with its status
        const cv::Point c(xpos(bt), b - 4);
        cv::line(img, c + cv::Point(-5, -5), c + cv::Point(5, 5), col, 2);
        cv::line(img, c + cv::Point(-5, 5), c + cv::Point(5, -5), col, 2);
        text(img, to_string(p->status), c.x - 12, c.y - 10, 0.33, col);
        prev = {-1, -1};
        continue;
      }
      const cv::Point c(xpos(bt), ypos(p->img_s));
      cv::line(img, {c.x, ypos(p->img_s_lo)}, {c.x, ypos(p->img_s_hi)}, col, 1);  // 95 % interval
      if (prev.x >= 0) cv::line(img, prev, c, col, 2, cv::LINE_AA);
      cv::circle(img, c, 4, col, cv::FILLED, cv::LINE_AA);
      prev = c;
    }
    const int ly = t + 5 + 14 * static_cast<int>(wi);
    cv::line(img, {r - 80, ly - 4}, {r - 62, ly - 4}, col, 2);
    text(img, fmt::format("workers {}", workers[wi]), r - 58, ly, 0.35);
  }
}

}  // namespace

void plot_sweep(const std::string& path, const std::vector<PointResult>& rows) {
  std::set<int64_t> sz, bs, ws;
  double ymax = 0;
  std::vector<const PointResult*> ok;
  for (const auto& r : rows) {
    if (r.synthetic) continue;
    sz.insert(r.point.imgsz), bs.insert(r.point.batch), ws.insert(r.point.workers);
    if (r.status == Status::ok) ymax = std::max(ymax, r.img_s_hi > 0 ? std::min(r.img_s_hi, 2 * r.img_s) : r.img_s), ok.push_back(&r);
  }
  if (ymax <= 0) ymax = 1;
  ymax *= 1.1;
  const std::vector<int64_t> batches(bs.begin(), bs.end()), workers(ws.begin(), ws.end());
  const int pw = 420, ph = 300, bar_w = 26;
  const int n_panels = std::max<int>(1, static_cast<int>(sz.size()));
  const int bars_w = 80 + bar_w * static_cast<int>(ok.size()) + 120;
  const int W = std::max(pw * n_panels, bars_w), H = ph + 330;
  cv::Mat img(H, W, CV_8UC3, cv::Scalar(255, 255, 255));
  int i = 0;
  for (int64_t s : sz) draw_throughput_panel(img, {i++ * pw, 0, pw - 5, ph - 5}, s, rows, batches, workers, ymax);
  // stacked stage shares, one bar per ok point
  const int top = ph + 25, bottom = H - 95, left = 50;
  text(img, "share of the step per stage (finished points)", left, top - 8, 0.45);
  cv::line(img, {left, bottom}, {left + bar_w * static_cast<int>(ok.size()) + 10, bottom}, {0, 0, 0});
  for (int k = 0; k <= 4; ++k) {
    const int y = bottom - (bottom - top) * k / 4;
    text(img, fmt::format("{}%", 25 * k), 8, y + 4, 0.35);
  }
  for (size_t p = 0; p < ok.size(); ++p) {
    const int x = left + 5 + bar_w * static_cast<int>(p);
    double acc = 0;
    size_t si = 0;
    for (const char* st : instrument::kStepStages) {
      const auto it = ok[p]->shares.find(st);
      const double v = it == ok[p]->shares.end() ? 0.0 : std::max(0.0, it->second);
      const int y0 = bottom - static_cast<int>((bottom - top) * std::min(1.0, acc));
      const int y1 = bottom - static_cast<int>((bottom - top) * std::min(1.0, acc + v));
      if (y1 < y0) cv::rectangle(img, {x, y1}, {x + bar_w - 6, y0}, palette(si), cv::FILLED);
      acc += v;
      ++si;
    }
    // vertical label: the point id
    cv::Mat lab(14, 90, CV_8UC3, cv::Scalar(255, 255, 255));
    cv::putText(lab, ok[p]->point.id(), {0, 10}, cv::FONT_HERSHEY_SIMPLEX, 0.3, {30, 30, 30}, 1, cv::LINE_AA);
    cv::Mat rot;
    cv::rotate(lab, rot, cv::ROTATE_90_COUNTERCLOCKWISE);
    const cv::Rect dst(x + 2, bottom + 3, rot.cols, std::min(rot.rows, H - bottom - 3));
    rot(cv::Rect(0, 0, dst.width, dst.height)).copyTo(img(dst));
  }
  size_t si = 0;
  for (const char* st : instrument::kStepStages) {
    const int lx = left + bar_w * static_cast<int>(ok.size()) + 20, ly = top + 10 + 16 * static_cast<int>(si);
    if (lx + 100 < W) {
      cv::rectangle(img, {lx, ly - 9}, {lx + 10, ly + 1}, palette(si), cv::FILLED);
      text(img, st, lx + 14, ly, 0.38);
    }
    ++si;
  }
  std::vector<uchar> buf;
  if (!cv::imencode(".png", img, buf)) throw std::runtime_error("cannot encode " + path + " as PNG");
  io::write_file_atomic(path, std::string_view(reinterpret_cast<const char*>(buf.data()), buf.size()));
}

}  // namespace yolo11::bench
