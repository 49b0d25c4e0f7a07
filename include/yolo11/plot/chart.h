#pragma once
// Charts drawn with OpenCV, one drawing code for every picture of a run: line charts (axes, "nice" 1-2-5 ticks, tick
// labels, axis labels, title, legend, markers), bar charts over named categories, heat maps with numbers in the cells
// and a colour bar, and box captions kept inside the picture. Used by the curve plots (src/metrics/curves.cpp),
// results.png (src/engine/results.cpp), labels.jpg and the batch mosaics (src/plot/data_plots.cpp), the confusion matrix
// (src/metrics/confusion_matrix.cpp), predict outputs (src/engine/predictor.cpp) and sweep.png (src/bench/plot.cpp).
// Text goes through plot/text.h, so UTF-8 labels work where the build can draw them.
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
  int marker = 0;                  ///< radius (pixels) of a filled dot at every finite point; 0: no dots
};

/// Where the legend goes. kAuto: inside, top-right, up to kMaxInsideLegend entries; outside to the right beyond.
/// kInsideBest: inside, in the corner of the plot area that covers the fewest points of the lines (as matplotlib's
/// loc="best"; ties: top-right, top-left, bottom-right, bottom-left).
enum class Legend { kNone, kAuto, kInsideTopRight, kOutsideRight, kInsideBest };
constexpr int kMaxInsideLegend = 6;

struct ChartOptions {
  std::string title, xlabel, ylabel;
  /// Fixed limits {lo, hi}. Unset: the data range + 5 % margin, where the margin never takes a limit below 0 when
  /// all data are >= 0 (a precision curve is drawn on 0…1.05, not on -0.05…1.05; all-zero data: 0…1).
  std::optional<std::array<double, 2>> xlim, ylim;
  Legend legend = Legend::kAuto;
  bool grid = false;        ///< light grey lines at the ticks
  double font_scale = 0.5;  ///< Hershey scale of tick labels and legend (cap height ~11 px); labels and title larger
  int max_ticks = 8;        ///< at most this many ticks per axis (nice_ticks)
  bool integer_x = false;   ///< x ticks only at whole numbers (epochs, batch sizes): never 1.5
  /// Categorical x axis: a tick at x = 0, 1, …, n-1 labelled with these names (abbreviated to kMaxCategoryChars,
  /// rotated to read bottom to top when they do not fit side by side, every k-th only when even that is too dense).
  /// The x limits default to [-0.5, n - 0.5].
  std::vector<std::string> xcategories;
};

constexpr size_t kMaxCategoryChars = 14;

/// Where draw_chart() put the axes: the plot area in pixels of the picture it drew into, and the data limits the area
/// spans, so that callers can add their own marks (bars, crosses, a raster) in data coordinates.
struct Axes {
  cv::Rect area;
  double x0 = 0, x1 = 1, y0 = 0, y1 = 1;
  /// Pixel of data point (x, y); not clamped, so it can lie outside the area.
  cv::Point to_px(double x, double y) const;
};

/// Tick positions k·step inside [lo, hi] (ends included within 1e-6 steps), step = d·10^e with d in {1, 2, 5}: the
/// smallest such step >= min_step that gives at most `max_ticks` ticks. 0..1 → 0, 0.2, …, 1; 0..103 → 0, 20, …, 100;
/// 0.9..3.1 with min_step 1 → 1, 2, 3. lo == hi gives {lo}. Throws std::invalid_argument for non-finite bounds,
/// hi < lo, max_ticks < 2 or a negative or non-finite min_step.
std::vector<double> nice_ticks(double lo, double hi, int max_ticks = 8, double min_step = 0);

/// `name` cut to at most `max_chars` characters (UTF-8 code points), the last one replaced by '.' when cut:
/// ("traffic light", 8) → "traffic.". Used for category tick labels.
std::string abbreviate(const std::string& name, size_t max_chars);

/// `v` printed with the decimals its tick `step` needs: (0.4, 0.2) → "0.4", (20, 20) → "20", (0, 0.2) → "0.0",
/// never "-0". Very large or small steps (|step| ≥ 1e6 or < 1e-4) use %g with the significant digits that the step
/// needs: (4.158892, 2e-6) → "4.158892", (8e-7, 2e-7) → "8e-07".
std::string tick_label(double v, double step);

/// Colour i (cycling) of matplotlib's default "tab10" cycle, BGR.
cv::Scalar palette(size_t i);

/// matplotlib's "Blues" colour map at t in [0, 1] (clamped; NaN gives white), BGR: near white at 0, dark blue at 1.
cv::Scalar blues(double t);

/// Draws `text` (plot/text.h, Hershey `font_scale`) rotated 90° counter-clockwise, reading bottom to top, with the
/// top-left corner of its box at `tl` (pixels); only the text's own pixels are copied, clipped to `img` (CV_8UC3).
/// Returns the box's size: about (text height + descent + 4) × (text width + 4).
cv::Size put_text_vertical(cv::Mat& img, const std::string& text, cv::Point tl, double font_scale, cv::Scalar color);

/// Draws the chart into `cell` of `img` (CV_8UC3; the cell is filled white first) and returns where its axes lie.
/// Throws std::invalid_argument when img is not CV_8UC3, the cell is not inside img or smaller than 160 × 120 px, a
/// series' x and y sizes differ, its thickness is < 1 or its marker < 0, or a given limit is non-finite or has
/// lo >= hi, or the labels leave no room for the plot area.
Axes draw_chart(cv::Mat& img, const cv::Rect& cell, const std::vector<Series>& series, const ChartOptions& opt);

/// A bar chart over opt.xcategories: bar i of height values[i] (from 0; NaN: no bar) in colors[i % colors.size()]
/// (empty: palette()). The y limits default to 0 … max + 5 % (nice ticks). Throws as draw_chart(), and
/// std::invalid_argument when values and opt.xcategories differ in size.
Axes draw_bars(cv::Mat& img, const cv::Rect& cell, const std::vector<double>& values,
               const std::vector<cv::Scalar>& colors, const ChartOptions& opt);

/// Stacked bars on the axes of a chart over categories (bar i centred at x = i): `stacks[i]` holds bar i's segment
/// heights from the bottom up (data units; negative or NaN count as 0), segment k filled with palette(k), `width` in
/// x units; a stack is cut at the top of the axes (ax.y1). The plot area's frame is drawn again over the bars.
void draw_stacked_bars(cv::Mat& img, const Axes& ax, const std::vector<std::vector<double>>& stacks,
                       double width = 0.7);

/// A cross of half-size `r` pixels centred on `c`, with `label` above it to the left (a point that failed), in `color`.
void draw_cross(cv::Mat& img, cv::Point c, const std::string& label, cv::Scalar color, int r = 5,
                double font_scale = 0.35);

/// A vertical colour bar in `bar` (pixels of img): blues() from 0 at the bottom to vmax at the top, framed, with nice
/// tick labels (font_scale) right of it; the labels need about 60 px right of the bar. Throws std::invalid_argument
/// for a non-positive or non-finite vmax or a bar outside img.
void draw_colorbar(cv::Mat& img, const cv::Rect& bar, double vmax, double font_scale = 0.4);

struct HeatmapOptions {
  std::string title, subtitle, xlabel, ylabel;
  std::vector<std::string> row_labels, col_labels;  ///< one per row / column (drawn rotated under the columns)
  double vmax = 0;          ///< the colour scale's top; <= 0: the largest finite value (1 when there is none)
  std::string cell_format;  ///< printf format of the number in a cell ("%.2f"); empty: no numbers
  int max_side = 720;       ///< the cells span at most this many pixels a side (a cell is 8 … 100 px)
};

/// A heat map picture: cell (r, c) filled with blues(v / vmax), NaN cells left white; with opt.cell_format the value is
/// printed centred in the cell (white on dark cells) in a font sized to the cell, when the cells are at least 18 px;
/// labels beside the rows and under the columns; a colour bar right of the cells. Throws std::invalid_argument when
/// the matrix is empty or ragged or the label counts differ from its shape.
cv::Mat render_heatmap(const std::vector<std::vector<double>>& values, const HeatmapOptions& opt);

/// Where a box caption of size `text` (pixels, background included) goes for the box `box` inside `bounds` (the
/// picture, or its tile in a mosaic): on top of the box, above its top edge, when there is room above, else just
/// inside below the top edge (as Ultralytics' Annotator); then shifted left and up as needed so that it lies inside
/// `bounds` wherever the caption is not larger than bounds.
cv::Rect caption_rect(cv::Size text, const cv::Rect& box, const cv::Rect& bounds);

/// Draws `label` (plot/text.h, Hershey font_scale) in white on a `color` filled caption_rect() for `box`, clipped to
/// `bounds`; returns the caption's rectangle. Nothing is drawn (an empty Rect) for an empty label.
cv::Rect draw_caption(cv::Mat& img, const std::string& label, const cv::Rect& box, const cv::Rect& bounds,
                      double font_scale, cv::Scalar color);

/// The colour of class `cls` in every picture of boxes (batch mosaics, predictions): Ultralytics' 20-colour palette
/// (its plotting `colors`), as BGR, repeating after 20 classes; a negative class gets the first colour.
cv::Scalar class_color(int64_t cls);

/// A box (corners in pixels, as float: mosaics scale them) in `color`, `line_width` pixels wide, with `label` on a
/// draw_caption() kept inside `bounds` (the picture, or its tile in a mosaic). No caption for an empty label.
void draw_box(cv::Mat& img, const cv::Rect2f& box, const std::string& label, cv::Scalar color, int line_width,
              double font_scale, const cv::Rect& bounds);

/// A new white `size` (pixels) picture with the chart. Throws as draw_chart().
cv::Mat render_chart(cv::Size size, const std::vector<Series>& series, const ChartOptions& opt);

/// Writes `img` to `path` (format from the extension, as cv::imwrite). Throws std::runtime_error when it cannot be
/// encoded or written (missing directory, no permission).
void save_image(const std::string& path, const cv::Mat& img);

}  // namespace yolo11::plot
