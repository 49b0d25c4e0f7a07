#include "yolo11/metrics/curves.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>

#include "yolo11/plot/chart.h"

namespace yolo11::metrics {
namespace {

const cv::Scalar kMeanBlue(255, 0, 0), kGrey(128, 128, 128);  // BGR: matplotlib "blue" and "gray"
constexpr int kClassThickness = 2, kMeanThickness = 5;

void check_sizes(const char* what, const std::vector<double>& px, const std::vector<std::vector<double>>& curves,
                 const std::vector<std::string>& names) {
  if (names.size() != curves.size())
    throw std::invalid_argument(std::string(what) + ": " + std::to_string(curves.size()) + " curves but " +
                                std::to_string(names.size()) + " names");
  for (const auto& c : curves)
    if (c.size() != px.size())
      throw std::invalid_argument(std::string(what) + ": a curve has " + std::to_string(c.size()) + " points, px has " +
                                  std::to_string(px.size()));
}

plot::ChartOptions unit_axes(std::string title, std::string xlabel, std::string ylabel) {
  plot::ChartOptions opt;
  opt.title = std::move(title), opt.xlabel = std::move(xlabel), opt.ylabel = std::move(ylabel);
  opt.xlim = std::array<double, 2>{0.0, 1.0}, opt.ylim = std::array<double, 2>{0.0, 1.0};
  opt.legend = plot::Legend::kOutsideRight;  // the reference: bbox_to_anchor=(1.04, 1), loc="upper left"
  opt.font_scale = 0.6;
  return opt;
}

/// One thin line per class: coloured with a legend entry for 1..kMaxLegendClasses classes, else grey and unlabelled.
plot::Series class_series(const std::vector<double>& px, const std::vector<double>& y, size_t colour_index,
                          size_t n_classes, std::string label) {
  plot::Series s{px, y, kGrey, kClassThickness, ""};
  if (n_classes > 0 && n_classes <= static_cast<size_t>(kMaxLegendClasses))
    s.color = plot::palette(colour_index), s.label = std::move(label);
  return s;
}

}  // namespace

std::vector<double> smooth(const std::vector<double>& y, double f) {
  if (y.empty()) return {};
  const auto n = static_cast<int64_t>(y.size());
  const int64_t nf = static_cast<int64_t>(std::nearbyint(static_cast<double>(n) * f * 2)) / 2 + 1;
  const int64_t half = nf / 2;
  std::vector<double> yp;
  yp.reserve(static_cast<size_t>(n + 2 * half));
  yp.insert(yp.end(), static_cast<size_t>(half), y.front());
  yp.insert(yp.end(), y.begin(), y.end());
  yp.insert(yp.end(), static_cast<size_t>(half), y.back());
  const double w = 1.0 / static_cast<double>(nf);
  std::vector<double> out(yp.size() - static_cast<size_t>(nf) + 1);
  for (size_t k = 0; k < out.size(); ++k) {
    double s = 0;
    for (int64_t i = 0; i < nf; ++i) s += yp[k + static_cast<size_t>(i)] * w;
    out[k] = s;
  }
  return out;
}

MeanCurve mean_metric_curve(const std::vector<double>& px, const std::vector<std::vector<double>>& curves) {
  MeanCurve m;
  if (px.empty()) return m;
  std::vector<double> mean(px.size(), 0.0);
  for (const auto& c : curves) {
    if (c.size() != px.size()) throw std::invalid_argument("mean_metric_curve: a curve's size differs from px");
    for (size_t i = 0; i < px.size(); ++i) mean[i] += c[i];
  }
  if (!curves.empty())
    for (auto& v : mean) v /= static_cast<double>(curves.size());
  m.y = smooth(mean, 0.1);
  const auto best = std::max_element(m.y.begin(), m.y.end());
  m.best = *best;
  m.best_x = px[static_cast<size_t>(best - m.y.begin())];
  return m;
}

void save_pr_curve(const std::string& path, const std::vector<double>& px,
                   const std::vector<std::vector<double>>& curves, const std::vector<double>& ap50,
                   const std::vector<std::string>& names, const std::vector<char>& with_pred) {
  check_sizes("save_pr_curve", px, curves, names);
  if (ap50.size() != curves.size() || with_pred.size() != curves.size())
    throw std::invalid_argument("save_pr_curve: ap50 and with_pred need one value per curve");
  std::vector<plot::Series> series;
  std::vector<double> mean(px.size(), 0.0);
  size_t rows = 0;
  for (size_t c = 0; c < curves.size(); ++c) {
    if (!with_pred[c]) continue;  // no prediction: no precision values, as the reference's prec_values
    char label[32];
    std::snprintf(label, sizeof label, " %.3f", ap50[c]);
    series.push_back(class_series(px, curves[c], rows, curves.size(), names[c] + label));
    for (size_t i = 0; i < px.size(); ++i) mean[i] += curves[c][i];
    ++rows;
  }
  if (rows > 0)
    for (auto& v : mean) v /= static_cast<double>(rows);
  double map50 = 0;
  for (double a : ap50) map50 += a;
  if (!ap50.empty()) map50 /= static_cast<double>(ap50.size());
  char label[64];
  std::snprintf(label, sizeof label, "all classes %.3f mAP@0.5", map50);
  series.push_back({px, mean, kMeanBlue, kMeanThickness, label});
  plot::save_image(path, plot::render_chart({kCurveWidth, kCurveHeight}, series,
                                            unit_axes("Precision-Recall Curve", "Recall", "Precision")));
}

void save_mc_curve(const std::string& path, const std::vector<double>& px,
                   const std::vector<std::vector<double>>& curves, const std::vector<std::string>& names,
                   const std::string& ylabel) {
  check_sizes("save_mc_curve", px, curves, names);
  std::vector<plot::Series> series;
  for (size_t c = 0; c < curves.size(); ++c) series.push_back(class_series(px, curves[c], c, curves.size(), names[c]));
  const auto mean = mean_metric_curve(px, curves);
  char label[64];
  std::snprintf(label, sizeof label, "all classes %.2f at %.3f", mean.best, mean.best_x);
  series.push_back({px, mean.y, kMeanBlue, kMeanThickness, label});
  plot::save_image(path, plot::render_chart({kCurveWidth, kCurveHeight}, series,
                                            unit_axes(ylabel + "-Confidence Curve", "Confidence", ylabel)));
}

}  // namespace yolo11::metrics
