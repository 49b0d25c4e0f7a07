#include "yolo11/metrics/confusion_matrix.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#include <stdexcept>

#include "yolo11/plot/text.h"
#include "yolo11/loss/iou.h"
#include "yolo11/plot/chart.h"

namespace yolo11::metrics {

std::vector<double> to_doubles(const at::Tensor& t) {
  auto c = t.detach().to(torch::kCPU, torch::kDouble).contiguous().view({-1});
  return {c.data_ptr<double>(), c.data_ptr<double>() + c.numel()};
}

ConfusionMatrix::ConfusionMatrix(int64_t nc, double conf, double iou_thres)
    : nc_(nc), conf_(conf), iou_thres_(iou_thres), m_(nc + 1, std::vector<double>(nc + 1, 0.0)) {
  if (nc < 1) throw std::runtime_error("ConfusionMatrix: nc must be >= 1");
}

void ConfusionMatrix::process_batch(const at::Tensor& pred, const at::Tensor& gt_cls, const at::Tensor& gt_boxes) {
  auto det = pred.detach().to(torch::kCPU, torch::kFloat).view({-1, 6});
  const auto gcls = to_doubles(gt_cls);
  const int64_t m = static_cast<int64_t>(gcls.size());
  auto conf = det.select(1, 4);
  if (m == 0) {
    for (double c : to_doubles(det.select(1, 5).masked_select(conf > conf_))) m_[static_cast<int64_t>(c)][nc_] += 1;
    return;
  }
  if (det.size(0) == 0) {
    for (double c : gcls) m_[nc_][static_cast<int64_t>(c)] += 1;
    return;
  }
  det = det.index_select(0, (conf > conf_).nonzero().view({-1}));
  const auto dcls = to_doubles(det.select(1, 5));
  const int64_t n = det.size(0);
  auto iou = loss::box_iou(gt_boxes.to(torch::kCPU).view({-1, 4}), det.narrow(1, 0, 4)).contiguous();
  auto ia = iou.accessor<float, 2>();
  // Each detection keeps its highest-IoU GT (IoU > thr); then each GT keeps its highest-IoU detection.
  std::vector<int64_t> det_gt(n, -1);
  std::vector<float> det_iou(n, 0.f);
  for (int64_t g = 0; g < m; ++g)
    for (int64_t d = 0; d < n; ++d)
      if (ia[g][d] > iou_thres_ && (det_gt[d] < 0 || ia[g][d] >= det_iou[d])) det_gt[d] = g, det_iou[d] = ia[g][d];
  std::vector<int64_t> gt_det(m, -1);
  for (int64_t d = 0; d < n; ++d) {
    const int64_t g = det_gt[d];
    if (g >= 0 && (gt_det[g] < 0 || det_iou[d] >= det_iou[gt_det[g]])) gt_det[g] = d;
  }
  std::vector<char> det_matched(n, 0);
  for (int64_t g = 0; g < m; ++g) {
    const auto gc = static_cast<int64_t>(gcls[g]);
    if (gt_det[g] >= 0) {
      det_matched[gt_det[g]] = 1;
      m_[static_cast<int64_t>(dcls[gt_det[g]])][gc] += 1;  // correct or wrong class
    } else {
      m_[nc_][gc] += 1;  // missed (background)
    }
  }
  for (int64_t d = 0; d < n; ++d)
    if (!det_matched[d]) m_[static_cast<int64_t>(dcls[d])][nc_] += 1;  // predicted background
}

std::vector<std::vector<double>> ConfusionMatrix::normalized() const {
  auto out = m_;
  for (int64_t c = 0; c <= nc_; ++c) {
    double s = 0;
    for (int64_t r = 0; r <= nc_; ++r) s += m_[r][c];
    for (int64_t r = 0; r <= nc_; ++r) out[r][c] = m_[r][c] / (s + 1e-9);
  }
  return out;
}

std::vector<int64_t> ConfusionMatrix::plot_classes(int64_t max_classes) const {
  std::vector<double> support(static_cast<size_t>(nc_), 0.0), predicted(static_cast<size_t>(nc_), 0.0);
  for (int64_t r = 0; r <= nc_; ++r)
    for (int64_t c = 0; c < nc_; ++c) support[static_cast<size_t>(c)] += m_[r][c];
  for (int64_t r = 0; r < nc_; ++r)
    for (int64_t c = 0; c <= nc_; ++c) predicted[static_cast<size_t>(r)] += m_[r][c];
  std::vector<int64_t> idx;
  for (int64_t c = 0; c < nc_; ++c) {
    const auto u = static_cast<size_t>(c);
    if (nc_ < kMaxAnnotatedRows || support[u] > 0 || predicted[u] > 0) idx.push_back(c);
  }
  if (max_classes <= 0 || static_cast<int64_t>(idx.size()) <= max_classes) return idx;
  // Most true instances first; ties: most predictions, then the lower index. Shown in index order.
  std::stable_sort(idx.begin(), idx.end(), [&](int64_t a, int64_t b) {
    const auto ua = static_cast<size_t>(a), ub = static_cast<size_t>(b);
    return support[ua] != support[ub] ? support[ua] > support[ub] : predicted[ua] > predicted[ub];
  });
  idx.resize(static_cast<size_t>(max_classes));
  std::sort(idx.begin(), idx.end());
  return idx;
}

void ConfusionMatrix::save_csv(const std::string& path, const std::vector<std::string>& names) const {
  auto label = [&](int64_t i) {
    std::string n = i < nc_ ? (i < static_cast<int64_t>(names.size()) ? names[static_cast<size_t>(i)] : std::to_string(i))
                            : std::string("background");
    if (n.find_first_of(",\"\n") != std::string::npos) {  // RFC 4180 quoting
      std::string q = "\"";
      for (char ch : n) q += ch == '"' ? std::string("\"\"") : std::string(1, ch);
      n = q + "\"";
    }
    return n;
  };
  std::string out = "predicted\\true";
  for (int64_t c = 0; c <= nc_; ++c) out += "," + label(c);
  out += "\n";
  char buf[32];
  for (int64_t r = 0; r <= nc_; ++r) {
    out += label(r);
    for (int64_t c = 0; c <= nc_; ++c) {
      std::snprintf(buf, sizeof buf, ",%.0f", m_[r][c]);
      out += buf;
    }
    out += "\n";
  }
  std::ofstream f(path, std::ios::binary);
  f << out;
  if (!f) throw std::runtime_error("ConfusionMatrix::save_csv: cannot write " + path);
}

void ConfusionMatrix::save_png(const std::string& path, const std::vector<std::string>& names, bool normalize,
                               int64_t max_classes) const {
  const auto full = normalize ? normalized() : m_;
  const std::vector<int64_t> shown = plot_classes(max_classes);
  std::vector<int64_t> rows = shown;  // plotted class indices, then background
  rows.push_back(nc_);
  const size_t k = rows.size();
  // As the reference, values below 0.005 are blank (no colour, no number) and the colour scale runs from 0 to the
  // largest value shown.
  std::vector<std::vector<double>> vals(k, std::vector<double>(k));
  for (size_t r = 0; r < k; ++r)
    for (size_t c = 0; c < k; ++c) {
      const double v = full[rows[r]][rows[c]];
      vals[r][c] = v < 0.005 ? std::nan("") : v;
    }
  plot::HeatmapOptions o;
  for (const int64_t c : rows)
    o.row_labels.push_back(
        c < nc_ ? plot::display_name(c < static_cast<int64_t>(names.size()) ? names[static_cast<size_t>(c)] : "", c)
                : std::string("background"));
  o.col_labels = o.row_labels;
  o.title = normalize ? "Confusion Matrix Normalized" : "Confusion Matrix";
  if (static_cast<int64_t>(shown.size()) < nc_)
    o.subtitle = std::to_string(shown.size()) + " of " + std::to_string(nc_) +
                 " classes (with labels or predictions, most labels first; all: confusion_matrix.csv)";
  o.xlabel = "True";
  o.ylabel = "Predicted";
  o.cell_format = static_cast<int64_t>(k) < kMaxAnnotatedRows ? (normalize ? "%.2f" : "%.0f") : "";
  plot::save_image(path, plot::render_heatmap(vals, o));
}

}  // namespace yolo11::metrics
