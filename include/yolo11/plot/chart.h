#pragma once
// Line charts drawn with OpenCV: axes, "nice" ticks (1-2-5 steps), tick labels, axis labels, a title, a legend and
// per-series colour/thickness. Used by the validator's curve plots (src/metrics/curves.cpp); general enough for
// results.png and sweep.png. Text goes through data/text.h, so UTF-8 labels work where the build can draw them.
#include <opencv2/core.hpp>

#include <array>
#include <optional>
#include <string>
#include <vector>

namespace yolo11::plot {

/// One line of a chart, in data coordinates. A non-finite x or y breaks the line there (a gap).
struct Series {
  std::vector<double> x, y;
  cv::Scalar color{180, 119, 31};  ///< BGR (default: matplotlib's first colour, tab:blue)
  int thickness = 1;               ///< pixels
  std::string label;               ///< legend text; empty: the series has no legend entry
};

/// Where the legend goes. kAuto: inside, top-right, up to kMaxInsideLegend entries; outside to the right beyond.
enum class Legend { kNone, kAuto, kInsideTopRight, kOutsideRight };
constexpr int kMaxInsideLegend = 6;

struct ChartOptions {
  std::string title, xlabel, ylabel;
  std::optional<std::array<double, 2>> xlim, ylim;  ///< fixed limits {lo, hi}; unset: data range + 5 % margin
  Legend legend = Legend::kAuto;
  bool grid = false;        ///< light grey lines at the ticks
  double font_scale = 0.5;  ///< Hershey scale of tick labels and legend (cap height ~11 px); labels and title larger
  int max_ticks = 8;        ///< at most this many ticks per axis (nice_ticks)
};

/// Tick positions k·step inside [lo, hi] (ends included within 1e-6 steps), step = d·10^e with d in {1, 2, 5}: the
/// smallest such step that gives at most `max_ticks` ticks. 0..1 → 0, 0.2, …, 1; 0..103 → 0, 20, …, 100. lo == hi
/// gives {lo}. Throws std::invalid_argument for non-finite bounds, hi < lo or max_ticks < 2.
std::vector<double> nice_ticks(double lo, double hi, int max_ticks = 8);

/// `v` printed with the decimals its tick `step` needs: (0.4, 0.2) → "0.4", (20, 20) → "20", (0, 0.2) → "0.0",
/// never "-0". Very large or small magnitudes (|step| ≥ 1e6 or < 1e-4) use %g.
std::string tick_label(double v, double step);

/// Colour i (cycling) of matplotlib's default "tab10" cycle, BGR.
cv::Scalar palette(size_t i);

/// matplotlib's "Blues" colour map at t in [0, 1] (clamped; NaN gives white), BGR: near white at 0, dark blue at 1.
cv::Scalar blues(double t);

/// Draws `text` (data/text.h, Hershey `font_scale`) rotated 90° counter-clockwise, reading bottom to top, with the
/// top-left corner of its box at `tl` (pixels); only the text's own pixels are copied, clipped to `img` (CV_8UC3).
/// Returns the box's size: about (text height + descent + 4) × (text width + 4).
cv::Size put_text_vertical(cv::Mat& img, const std::string& text, cv::Point tl, double font_scale, cv::Scalar color);

/// Draws the chart into `cell` of `img` (CV_8UC3; the cell is filled white first). Throws std::invalid_argument when
/// img is not CV_8UC3, the cell is not inside img or smaller than 160 × 120 px, a series' x and y sizes differ, its
/// thickness is < 1, or a given limit is non-finite or has lo >= hi.
void draw_chart(cv::Mat& img, const cv::Rect& cell, const std::vector<Series>& series, const ChartOptions& opt);

/// A new white `size` (pixels) picture with the chart. Throws as draw_chart().
cv::Mat render_chart(cv::Size size, const std::vector<Series>& series, const ChartOptions& opt);

/// Writes `img` to `path` (format from the extension, as cv::imwrite). Throws std::runtime_error when it cannot be
/// encoded or written (missing directory, no permission).
void save_image(const std::string& path, const cv::Mat& img);

}  // namespace yolo11::plot
