#include "yolo11/plot/chart.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#include <stdexcept>

#include "yolo11/data/text.h"

namespace yolo11::plot {
namespace {

const cv::Scalar kBlack(0, 0, 0), kWhite(255, 255, 255), kGrid(225, 225, 225), kFrame(204, 204, 204);
constexpr int kPad = 10, kTickLen = 5;
constexpr int kShift = 3;  // fixed-point bits of the line coordinates (sub-pixel placement)

std::array<double, 2> checked_limits(const std::array<double, 2>& l, const char* axis) {
  if (!std::isfinite(l[0]) || !std::isfinite(l[1]) || l[0] >= l[1])
    throw std::invalid_argument(std::string("draw_chart: the ") + axis + " limits must be finite with lo < hi, got [" +
                                std::to_string(l[0]) + ", " + std::to_string(l[1]) + "]");
  return l;
}

/// Finite data range of x (or y) over all series, widened by 5 % a side (matplotlib's default margins).
std::array<double, 2> auto_limits(const std::vector<Series>& series, bool use_x) {
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (const auto& s : series)
    for (double v : use_x ? s.x : s.y)
      if (std::isfinite(v)) lo = std::min(lo, v), hi = std::max(hi, v);
  if (!std::isfinite(lo)) return {0.0, 1.0};
  if (lo == hi) {
    const double pad = lo == 0 ? 0.5 : std::abs(lo) * 0.1;
    return {lo - pad, hi + pad};
  }
  const double pad = (hi - lo) * 0.05;
  return {lo - pad, hi + pad};
}

int text_height(double fs) { return data::text_size("0", fs, 1).height; }

struct Mapper {
  cv::Rect area;
  double x0, x1, y0, y1;
  // Pixel coordinates inside `area` (fixed point with kShift bits), kept within a few areas' distance so that far
  // out-of-range values cannot overflow; OpenCV clips the lines to the picture.
  cv::Point fixed(double x, double y) const {
    const double px = (x - x0) / (x1 - x0) * (area.width - 1), py = (y1 - y) / (y1 - y0) * (area.height - 1);
    const double lim = 4.0 * std::max(area.width, area.height);
    return {static_cast<int>(std::lround(std::clamp(px, -lim, lim) * (1 << kShift))),
            static_cast<int>(std::lround(std::clamp(py, -lim, lim) * (1 << kShift)))};
  }
  int px(double x) const { return area.x + static_cast<int>(std::lround((x - x0) / (x1 - x0) * (area.width - 1))); }
  int py(double y) const { return area.y + static_cast<int>(std::lround((y1 - y) / (y1 - y0) * (area.height - 1))); }
};

constexpr int kSample = 28;  // legend line sample length

cv::Size legend_size(const std::vector<const Series*>& entries, double fs) {
  int tw = 0;
  for (const auto* s : entries) tw = std::max(tw, data::text_size(s->label, fs, 1).width);
  return {8 + kSample + 8 + tw + 8, 6 + static_cast<int>(entries.size()) * (text_height(fs) + 10) + 2};
}

void draw_legend(cv::Mat& c, const std::vector<const Series*>& entries, cv::Point tl, double fs) {
  const int th = text_height(fs), row = th + 10;
  const cv::Rect box(tl, legend_size(entries, fs));
  cv::rectangle(c, box, kWhite, cv::FILLED);
  cv::rectangle(c, box, kFrame, 1);
  int y = box.y + 6 + row / 2;
  for (const auto* s : entries) {
    cv::line(c, {box.x + 8, y}, {box.x + 8 + kSample, y}, s->color, s->thickness, cv::LINE_AA);
    data::put_text(c, s->label, {box.x + 8 + kSample + 8, y + th / 2}, fs, kBlack, 1);
    y += row;
  }
}

}  // namespace

std::vector<double> nice_ticks(double lo, double hi, int max_ticks) {
  if (!std::isfinite(lo) || !std::isfinite(hi) || hi < lo || max_ticks < 2)
    throw std::invalid_argument("nice_ticks: need finite lo <= hi and max_ticks >= 2, got [" + std::to_string(lo) +
                                ", " + std::to_string(hi) + "], " + std::to_string(max_ticks));
  if (hi == lo) return {lo};
  const int e0 = static_cast<int>(std::floor(std::log10((hi - lo) / max_ticks)));
  for (int e = e0;; ++e) {
    // 10^e as an exact integer power; for e < 0 divide by 10^-e so that 3·0.2 prints as 0.6, not 0.6000000000000001.
    const double p10 = std::pow(10.0, std::abs(e));
    for (double d : {1.0, 2.0, 5.0}) {
      const double step = e >= 0 ? d * p10 : d / p10;
      const auto k0 = static_cast<long long>(std::ceil(lo / step - 1e-6));
      const auto k1 = static_cast<long long>(std::floor(hi / step + 1e-6));
      if (k1 - k0 + 1 > max_ticks) continue;
      std::vector<double> out;
      for (long long k = k0; k <= k1; ++k) {
        const double v = e >= 0 ? static_cast<double>(k) * d * p10 : static_cast<double>(k) * d / p10;
        out.push_back(v == 0.0 ? 0.0 : v);  // no -0
      }
      return out;
    }
  }
}

std::string tick_label(double v, double step) {
  char buf[64];
  step = std::abs(step);
  if (!std::isfinite(step) || step == 0 || step >= 1e6 || step < 1e-4) {
    std::snprintf(buf, sizeof buf, "%g", v);
  } else {
    const int decimals = step >= 1 ? 0 : static_cast<int>(std::ceil(-std::log10(step) - 1e-9));
    std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  }
  std::string s = buf;
  if (s.size() > 1 && s[0] == '-' && s.find_first_not_of("0.", 1) == std::string::npos) s.erase(0, 1);  // "-0.0"
  return s;
}

cv::Scalar palette(size_t i) {
  static const cv::Scalar kTab10[] = {{180, 119, 31}, {14, 127, 255},  {44, 160, 44},   {40, 39, 214},  {189, 103, 148},
                                      {75, 86, 140},  {194, 119, 227}, {127, 127, 127}, {34, 189, 188}, {207, 190, 23}};
  return kTab10[i % 10];
}

cv::Scalar blues(double t) {
  // ColorBrewer "Blues" (9 classes, RGB), evenly spaced as matplotlib's colour map.
  static const double kRgb[9][3] = {{247, 251, 255}, {222, 235, 247}, {198, 219, 239}, {158, 202, 225}, {107, 174, 214},
                                    {66, 146, 198},  {33, 113, 181},  {8, 81, 156},    {8, 48, 107}};
  if (std::isnan(t)) return kWhite;
  const double u = std::clamp(t, 0.0, 1.0) * 8.0;
  const int i = std::min(7, static_cast<int>(u));
  const double f = u - i;
  auto mix = [&](int ch) { return kRgb[i][ch] + (kRgb[i + 1][ch] - kRgb[i][ch]) * f; };
  return {mix(2), mix(1), mix(0)};
}

cv::Size put_text_vertical(cv::Mat& img, const std::string& text, cv::Point tl, double fs, cv::Scalar color) {
  int base = 0;
  const auto sz = data::text_size(text, fs, 1, &base);
  cv::Mat txt(sz.height + base + 4, sz.width + 4, CV_8UC3, kWhite);
  data::put_text(txt, text, cv::Point(2, sz.height + 2), fs, color, 1);
  cv::Mat rot, mask;
  cv::rotate(txt, rot, cv::ROTATE_90_COUNTERCLOCKWISE);
  cv::inRange(rot, kWhite, kWhite, mask);
  cv::bitwise_not(mask, mask);
  const cv::Rect dst = cv::Rect(tl, rot.size()) & cv::Rect(0, 0, img.cols, img.rows);
  if (dst.empty()) return rot.size();
  const cv::Rect src(dst.tl() - tl, dst.size());
  rot(src).copyTo(img(dst), mask(src));
  return rot.size();
}

void draw_chart(cv::Mat& img, const cv::Rect& cell, const std::vector<Series>& series, const ChartOptions& opt) {
  if (img.type() != CV_8UC3) throw std::invalid_argument("draw_chart: the picture must be CV_8UC3");
  if ((cell & cv::Rect(0, 0, img.cols, img.rows)) != cell || cell.width < 160 || cell.height < 120)
    throw std::invalid_argument("draw_chart: the cell must lie inside the picture and be at least 160 x 120 px");
  for (const auto& s : series) {
    if (s.x.size() != s.y.size())
      throw std::invalid_argument("draw_chart: series '" + s.label + "' has " + std::to_string(s.x.size()) +
                                  " x values and " + std::to_string(s.y.size()) + " y values");
    if (s.thickness < 1) throw std::invalid_argument("draw_chart: series '" + s.label + "' has thickness < 1");
  }
  const auto xl = opt.xlim ? checked_limits(*opt.xlim, "x") : auto_limits(series, true);
  const auto yl = opt.ylim ? checked_limits(*opt.ylim, "y") : auto_limits(series, false);
  cv::Mat c = img(cell);
  c.setTo(kWhite);

  const double fs = opt.font_scale, fs_label = fs * 1.2, fs_title = fs * 1.4;
  const int th = text_height(fs), lh = text_height(fs_label), title_h = text_height(fs_title);
  const auto xt = nice_ticks(xl[0], xl[1], opt.max_ticks), yt = nice_ticks(yl[0], yl[1], opt.max_ticks);
  const double xstep = xt.size() > 1 ? xt[1] - xt[0] : 0, ystep = yt.size() > 1 ? yt[1] - yt[0] : 0;
  std::vector<std::string> xs, ys;
  int ytw = 0, last_xw = 0;
  for (double v : xt) xs.push_back(tick_label(v, xstep)), last_xw = data::text_size(xs.back(), fs, 1).width;
  for (double v : yt) ys.push_back(tick_label(v, ystep)), ytw = std::max(ytw, data::text_size(ys.back(), fs, 1).width);

  std::vector<const Series*> entries;
  for (const auto& s : series)
    if (!s.label.empty()) entries.push_back(&s);
  Legend where = opt.legend;
  if (entries.empty()) where = Legend::kNone;
  if (where == Legend::kAuto)
    where = static_cast<int>(entries.size()) <= kMaxInsideLegend ? Legend::kInsideTopRight : Legend::kOutsideRight;
  const cv::Size lsz = where == Legend::kNone ? cv::Size() : legend_size(entries, fs);

  const int top = opt.title.empty() ? kPad + th / 2 : kPad + title_h + 2 * kPad;
  const int left = kPad + (opt.ylabel.empty() ? 0 : lh + kPad) + ytw + 4 + kTickLen;
  const int bottom = kTickLen + 6 + th + kPad + (opt.xlabel.empty() ? 0 : lh + kPad);
  int right = std::max(kPad + 5, last_xw / 2 + 4);
  if (where == Legend::kOutsideRight) {
    right += kPad + lsz.width;
    if (c.cols - left - right < 80) where = Legend::kInsideTopRight, right = std::max(kPad + 5, last_xw / 2 + 4);
  }
  const Mapper m{cv::Rect(left, top, c.cols - left - right, c.rows - top - bottom), xl[0], xl[1], yl[0], yl[1]};
  if (m.area.width < 40 || m.area.height < 40)
    throw std::invalid_argument("draw_chart: the cell leaves no room for the plot area (labels too large?)");

  if (opt.grid) {
    for (double v : xt) cv::line(c, {m.px(v), m.area.y}, {m.px(v), m.area.br().y - 1}, kGrid, 1);
    for (double v : yt) cv::line(c, {m.area.x, m.py(v)}, {m.area.br().x - 1, m.py(v)}, kGrid, 1);
  }
  cv::Mat plot = c(m.area);  // lines are clipped to the axes, as matplotlib does
  for (const auto& s : series) {
    std::vector<std::vector<cv::Point>> runs(1);
    for (size_t i = 0; i < s.x.size(); ++i) {
      if (std::isfinite(s.x[i]) && std::isfinite(s.y[i]))
        runs.back().push_back(m.fixed(s.x[i], s.y[i]));
      else if (!runs.back().empty())
        runs.emplace_back();
    }
    for (const auto& run : runs) {
      if (run.size() == 1)  // a lone point: a dot as wide as the line
        cv::circle(plot, run[0], (s.thickness << kShift) / 2, s.color, cv::FILLED, cv::LINE_AA, kShift);
      else if (run.size() > 1)
        cv::polylines(plot, run, false, s.color, s.thickness, cv::LINE_AA, kShift);
    }
  }
  cv::rectangle(c, m.area, kBlack, 1);

  for (size_t i = 0; i < xt.size(); ++i) {
    const int x = m.px(xt[i]), y = m.area.br().y - 1;
    cv::line(c, {x, y}, {x, y + kTickLen}, kBlack, 1);
    const auto sz = data::text_size(xs[i], fs, 1);
    data::put_text(c, xs[i], {x - sz.width / 2, y + kTickLen + 6 + sz.height}, fs, kBlack, 1);
  }
  for (size_t i = 0; i < yt.size(); ++i) {
    const int y = m.py(yt[i]);
    cv::line(c, {m.area.x - kTickLen, y}, {m.area.x, y}, kBlack, 1);
    const auto sz = data::text_size(ys[i], fs, 1);
    data::put_text(c, ys[i], {m.area.x - kTickLen - 4 - sz.width, y + sz.height / 2}, fs, kBlack, 1);
  }
  if (!opt.xlabel.empty()) {
    const auto sz = data::text_size(opt.xlabel, fs_label, 1);
    data::put_text(c, opt.xlabel, {m.area.x + (m.area.width - sz.width) / 2, c.rows - kPad}, fs_label, kBlack, 1);
  }
  if (!opt.ylabel.empty()) {
    const auto sz = data::text_size(opt.ylabel, fs_label, 1);
    put_text_vertical(c, opt.ylabel, {kPad - 2, m.area.y + (m.area.height - sz.width) / 2}, fs_label, kBlack);
  }
  if (!opt.title.empty()) {
    const auto sz = data::text_size(opt.title, fs_title, 1);
    data::put_text(c, opt.title, {m.area.x + (m.area.width - sz.width) / 2, kPad + title_h}, fs_title, kBlack, 1);
  }
  if (where == Legend::kInsideTopRight)
    draw_legend(c, entries, {m.area.br().x - 8 - lsz.width, m.area.y + 8}, fs);
  else if (where == Legend::kOutsideRight)
    draw_legend(c, entries, {m.area.br().x + kPad, m.area.y}, fs);
}

cv::Mat render_chart(cv::Size size, const std::vector<Series>& series, const ChartOptions& opt) {
  if (size.width < 160 || size.height < 120)
    throw std::invalid_argument("render_chart: the picture must be at least 160 x 120 px");
  cv::Mat img(size, CV_8UC3, kWhite);
  draw_chart(img, cv::Rect(0, 0, size.width, size.height), series, opt);
  return img;
}

void save_image(const std::string& path, const cv::Mat& img) {
  bool ok = false;
  try {
    ok = cv::imwrite(path, img);
  } catch (const cv::Exception& e) {
    throw std::runtime_error("save_image: cannot write " + path + ": " + e.what());
  }
  if (!ok)
    throw std::runtime_error("save_image: cannot write " + path + " (does the directory exist and is it writable?)");
}

}  // namespace yolo11::plot
