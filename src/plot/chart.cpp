#include "yolo11/plot/chart.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#include <stdexcept>

#include "yolo11/plot/text.h"

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

/// Finite data range of x (or y) over all series, widened by 5 % a side (matplotlib's default margins); the margin
/// never takes the lower limit below 0 when all data are >= 0.
std::array<double, 2> auto_limits(const std::vector<Series>& series, bool use_x) {
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (const auto& s : series)
    for (double v : use_x ? s.x : s.y)
      if (std::isfinite(v)) lo = std::min(lo, v), hi = std::max(hi, v);
  if (!std::isfinite(lo)) return {0.0, 1.0};
  if (lo == 0 && hi == 0) return {0.0, 1.0};
  const double pad = lo == hi ? std::abs(lo) * 0.1 : (hi - lo) * 0.05;
  return {lo >= 0 ? std::max(0.0, lo - pad) : lo - pad, hi + pad};
}

int text_height(double fs) { return plot::text_size("0", fs, 1).height; }

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
  for (const auto* s : entries) tw = std::max(tw, plot::text_size(s->label, fs, 1).width);
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
    plot::put_text(c, s->label, {box.x + 8 + kSample + 8, y + th / 2}, fs, kBlack, 1);
    y += row;
  }
}

}  // namespace

std::vector<double> nice_ticks(double lo, double hi, int max_ticks, double min_step) {
  if (!std::isfinite(lo) || !std::isfinite(hi) || hi < lo || max_ticks < 2 || !std::isfinite(min_step) ||
      min_step < 0)
    throw std::invalid_argument("nice_ticks: need finite lo <= hi, max_ticks >= 2 and min_step >= 0, got [" +
                                std::to_string(lo) + ", " + std::to_string(hi) + "], " + std::to_string(max_ticks) +
                                ", " + std::to_string(min_step));
  if (hi == lo) return {lo};
  const int e0 = static_cast<int>(std::floor(std::log10(std::max((hi - lo) / max_ticks, min_step * 0.999))));
  for (int e = e0;; ++e) {
    // 10^e as an exact integer power; for e < 0 divide by 10^-e so that 3·0.2 prints as 0.6, not 0.6000000000000001.
    const double p10 = std::pow(10.0, std::abs(e));
    for (double d : {1.0, 2.0, 5.0}) {
      const double step = e >= 0 ? d * p10 : d / p10;
      if (step < min_step * (1 - 1e-9)) continue;
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
    // as many significant digits as tell v from its neighbours k·step (4.158892, not 4.15889 six times)
    const int digits = v == 0 || !std::isfinite(step) || step == 0
                           ? 6
                           : std::clamp(static_cast<int>(std::floor(std::log10(std::abs(v))) -
                                                         std::floor(std::log10(step) + 1e-9)) + 1,
                                        1, 15);
    std::snprintf(buf, sizeof buf, "%.*g", digits, v);
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
  const auto sz = plot::text_size(text, fs, 1, &base);
  cv::Mat txt(sz.height + base + 4, sz.width + 4, CV_8UC3, kWhite);
  plot::put_text(txt, text, cv::Point(2, sz.height + 2), fs, color, 1);
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

cv::Point Axes::to_px(double x, double y) const {
  return {area.x + static_cast<int>(std::lround((x - x0) / (x1 - x0) * (area.width - 1))),
          area.y + static_cast<int>(std::lround((y1 - y) / (y1 - y0) * (area.height - 1)))};
}

std::string abbreviate(const std::string& name, size_t max_chars) {
  size_t n = 0, i = 0, cut = 0;  // count UTF-8 code points (bytes that are not continuation bytes)
  for (; i < name.size(); ++i)
    if ((static_cast<unsigned char>(name[i]) & 0xC0) != 0x80) {
      if (n == max_chars) return max_chars == 0 ? std::string() : name.substr(0, cut) + ".";
      if (n + 1 == max_chars) cut = i;
      ++n;
    }
  return name;
}

namespace {

/// Category tick labels: abbreviated names, whether they are drawn rotated, every `stride`-th one.
struct CategoryTicks {
  std::vector<std::string> labels;
  bool vertical = false;
  int stride = 1;
  int height = 0;  // pixels below the tick marks
  double fs = 0.5;
};

CategoryTicks category_ticks(const std::vector<std::string>& names, double fs, double spacing) {
  CategoryTicks t;
  for (const auto& n : names) t.labels.push_back(abbreviate(n, kMaxCategoryChars));
  auto widest = [&](double f) {
    int w = 0;
    for (const auto& l : t.labels) w = std::max(w, plot::text_size(l, f, 1).width);
    return w;
  };
  t.fs = fs;
  if (widest(fs) + 6 <= spacing) {
    t.height = text_height(fs);
    return t;
  }
  // Rotated; a smaller font (down to 0.3) before labelling only every k-th category.
  t.vertical = true;
  int across = 0;
  for (; t.fs > 0.3; t.fs -= 0.05) {
    int base = 0;
    across = plot::text_size("Ag", t.fs, 1, &base).height + base + 4;  // a rotated label's width
    if (across <= spacing) break;
  }
  t.fs = std::max(t.fs, 0.3);
  int base = 0;
  across = plot::text_size("Ag", t.fs, 1, &base).height + base + 4;
  t.height = widest(t.fs) + 4;
  t.stride = std::max(1, static_cast<int>(std::ceil(across / std::max(1.0, spacing))));
  return t;
}

}  // namespace

Axes draw_chart(cv::Mat& img, const cv::Rect& cell, const std::vector<Series>& series, const ChartOptions& opt) {
  if (img.type() != CV_8UC3) throw std::invalid_argument("draw_chart: the picture must be CV_8UC3");
  if ((cell & cv::Rect(0, 0, img.cols, img.rows)) != cell || cell.width < 160 || cell.height < 120)
    throw std::invalid_argument("draw_chart: the cell must lie inside the picture and be at least 160 x 120 px");
  for (const auto& s : series) {
    if (s.x.size() != s.y.size())
      throw std::invalid_argument("draw_chart: series '" + s.label + "' has " + std::to_string(s.x.size()) +
                                  " x values and " + std::to_string(s.y.size()) + " y values");
    if (s.thickness < 1) throw std::invalid_argument("draw_chart: series '" + s.label + "' has thickness < 1");
    if (s.marker < 0) throw std::invalid_argument("draw_chart: series '" + s.label + "' has marker < 0");
  }
  const bool cats = !opt.xcategories.empty();
  const double ncat = static_cast<double>(opt.xcategories.size());
  const auto xl = opt.xlim   ? checked_limits(*opt.xlim, "x")
                  : cats     ? std::array<double, 2>{-0.5, ncat - 0.5}
                             : auto_limits(series, true);
  const auto yl = opt.ylim ? checked_limits(*opt.ylim, "y") : auto_limits(series, false);
  cv::Mat c = img(cell);
  c.setTo(kWhite);

  const double fs = opt.font_scale, fs_label = fs * 1.2, fs_title = fs * 1.4;
  const int th = text_height(fs), lh = text_height(fs_label), title_h = text_height(fs_title);
  std::vector<double> xt;
  const auto yt = nice_ticks(yl[0], yl[1], opt.max_ticks);
  if (!cats) xt = nice_ticks(xl[0], xl[1], opt.max_ticks, opt.integer_x ? 1.0 : 0.0);
  const double xstep = xt.size() > 1 ? xt[1] - xt[0] : 0, ystep = yt.size() > 1 ? yt[1] - yt[0] : 0;
  std::vector<std::string> xs, ys;
  int ytw = 0, last_xw = 0;
  for (double v : xt) xs.push_back(tick_label(v, xstep)), last_xw = plot::text_size(xs.back(), fs, 1).width;
  for (double v : yt) ys.push_back(tick_label(v, ystep)), ytw = std::max(ytw, plot::text_size(ys.back(), fs, 1).width);

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
  int right = std::max(kPad + 5, last_xw / 2 + 4);
  if (where == Legend::kOutsideRight) {
    right += kPad + lsz.width;
    if (c.cols - left - right < 80) where = Legend::kInsideTopRight, right = std::max(kPad + 5, last_xw / 2 + 4);
  }
  CategoryTicks ct;
  if (cats) {
    const double width = c.cols - left - right;
    ct = category_ticks(opt.xcategories, fs, width / (xl[1] - xl[0]));
    ct.height = std::min(ct.height, c.rows / 3);  // very long names: clipped rather than squeezing the plot away
  }
  const int xtick_h = cats ? ct.height : th;
  const int bottom = kTickLen + 6 + xtick_h + kPad + (opt.xlabel.empty() ? 0 : lh + kPad);
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
      if (run.size() == 1 && s.marker == 0)  // a lone point: a dot as wide as the line
        cv::circle(plot, run[0], (s.thickness << kShift) / 2, s.color, cv::FILLED, cv::LINE_AA, kShift);
      else if (run.size() > 1)
        cv::polylines(plot, run, false, s.color, s.thickness, cv::LINE_AA, kShift);
      if (s.marker > 0)
        for (const auto& p : run) cv::circle(plot, p, s.marker << kShift, s.color, cv::FILLED, cv::LINE_AA, kShift);
    }
  }
  cv::rectangle(c, m.area, kBlack, 1);

  for (size_t i = 0; i < xt.size(); ++i) {
    const int x = m.px(xt[i]), y = m.area.br().y - 1;
    cv::line(c, {x, y}, {x, y + kTickLen}, kBlack, 1);
    const auto sz = plot::text_size(xs[i], fs, 1);
    plot::put_text(c, xs[i], {x - sz.width / 2, y + kTickLen + 6 + sz.height}, fs, kBlack, 1);
  }
  for (size_t i = 0; cats && i < ct.labels.size(); i += static_cast<size_t>(ct.stride)) {
    const int x = m.px(static_cast<double>(i)), y = m.area.br().y - 1;
    cv::line(c, {x, y}, {x, y + kTickLen}, kBlack, 1);
    int base = 0;
    const auto sz = plot::text_size(ct.labels[i], ct.fs, 1, &base);
    if (!ct.vertical)
      plot::put_text(c, ct.labels[i], {x - sz.width / 2, y + kTickLen + 6 + sz.height}, ct.fs, kBlack, 1);
    else  // rotated (reads bottom to top), its end at the tick
      put_text_vertical(c, ct.labels[i], {x - (sz.height + base + 4) / 2, y + kTickLen + 2}, ct.fs, kBlack);
  }
  for (size_t i = 0; i < yt.size(); ++i) {
    const int y = m.py(yt[i]);
    cv::line(c, {m.area.x - kTickLen, y}, {m.area.x, y}, kBlack, 1);
    const auto sz = plot::text_size(ys[i], fs, 1);
    plot::put_text(c, ys[i], {m.area.x - kTickLen - 4 - sz.width, y + sz.height / 2}, fs, kBlack, 1);
  }
  if (!opt.xlabel.empty()) {
    const auto sz = plot::text_size(opt.xlabel, fs_label, 1);
    plot::put_text(c, opt.xlabel, {m.area.x + (m.area.width - sz.width) / 2, c.rows - kPad}, fs_label, kBlack, 1);
  }
  if (!opt.ylabel.empty()) {
    const auto sz = plot::text_size(opt.ylabel, fs_label, 1);
    put_text_vertical(c, opt.ylabel, {kPad - 2, m.area.y + (m.area.height - sz.width) / 2}, fs_label, kBlack);
  }
  if (!opt.title.empty()) {
    const auto sz = plot::text_size(opt.title, fs_title, 1);
    plot::put_text(c, opt.title, {m.area.x + (m.area.width - sz.width) / 2, kPad + title_h}, fs_title, kBlack, 1);
  }
  if (where == Legend::kInsideBest) {
    // Corners in preference order; each scored by the line samples (10 per segment) that its box would cover.
    const std::array<cv::Point, 4> corners{cv::Point(m.area.br().x - 8 - lsz.width, m.area.y + 8),
                                           cv::Point(m.area.x + 8, m.area.y + 8),
                                           cv::Point(m.area.br().x - 8 - lsz.width, m.area.br().y - 8 - lsz.height),
                                           cv::Point(m.area.x + 8, m.area.br().y - 8 - lsz.height)};
    std::array<int, 4> covered{};
    for (const auto& s : series)
      for (size_t i = 0; i < s.x.size(); ++i) {
        const bool ok0 = std::isfinite(s.x[i]) && std::isfinite(s.y[i]);
        const bool ok1 = i + 1 < s.x.size() && std::isfinite(s.x[i + 1]) && std::isfinite(s.y[i + 1]);
        for (int k = 0; ok0 && k < (ok1 ? 10 : 1); ++k) {
          const double t = k / 10.0;
          const double xv = ok1 ? s.x[i] + t * (s.x[i + 1] - s.x[i]) : s.x[i];
          const double yv = ok1 ? s.y[i] + t * (s.y[i + 1] - s.y[i]) : s.y[i];
          const cv::Point p(m.px(xv), m.py(yv));
          for (size_t j = 0; j < corners.size(); ++j) covered[j] += cv::Rect(corners[j], lsz).contains(p);
        }
      }
    const auto best = static_cast<size_t>(std::min_element(covered.begin(), covered.end()) - covered.begin());
    draw_legend(c, entries, corners[best], fs);
  } else if (where == Legend::kInsideTopRight)
    draw_legend(c, entries, {m.area.br().x - 8 - lsz.width, m.area.y + 8}, fs);
  else if (where == Legend::kOutsideRight)
    draw_legend(c, entries, {m.area.br().x + kPad, m.area.y}, fs);
  return Axes{m.area + cell.tl(), xl[0], xl[1], yl[0], yl[1]};
}

Axes draw_bars(cv::Mat& img, const cv::Rect& cell, const std::vector<double>& values,
               const std::vector<cv::Scalar>& colors, const ChartOptions& opt) {
  if (values.size() != opt.xcategories.size())
    throw std::invalid_argument("draw_bars: " + std::to_string(values.size()) + " values for " +
                                std::to_string(opt.xcategories.size()) + " categories");
  ChartOptions o = opt;
  if (!o.ylim) {
    double hi = 0;
    for (double v : values)
      if (std::isfinite(v)) hi = std::max(hi, v);
    o.ylim = std::array<double, 2>{0.0, hi > 0 ? hi * 1.05 : 1.0};
  }
  const Axes ax = draw_chart(img, cell, {}, o);
  cv::Mat plot = img(ax.area);
  for (size_t i = 0; i < values.size(); ++i) {
    if (!std::isfinite(values[i])) continue;
    const double x = static_cast<double>(i);
    const cv::Point a = ax.to_px(x - 0.4, std::max(values[i], ax.y0)), b = ax.to_px(x + 0.4, ax.y0);
    cv::Rect r(cv::Point(a.x, a.y), cv::Point(std::max(a.x + 1, b.x), b.y));  // at least one pixel wide
    r = (r - ax.area.tl()) & cv::Rect(0, 0, plot.cols, plot.rows);
    if (r.empty()) continue;
    cv::rectangle(plot, r, colors.empty() ? palette(i) : colors[i % colors.size()], cv::FILLED);
  }
  cv::rectangle(img, ax.area, kBlack, 1);  // the frame over the bars' feet
  return ax;
}

void draw_stacked_bars(cv::Mat& img, const Axes& ax, const std::vector<std::vector<double>>& stacks, double width) {
  for (size_t i = 0; i < stacks.size(); ++i) {
    const double x = static_cast<double>(i);
    double acc = 0;
    for (size_t k = 0; k < stacks[i].size(); ++k) {
      const double v = std::isfinite(stacks[i][k]) ? std::max(0.0, stacks[i][k]) : 0.0;
      const cv::Point a = ax.to_px(x - width / 2, std::min(ax.y1, acc + v)),
                      b = ax.to_px(x + width / 2, std::min(ax.y1, acc));
      if (a.y < b.y) cv::rectangle(img, a, b, palette(k), cv::FILLED);
      acc += v;
    }
  }
  cv::rectangle(img, ax.area, kBlack, 1);
}

void draw_cross(cv::Mat& img, cv::Point c, const std::string& label, cv::Scalar color, int r, double font_scale) {
  cv::line(img, c + cv::Point(-r, -r), c + cv::Point(r, r), color, 2);
  cv::line(img, c + cv::Point(-r, r), c + cv::Point(r, -r), color, 2);
  if (!label.empty())
    cv::putText(img, label, c + cv::Point(-12, -2 * r), cv::FONT_HERSHEY_SIMPLEX, font_scale, color, 1, cv::LINE_AA);
}

void draw_colorbar(cv::Mat& img, const cv::Rect& bar, double vmax, double fs) {
  if (!std::isfinite(vmax) || vmax <= 0)
    throw std::invalid_argument("draw_colorbar: vmax must be finite and > 0, got " + std::to_string(vmax));
  if ((bar & cv::Rect(0, 0, img.cols, img.rows)) != bar || bar.empty())
    throw std::invalid_argument("draw_colorbar: the bar must lie inside the picture");
  for (int y = 0; y < bar.height; ++y) {
    const double t = bar.height > 1 ? 1.0 - static_cast<double>(y) / (bar.height - 1) : 1.0;
    cv::line(img, {bar.x, bar.y + y}, {bar.x + bar.width - 1, bar.y + y}, blues(t), 1);
  }
  cv::rectangle(img, bar, kFrame, 1);
  const auto ticks = nice_ticks(0, vmax, 6);
  const double step = ticks.size() > 1 ? ticks[1] - ticks[0] : vmax;
  for (double v : ticks) {
    const int y = bar.y + static_cast<int>(std::lround((1.0 - v / vmax) * (bar.height - 1)));
    const auto s = tick_label(v, step);
    const auto sz = plot::text_size(s, fs, 1);
    cv::line(img, {bar.br().x, y}, {bar.br().x + kTickLen - 1, y}, kBlack, 1);
    plot::put_text(img, s, {bar.br().x + kTickLen + 3, y + sz.height / 2}, fs, kBlack, 1);
  }
}

cv::Mat render_heatmap(const std::vector<std::vector<double>>& values, const HeatmapOptions& opt) {
  const int k_rows = static_cast<int>(values.size());
  if (k_rows == 0 || values[0].empty()) throw std::invalid_argument("render_heatmap: empty matrix");
  const int k_cols = static_cast<int>(values[0].size());
  for (const auto& r : values)
    if (static_cast<int>(r.size()) != k_cols) throw std::invalid_argument("render_heatmap: ragged matrix");
  if (static_cast<int>(opt.row_labels.size()) != k_rows || static_cast<int>(opt.col_labels.size()) != k_cols)
    throw std::invalid_argument("render_heatmap: " + std::to_string(opt.row_labels.size()) + " row and " +
                                std::to_string(opt.col_labels.size()) + " column labels for a " +
                                std::to_string(k_rows) + " x " + std::to_string(k_cols) + " matrix");
  double vmax = opt.vmax;
  if (!(vmax > 0)) {
    vmax = 0;
    for (const auto& r : values)
      for (double v : r)
        if (std::isfinite(v)) vmax = std::max(vmax, v);
    if (vmax <= 0) vmax = 1;
  }
  const int cell = std::clamp(opt.max_side / std::max(k_rows, k_cols), 8, 100);
  const double lfs = std::clamp(cell / 40.0, 0.3, 0.5), afs = 0.6, tfs = 0.8;  // tick labels, axis titles, title
  auto widest = [&](const std::vector<std::string>& ls) {
    int w = 0;
    for (const auto& l : ls) w = std::max(w, plot::text_size(l, lfs, 1).width);
    return std::min(w, 260);  // longer labels are clipped at the picture's edge
  };
  const int lw_rows = widest(opt.row_labels), lw_cols = widest(opt.col_labels);
  const int ah = plot::text_size("Ag", afs, 1).height;
  const int margin_l = 10 + ah + 16 + lw_rows + 6 + kTickLen, margin_t = opt.subtitle.empty() ? 70 : 100;
  const int margin_b = kTickLen + 6 + lw_cols + 16 + ah + 12, cb_gap = 28, cb_w = 20;
  const int margin_r = cb_gap + cb_w + kTickLen + 70;
  const int wide = k_cols * cell, high = k_rows * cell;
  const int w = std::max(margin_l + wide + margin_r, 520), h = margin_t + high + margin_b;
  cv::Mat img(h, w, CV_8UC3, kWhite);
  // Numbers: a font that fits "0.00" (or the widest value) into the cell with 2 px a side; none below 18 px cells.
  double nfs = 0;
  if (!opt.cell_format.empty() && cell >= 18) {
    int widest_num = 0;
    char buf[64];
    for (const auto& r : values)
      for (double v : r)
        if (std::isfinite(v)) {
          std::snprintf(buf, sizeof buf, opt.cell_format.c_str(), v);
          widest_num = std::max(widest_num, plot::text_size(buf, 1.0, 1).width);
        }
    nfs = widest_num > 0 ? std::min(0.6, (cell - 4.0) / widest_num) : 0.0;
    if (nfs < 0.28) nfs = 0;  // smaller Hershey digits do not read
  }
  for (int r = 0; r < k_rows; ++r)
    for (int c = 0; c < k_cols; ++c) {
      const double v = values[r][c];
      if (!std::isfinite(v)) continue;
      const cv::Point p0(margin_l + c * cell, margin_t + r * cell);
      cv::rectangle(img, p0, p0 + cv::Point(cell, cell), blues(v / vmax), cv::FILLED);
      if (nfs <= 0) continue;
      char buf[64];
      std::snprintf(buf, sizeof buf, opt.cell_format.c_str(), v);
      const auto sz = plot::text_size(buf, nfs, 1);
      const bool dark = v > 0.45 * vmax;  // white text on the darker half of the scale
      plot::put_text(img, buf, p0 + cv::Point((cell - sz.width) / 2, (cell + sz.height) / 2), nfs,
                     dark ? kWhite : kBlack, 1);
    }
  cv::rectangle(img, cv::Point(margin_l, margin_t), cv::Point(margin_l + wide, margin_t + high), kFrame, 1);
  for (int i = 0; i < k_rows; ++i) {
    const int mid_y = margin_t + i * cell + cell / 2;
    const auto sz = plot::text_size(opt.row_labels[i], lfs, 1);
    cv::line(img, {margin_l - kTickLen, mid_y}, {margin_l, mid_y}, kBlack, 1);
    plot::put_text(img, opt.row_labels[i], cv::Point(margin_l - kTickLen - 6 - sz.width, mid_y + sz.height / 2), lfs,
                   kBlack, 1);
  }
  for (int i = 0; i < k_cols; ++i) {
    const int mid_x = margin_l + i * cell + cell / 2;
    const auto sz = plot::text_size(opt.col_labels[i], lfs, 1);
    cv::line(img, {mid_x, margin_t + high}, {mid_x, margin_t + high + kTickLen}, kBlack, 1);
    put_text_vertical(img, opt.col_labels[i], {mid_x - (sz.height + 4) / 2, margin_t + high + kTickLen + 4}, lfs,
                      kBlack);
  }
  draw_colorbar(img, cv::Rect(margin_l + wide + cb_gap, margin_t, cb_w, high), vmax, lfs);
  if (!opt.title.empty()) {
    const auto tsz = plot::text_size(opt.title, tfs, 1);
    plot::put_text(img, opt.title, {std::max(5, margin_l + (wide - tsz.width) / 2), 38}, tfs, kBlack, 1);
  }
  if (!opt.subtitle.empty()) {
    const auto sz = plot::text_size(opt.subtitle, 0.5, 1);
    plot::put_text(img, opt.subtitle, {std::max(5, (w - sz.width) / 2), 66}, 0.5, kBlack, 1);
  }
  if (!opt.xlabel.empty()) {
    const auto sz = plot::text_size(opt.xlabel, afs, 1);
    plot::put_text(img, opt.xlabel, {margin_l + (wide - sz.width) / 2, h - 12}, afs, kBlack, 1);
  }
  if (!opt.ylabel.empty()) {
    const auto sz = plot::text_size(opt.ylabel, afs, 1);
    put_text_vertical(img, opt.ylabel, {8, margin_t + (high - sz.width) / 2}, afs, kBlack);
  }
  return img;
}

cv::Rect caption_rect(cv::Size text, const cv::Rect& box, const cv::Rect& bounds) {
  cv::Rect r(box.x, box.y - text.height, text.width, text.height);  // on the box's top edge, outside
  if (r.y < bounds.y) r.y = box.y;                                   // no room above: inside, below the top edge
  r.x = std::max(bounds.x, std::min(r.x, bounds.br().x - r.width));
  r.y = std::max(bounds.y, std::min(r.y, bounds.br().y - r.height));
  return r;
}

cv::Rect draw_caption(cv::Mat& img, const std::string& label, const cv::Rect& box, const cv::Rect& bounds,
                      double fs, cv::Scalar color) {
  if (label.empty()) return {};
  int base = 0;
  const cv::Size ts = plot::text_size(label, fs, 1, &base);
  const cv::Rect r = caption_rect({ts.width + 4, ts.height + base + 3}, box, bounds);
  const cv::Rect clip = bounds & cv::Rect(0, 0, img.cols, img.rows);
  cv::Mat roi = img(clip);
  cv::rectangle(roi, r - clip.tl(), color, cv::FILLED);
  plot::put_text(roi, label, cv::Point(r.x + 2, r.y + 2 + ts.height) - clip.tl(), fs, kWhite, 1);
  return r;
}

cv::Scalar class_color(int64_t cls) {
  static constexpr uint32_t kHex[] = {0xFF3838, 0xFF9D97, 0xFF701F, 0xFFB21D, 0xCFD231, 0x48F90A, 0x92CC17,
                                      0x3DDB86, 0x1A9334, 0x00D4BB, 0x2C99A8, 0x00C2FF, 0x344593, 0x6473FF,
                                      0x0018EC, 0x8438FF, 0x520085, 0xCB38FF, 0xFF95C8, 0xFF37C7};
  const uint32_t v = kHex[cls < 0 ? 0 : static_cast<size_t>(cls) % 20];  // RGB
  return cv::Scalar(v & 0xFF, (v >> 8) & 0xFF, (v >> 16) & 0xFF);
}

void draw_box(cv::Mat& img, const cv::Rect2f& box, const std::string& label, cv::Scalar color, int line_width,
              double font_scale, const cv::Rect& bounds) {
  const cv::Point p1(static_cast<int>(box.x), static_cast<int>(box.y));
  const cv::Point p2(static_cast<int>(box.x + box.width), static_cast<int>(box.y + box.height));
  cv::rectangle(img, p1, p2, color, std::max(1, line_width), cv::LINE_AA);
  draw_caption(img, label, cv::Rect(p1, p2), bounds, font_scale, color);
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
