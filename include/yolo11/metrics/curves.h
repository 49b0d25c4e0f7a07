#pragma once
// The validator's curve plots as Ultralytics 8.4.50 draws them (utils/metrics.py: plot_pr_curve, plot_mc_curve):
// PR_curve.png, F1_curve.png, P_curve.png and R_curve.png, drawn with plot/chart.h. Torch-free: the data are the
// curves of ap_per_class (metrics/det_metrics.h); DetMetrics::save_curves() writes all four.
#include <string>
#include <vector>

namespace yolo11::metrics {

constexpr int kCurveWidth = 1350, kCurveHeight = 900;  ///< pixels of the curve PNGs (9 × 6 in at 150 dpi)
constexpr int kMaxLegendClasses = 20;  ///< more classes: grey lines without legend entries (as the reference)

/// Box filter of fraction f as the reference's `smooth`: y padded by nf / 2 copies of its end values each side,
/// then a moving mean of nf = round(len · f · 2) / 2 + 1 points ("valid" convolution, same length as y). Empty y
/// gives an empty result.
std::vector<double> smooth(const std::vector<double>& y, double f = 0.05);

/// The thick curve of a metric-confidence plot: the mean over classes (curves: classes × px.size()), smoothed with
/// fraction 0.1 (as the reference), its maximum `best` and the confidence `best_x` = px at its first maximum. No
/// classes: a zero curve, best = 0, best_x = px[0].
struct MeanCurve {
  std::vector<double> y;
  double best = 0, best_x = 0;
};
MeanCurve mean_metric_curve(const std::vector<double>& px, const std::vector<std::vector<double>>& curves);

/// Writes PR_curve.png at `path` (kCurveWidth × kCurveHeight): `curves` (classes × px.size()) precision at recall px
/// per evaluated class, `ap50` and `names` (display labels) per class, `with_pred` per class whether it had any
/// prediction. As the reference, only classes with predictions get a line and count in the thick blue mean curve,
/// labelled "all classes <mean AP50 of all classes, 3 decimals> mAP@0.5"; with 1..kMaxLegendClasses classes the
/// lines are coloured and labelled "<name> <AP50, 3 decimals>", else grey and unlabelled. Axes [0, 1] × [0, 1].
/// Throws std::invalid_argument when the sizes disagree, std::runtime_error when the file cannot be written.
void save_pr_curve(const std::string& path, const std::vector<double>& px,
                   const std::vector<std::vector<double>>& curves, const std::vector<double>& ap50,
                   const std::vector<std::string>& names, const std::vector<char>& with_pred);

/// Writes a metric-confidence plot (F1_curve.png, P_curve.png, R_curve.png) at `path`: `curves` (classes × px.size())
/// against confidence px, one line per class (coloured and labelled with its name for 1..kMaxLegendClasses classes,
/// else grey), plus the thick blue mean_metric_curve() labelled "all classes <best, 2 decimals> at <best_x, 3
/// decimals>". Title "<ylabel>-Confidence Curve", x "Confidence", axes [0, 1] × [0, 1]. Throws as save_pr_curve().
void save_mc_curve(const std::string& path, const std::vector<double>& px,
                   const std::vector<std::vector<double>>& curves, const std::vector<std::string>& names,
                   const std::string& ylabel);

}  // namespace yolo11::metrics
