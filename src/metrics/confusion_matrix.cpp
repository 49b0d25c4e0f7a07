#include "yolo11/metrics/confusion_matrix.h"

#include <torch/torch.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#include <stdexcept>

#include "yolo11/data/text.h"
#include "yolo11/loss/iou.h"

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
  std::vector<std::vector<double>> vals(static_cast<size_t>(k), std::vector<double>(static_cast<size_t>(k)));
  for (int r = 0; r < k; ++r)
    for (int c = 0; c < k; ++c) vals[r][c] = full[rows[r]][rows[c]];
  const int cell = std::clamp(720 / k, 8, 60);
  const int margin_l = 150, margin_t = capped ? 100 : 80, margin_b = 150, margin_r = 20;
  const int w = std::max(margin_l + k * cell + margin_r, 520), h = margin_t + k * cell + margin_b;
  cv::Mat img(h, w, CV_8UC3, cv::Scalar(255, 255, 255));
  double vmax = 0;
  for (const auto& row : vals)
    for (double v : row) vmax = std::max(vmax, v);
  if (vmax <= 0) vmax = 1;
  const bool annotate = k <= 30;
  auto label = [&](int i) {
    const int64_t c = rows[i];
    return c < nc_ ? data::display_name(c < static_cast<int64_t>(names.size()) ? names[static_cast<size_t>(c)] : "", c)
                   : std::string("background");
  };
  for (int r = 0; r < k; ++r)
    for (int c = 0; c < k; ++c) {
      const double v = vals[r][c];
      const double t = normalize ? v : v / vmax;  // 0..1, "Blues"-like ramp from white to dark blue
      const cv::Scalar col(255 - 90 * t, 255 - 200 * t, 255 - 245 * t);
      const cv::Point p0(margin_l + c * cell, margin_t + r * cell);
      cv::rectangle(img, p0, p0 + cv::Point(cell, cell), col, cv::FILLED);
      if (annotate && v > 0.0) {
        char buf[32];
        if (normalize)
          std::snprintf(buf, sizeof buf, "%.2f", v);
        else
          std::snprintf(buf, sizeof buf, "%.0f", v);
        const double fs = std::min(0.45, cell / 80.0);
        int base = 0;
        const auto sz = cv::getTextSize(buf, cv::FONT_HERSHEY_SIMPLEX, fs, 1, &base);
        cv::putText(img, buf, p0 + cv::Point((cell - sz.width) / 2, (cell + sz.height) / 2), cv::FONT_HERSHEY_SIMPLEX,
                    fs, t > 0.5 ? cv::Scalar(255, 255, 255) : cv::Scalar(0, 0, 0), 1, cv::LINE_AA);
      }
    }
  cv::rectangle(img, cv::Point(margin_l, margin_t), cv::Point(margin_l + k * cell, margin_t + k * cell),
                cv::Scalar(0, 0, 0), 1);
  const double lfs = std::min(0.45, cell / 40.0);
  for (int i = 0; i < k && (annotate || capped); ++i) {
    const auto name = label(i);
    int base = 0;
    const auto sz = data::text_size(name, lfs, 1, &base);
    data::put_text(img, name, cv::Point(margin_l - sz.width - 6, margin_t + i * cell + (cell + sz.height) / 2), lfs,
                   cv::Scalar(0, 0, 0), 1);
    // Column labels written vertically: render horizontally and rotate.
    cv::Mat txt(sz.height + base + 4, sz.width + 4, CV_8UC3, cv::Scalar(255, 255, 255));
    data::put_text(txt, name, cv::Point(2, sz.height + 2), lfs, cv::Scalar(0, 0, 0), 1);
    cv::Mat rot;
    cv::rotate(txt, rot, cv::ROTATE_90_COUNTERCLOCKWISE);
    const int x0 = margin_l + i * cell + (cell - rot.cols) / 2, y0 = margin_t + k * cell + 6;
    if (x0 >= 0 && x0 + rot.cols <= w && y0 + rot.rows <= h) rot.copyTo(img(cv::Rect(x0, y0, rot.cols, rot.rows)));
  }
  const std::string title = normalize ? "Confusion Matrix Normalized" : "Confusion Matrix";
  cv::putText(img, title, cv::Point(std::max(10, (w - 430) / 2), 35), cv::FONT_HERSHEY_SIMPLEX, 0.8,
              cv::Scalar(0, 0, 0), 2, cv::LINE_AA);
  if (capped) {
    const std::string sub = "top " + std::to_string(shown.size()) + " of " + std::to_string(nc_) +
                            " classes by support (full matrix: confusion_matrix.csv)";
    int base = 0;
    const auto sz = cv::getTextSize(sub, cv::FONT_HERSHEY_SIMPLEX, 0.5, 1, &base);
    cv::putText(img, sub, cv::Point(std::max(5, (w - sz.width) / 2), 62), cv::FONT_HERSHEY_SIMPLEX, 0.5,
                cv::Scalar(0, 0, 0), 1, cv::LINE_AA);
  }
  cv::putText(img, "True", cv::Point(margin_l + k * cell / 2 - 20, h - 12), cv::FONT_HERSHEY_SIMPLEX, 0.6,
              cv::Scalar(0, 0, 0), 1, cv::LINE_AA);
  cv::putText(img, "Predicted", cv::Point(5, margin_t - 8), cv::FONT_HERSHEY_SIMPLEX, 0.6, cv::Scalar(0, 0, 0), 1,
              cv::LINE_AA);
  if (!cv::imwrite(path, img))
    throw std::runtime_error("ConfusionMatrix::save_png: cannot write " + path +
                             " (does the directory exist and is it writable?)");
}

}  // namespace yolo11::metrics
