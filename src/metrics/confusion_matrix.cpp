#include "yolo11/metrics/confusion_matrix.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#include <stdexcept>

#include "yolo11/data/text.h"
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
  std::vector<int64_t> idx(static_cast<size_t>(nc_));
  for (int64_t c = 0; c < nc_; ++c) idx[static_cast<size_t>(c)] = c;
  if (max_classes <= 0 || nc_ <= max_classes) return idx;
  std::vector<double> support(static_cast<size_t>(nc_), 0.0), predicted(static_cast<size_t>(nc_), 0.0);
  for (int64_t r = 0; r <= nc_; ++r)
    for (int64_t c = 0; c < nc_; ++c) support[static_cast<size_t>(c)] += m_[r][c];
  for (int64_t r = 0; r < nc_; ++r)
    for (int64_t c = 0; c <= nc_; ++c) predicted[static_cast<size_t>(r)] += m_[r][c];
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
  const bool capped = static_cast<int64_t>(shown.size()) < nc_;
  std::vector<int64_t> rows = shown;  // plotted class indices, then background
  rows.push_back(nc_);
  const int k = static_cast<int>(rows.size());
  // As the reference, values below 0.005 are blank (no colour, no number) and the colour scale runs from 0 to the
  // largest value shown.
  std::vector<std::vector<double>> vals(static_cast<size_t>(k), std::vector<double>(static_cast<size_t>(k)));
  double vmax = 0;
  for (int r = 0; r < k; ++r)
    for (int c = 0; c < k; ++c) {
      const double v = full[rows[r]][rows[c]];
      vals[r][c] = v < 0.005 ? std::nan("") : v;
      if (v >= 0.005) vmax = std::max(vmax, v);
    }
  if (vmax <= 0) vmax = 1;
  const bool annotate = k < 30;  // the reference: numbers in the cells below 30 rows
  auto label = [&](int i) {
    const int64_t c = rows[i];
    return c < nc_ ? data::display_name(c < static_cast<int64_t>(names.size()) ? names[static_cast<size_t>(c)] : "", c)
                   : std::string("background");
  };
  const cv::Scalar black(0, 0, 0), white(255, 255, 255);
  const int cell = std::clamp(720 / k, 8, 100);
  const double lfs = std::clamp(cell / 40.0, 0.3, 0.5), afs = 0.6, tfs = 0.8;  // tick labels, axis titles, title
  int lw = 0;  // widest class label (capped: longer ones are clipped at the picture's edge)
  for (int i = 0; i < k; ++i) lw = std::max(lw, data::text_size(label(i), lfs, 1).width);
  lw = std::min(lw, 260);
  const int ah = data::text_size("Ag", afs, 1).height, tick = 4;
  const auto cb_ticks = plot::nice_ticks(0, vmax, 6);
  const double cb_step = cb_ticks.size() > 1 ? cb_ticks[1] - cb_ticks[0] : vmax;
  int cbw = 0;  // widest colour bar label
  for (double v : cb_ticks) cbw = std::max(cbw, data::text_size(plot::tick_label(v, cb_step), lfs, 1).width);
  const int margin_l = 10 + ah + 16 + lw + 6 + tick, margin_t = capped ? 100 : 70;
  const int margin_b = tick + 6 + lw + 16 + ah + 12, cb_gap = 28, cb_w = 20;
  const int margin_r = cb_gap + cb_w + tick + 6 + cbw + 16;
  const int side = k * cell, w = std::max(margin_l + side + margin_r, 520), h = margin_t + side + margin_b;
  cv::Mat img(h, w, CV_8UC3, white);
  for (int r = 0; r < k; ++r)
    for (int c = 0; c < k; ++c) {
      const double v = vals[r][c];
      if (std::isnan(v)) continue;
      const cv::Point p0(margin_l + c * cell, margin_t + r * cell);
      cv::rectangle(img, p0, p0 + cv::Point(cell, cell), plot::blues(v / vmax), cv::FILLED);
      if (!annotate) continue;
      char buf[32];
      std::snprintf(buf, sizeof buf, normalize ? "%.2f" : "%.0f", v);
      const double fs = std::min(0.6, cell / 80.0);
      const auto sz = cv::getTextSize(buf, cv::FONT_HERSHEY_SIMPLEX, fs, 1, nullptr);
      const bool dark = v > 0.45 * (normalize ? 1.0 : vmax);  // the reference's text colour threshold
      cv::putText(img, buf, p0 + cv::Point((cell - sz.width) / 2, (cell + sz.height) / 2), cv::FONT_HERSHEY_SIMPLEX,
                  fs, dark ? white : black, 1, cv::LINE_AA);
    }
  cv::rectangle(img, cv::Point(margin_l, margin_t), cv::Point(margin_l + side, margin_t + side),
                cv::Scalar(200, 200, 200), 1);
  // Tick labels: class names left of the rows ("Predicted") and, rotated, under the columns ("True").
  for (int i = 0; i < k; ++i) {
    const auto name = label(i);
    const int mid_y = margin_t + i * cell + cell / 2, mid_x = margin_l + i * cell + cell / 2;
    const auto sz = data::text_size(name, lfs, 1);
    cv::line(img, {margin_l - tick, mid_y}, {margin_l, mid_y}, black, 1);
    cv::line(img, {mid_x, margin_t + side}, {mid_x, margin_t + side + tick}, black, 1);
    data::put_text(img, name, cv::Point(margin_l - tick - 6 - sz.width, mid_y + sz.height / 2), lfs, black, 1);
    plot::put_text_vertical(img, name, {mid_x - (sz.height + 4) / 2, margin_t + side + tick + 4}, lfs, black);
  }
  // Colour bar: 0 at the bottom, vmax at the top, with nice ticks.
  const int cb_x = margin_l + side + cb_gap;
  for (int y = 0; y < side; ++y) {
    const double t = side > 1 ? 1.0 - static_cast<double>(y) / (side - 1) : 1.0;
    cv::line(img, {cb_x, margin_t + y}, {cb_x + cb_w - 1, margin_t + y}, plot::blues(t), 1);
  }
  for (double v : cb_ticks) {
    const int y = margin_t + static_cast<int>(std::lround((1.0 - v / vmax) * (side - 1)));
    const auto s = plot::tick_label(v, cb_step);
    const auto sz = data::text_size(s, lfs, 1);
    cv::line(img, {cb_x + cb_w, y}, {cb_x + cb_w + tick, y}, black, 1);
    data::put_text(img, s, {cb_x + cb_w + tick + 4, y + sz.height / 2}, lfs, black, 1);
  }
  const std::string title = normalize ? "Confusion Matrix Normalized" : "Confusion Matrix";
  const auto tsz = data::text_size(title, tfs, 1);
  data::put_text(img, title, {std::max(5, margin_l + (side - tsz.width) / 2), 38}, tfs, black, 1);
  if (capped) {
    const std::string sub = "top " + std::to_string(shown.size()) + " of " + std::to_string(nc_) +
                            " classes by support (full matrix: confusion_matrix.csv)";
    const auto sz = data::text_size(sub, 0.5, 1);
    data::put_text(img, sub, {std::max(5, (w - sz.width) / 2), 66}, 0.5, black, 1);
  }
  const auto xsz = data::text_size("True", afs, 1), ysz = data::text_size("Predicted", afs, 1);
  data::put_text(img, "True", {margin_l + (side - xsz.width) / 2, h - 12}, afs, black, 1);
  plot::put_text_vertical(img, "Predicted", {8, margin_t + (side - ysz.width) / 2}, afs, black);
  plot::save_image(path, img);
}

}  // namespace yolo11::metrics
