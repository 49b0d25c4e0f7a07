// Pure transforms of the Ultralytics 8.4.50 pipeline (see transforms.h). Float32 arithmetic in the reference's
// order; every scalar the reference multiplies a float32 array by is first rounded to float32, as numpy does.
#include "yolo11/data/transforms.h"

#include <opencv2/imgproc.hpp>

#include <algorithm>
#include <cfenv>
#include <cmath>
#include <cstring>
#include <utility>
#include <stdexcept>

namespace yolo11::data {

void Labels::append(const Labels& o) {
  boxes.insert(boxes.end(), o.boxes.begin(), o.boxes.end());
  cls.insert(cls.end(), o.cls.begin(), o.cls.end());
}

Box xywh2xyxy(const Box& b) {
  const float dw = b[2] / 2.0f, dh = b[3] / 2.0f;
  return {b[0] - dw, b[1] - dh, b[0] + dw, b[1] + dh};
}

Box xyxy2xywh(const Box& b) {
  return {(b[0] + b[2]) / 2.0f, (b[1] + b[3]) / 2.0f, b[2] - b[0], b[3] - b[1]};
}

// Python's round(): to nearest, ties to even (std::nearbyint under the default rounding mode).
static int round_half_even(double v) { return static_cast<int>(std::nearbyint(v)); }

cv::Mat resize_long_side(const cv::Mat& img, int64_t imgsz) {
  const int h0 = img.rows, w0 = img.cols;
  const double r = static_cast<double>(imgsz) / std::max(h0, w0);
  if (r == 1.0) return img;
  const int w = static_cast<int>(std::min<double>(std::ceil(w0 * r), static_cast<double>(imgsz)));
  const int h = static_cast<int>(std::min<double>(std::ceil(h0 * r), static_cast<double>(imgsz)));
  cv::Mat out;
  cv::resize(img, out, cv::Size(w, h), 0, 0, cv::INTER_LINEAR);
  return out;
}

LetterboxParams letterbox_params(int h, int w, int new_h, int new_w, bool scaleup, bool auto_pad, int stride) {
  LetterboxParams p;
  double r = std::min(static_cast<double>(new_h) / h, static_cast<double>(new_w) / w);
  if (!scaleup) r = std::min(r, 1.0);
  p.ratio = r;
  p.new_unpad_w = round_half_even(w * r);
  p.new_unpad_h = round_half_even(h * r);
  double dw = new_w - p.new_unpad_w, dh = new_h - p.new_unpad_h;
  if (auto_pad) {
    dw = std::fmod(dw, stride);
    dh = std::fmod(dh, stride);
  }
  dw /= 2;
  dh /= 2;
  p.top = round_half_even(dh - 0.1);
  p.bottom = round_half_even(dh + 0.1);
  p.left = round_half_even(dw - 0.1);
  p.right = round_half_even(dw + 0.1);
  return p;
}

cv::Mat letterbox_image(const cv::Mat& img, const LetterboxParams& p) {
  cv::Mat resized = img;
  if (img.cols != p.new_unpad_w || img.rows != p.new_unpad_h)
    cv::resize(img, resized, cv::Size(p.new_unpad_w, p.new_unpad_h), 0, 0, cv::INTER_LINEAR);
  if (p.top == 0 && p.bottom == 0 && p.left == 0 && p.right == 0) return resized;
  cv::Mat out;
  cv::copyMakeBorder(resized, out, p.top, p.bottom, p.left, p.right, cv::BORDER_CONSTANT,
                     cv::Scalar(114, 114, 114));
  return out;
}

std::vector<Box> letterbox_boxes_from_xywhn(const std::vector<Box>& xywhn, int w, int h, const LetterboxParams& p) {
  const float fw = static_cast<float>(w), fh = static_cast<float>(h), r = static_cast<float>(p.ratio);
  const float l = static_cast<float>(p.left), t = static_cast<float>(p.top);
  std::vector<Box> out;
  out.reserve(xywhn.size());
  for (const auto& b : xywhn) {
    Box x = xywh2xyxy(b);
    x = {x[0] * fw, x[1] * fh, x[2] * fw, x[3] * fh};  // denormalize
    x = {x[0] * r, x[1] * r, x[2] * r, x[3] * r};      // scale(ratio)
    out.push_back({x[0] + l, x[1] + t, x[2] + l, x[3] + t});  // add_padding
  }
  return out;
}

// 3×3 float32 product, each element summed over k = 0, 1, 2 in order (no FMA: the project builds with ISO C++,
// where GCC does not contract).
static Mat3f matmul3(const Mat3f& a, const Mat3f& b) {
  Mat3f c{};
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) {
      float s = a[i * 3 + 0] * b[0 * 3 + j];
      s = s + a[i * 3 + 1] * b[1 * 3 + j];
      s = s + a[i * 3 + 2] * b[2 * 3 + j];
      c[i * 3 + j] = s;
    }
  return c;
}

Mat3f perspective_matrix(const PerspectiveDraws& d, int w_in, int h_in, int w_out, int h_out) {
  const Mat3f I{1, 0, 0, 0, 1, 0, 0, 0, 1};
  Mat3f C = I, P = I, R = I, S = I, T = I;
  C[2] = static_cast<float>(-w_in / 2.0);
  C[5] = static_cast<float>(-h_in / 2.0);
  P[6] = static_cast<float>(d.px);
  P[7] = static_cast<float>(d.py);
  const double ang = d.a * (M_PI / 180.0);
  const double alpha = std::cos(ang) * d.s, beta = std::sin(ang) * d.s;  // cv::getRotationMatrix2D, centre (0,0)
  R[0] = static_cast<float>(alpha);
  R[1] = static_cast<float>(beta);
  R[3] = static_cast<float>(-beta);
  R[4] = static_cast<float>(alpha);
  S[1] = static_cast<float>(std::tan(d.shx * M_PI / 180.0));
  S[3] = static_cast<float>(std::tan(d.shy * M_PI / 180.0));
  T[2] = static_cast<float>(d.tx * w_out);
  T[5] = static_cast<float>(d.ty * h_out);
  return matmul3(matmul3(matmul3(matmul3(T, S), R), P), C);
}

bool box_candidate(const Box& box1, const Box& box2, float area_thr) {
  const float eps = 1e-16f;
  const float w1 = box1[2] - box1[0], h1 = box1[3] - box1[1];
  const float w2 = box2[2] - box2[0], h2 = box2[3] - box2[1];
  const float ar = std::max(w2 / (h2 + eps), h2 / (w2 + eps));
  return (w2 > 2.0f) && (h2 > 2.0f) && (w2 * h2 / (w1 * h1 + eps) > area_thr) && (ar < 100.0f);
}

PerspectiveResult random_perspective(const cv::Mat& img, const Labels& labels, const PerspectiveDraws& d,
                                     bool use_perspective, std::array<int, 2> border, float area_thr) {
  PerspectiveResult res;
  const int w_in = img.cols, h_in = img.rows;
  const int w_out = w_in + 2 * border[1], h_out = h_in + 2 * border[0];
  if (w_out <= 0 || h_out <= 0)
    throw std::runtime_error("random_perspective: output size " + std::to_string(w_out) + "x" +
                             std::to_string(h_out) + " is not positive (input " + std::to_string(w_in) + "x" +
                             std::to_string(h_in) + ", border " + std::to_string(border[0]) + "," +
                             std::to_string(border[1]) + ")");
  res.M = perspective_matrix(d, w_in, h_in, w_out, h_out);
  const Mat3f& M = res.M;
  const bool identity = M == Mat3f{1, 0, 0, 0, 1, 0, 0, 0, 1};
  if (border[0] != 0 || border[1] != 0 || !identity) {
    if (use_perspective) {
      cv::Mat m(3, 3, CV_32F, const_cast<float*>(M.data()));
      cv::warpPerspective(img, res.img, m, cv::Size(w_out, h_out), cv::INTER_LINEAR, cv::BORDER_CONSTANT,
                          cv::Scalar(114, 114, 114));
    } else {
      const double md[6] = {M[0], M[1], M[2], M[3], M[4], M[5]};  // as warpAffine converts the float32 matrix
      if (!detail::warp_affine_scale_translate(img, res.img, md, cv::Size(w_out, h_out), cv::Vec3b(114, 114, 114))) {
        cv::Mat m(2, 3, CV_32F, const_cast<float*>(M.data()));
        cv::warpAffine(img, res.img, m, cv::Size(w_out, h_out), cv::INTER_LINEAR, cv::BORDER_CONSTANT,
                       cv::Scalar(114, 114, 114));
      }
    }
  } else {
    res.img = img;
  }

  const size_t n = labels.size();
  res.boxes_warped.resize(n);
  res.box1_scaled.resize(n);
  res.boxes_clipped.resize(n);
  res.keep.resize(n);
  const float s = static_cast<float>(d.s);
  const float fw = static_cast<float>(w_out), fh = static_cast<float>(h_out);
  for (size_t i = 0; i < n; ++i) {
    const Box& b = labels.boxes[i];
    const float cx[4] = {b[0], b[2], b[0], b[2]};  // corners (x1,y1) (x2,y2) (x1,y2) (x2,y1)
    const float cy[4] = {b[1], b[3], b[3], b[1]};
    float xmin = INFINITY, ymin = INFINITY, xmax = -INFINITY, ymax = -INFINITY;
    for (int k = 0; k < 4; ++k) {
      float x = (cx[k] * M[0] + cy[k] * M[1]) + M[2];
      float y = (cx[k] * M[3] + cy[k] * M[4]) + M[5];
      if (use_perspective) {
        const float w = (cx[k] * M[6] + cy[k] * M[7]) + M[8];
        x = x / w;
        y = y / w;
      }
      xmin = std::min(xmin, x);
      xmax = std::max(xmax, x);
      ymin = std::min(ymin, y);
      ymax = std::max(ymax, y);
    }
    res.boxes_warped[i] = {xmin, ymin, xmax, ymax};
    res.boxes_clipped[i] = {std::clamp(xmin, 0.0f, fw), std::clamp(ymin, 0.0f, fh), std::clamp(xmax, 0.0f, fw),
                            std::clamp(ymax, 0.0f, fh)};
    res.box1_scaled[i] = {b[0] * s, b[1] * s, b[2] * s, b[3] * s};
    res.keep[i] = box_candidate(res.box1_scaled[i], res.boxes_clipped[i], area_thr) ? 1 : 0;
    if (res.keep[i]) {
      res.out.boxes.push_back(res.boxes_clipped[i]);
      res.out.cls.push_back(labels.cls[i]);
    }
  }
  return res;
}

MosaicResult mosaic4(const std::array<const LoadedSample*, 4>& s, int64_t imgsz, int yc, int xc) {
  const int S = static_cast<int>(imgsz), S2 = 2 * S;
  MosaicResult res;
  res.img = cv::Mat(S2, S2, CV_8UC3);  // filled with 114 below, only where no image lands
  std::array<cv::Rect, 4> placed{};
  for (int i = 0; i < 4; ++i) {
    const cv::Mat& im = s[i]->img;
    const int h = im.rows, w = im.cols;
    int x1a, y1a, x2a, y2a, x1b, y1b, x2b, y2b;
    if (i == 0) {  // top left
      x1a = std::max(xc - w, 0), y1a = std::max(yc - h, 0), x2a = xc, y2a = yc;
      x1b = w - (x2a - x1a), y1b = h - (y2a - y1a), x2b = w, y2b = h;
    } else if (i == 1) {  // top right
      x1a = xc, y1a = std::max(yc - h, 0), x2a = std::min(xc + w, S2), y2a = yc;
      x1b = 0, y1b = h - (y2a - y1a), x2b = std::min(w, x2a - x1a), y2b = h;
    } else if (i == 2) {  // bottom left
      x1a = std::max(xc - w, 0), y1a = yc, x2a = xc, y2a = std::min(S2, yc + h);
      x1b = w - (x2a - x1a), y1b = 0, x2b = w, y2b = std::min(y2a - y1a, h);
    } else {  // bottom right
      x1a = xc, y1a = yc, x2a = std::min(xc + w, S2), y2a = std::min(S2, yc + h);
      x1b = 0, y1b = 0, x2b = std::min(w, x2a - x1a), y2b = std::min(y2a - y1a, h);
    }
    if (x2a > x1a && y2a > y1a) {
      placed[i] = cv::Rect(x1a, y1a, x2a - x1a, y2a - y1a);
      im(cv::Rect(x1b, y1b, x2b - x1b, y2b - y1b)).copyTo(res.img(placed[i]));
    }
    const float padw = static_cast<float>(x1a - x1b), padh = static_cast<float>(y1a - y1b);
    const float fw = static_cast<float>(w), fh = static_cast<float>(h);
    for (size_t k = 0; k < s[i]->xywhn.size(); ++k) {
      Box b = xywh2xyxy(s[i]->xywhn[k]);
      b = {b[0] * fw, b[1] * fh, b[2] * fw, b[3] * fh};
      res.boxes_padded.push_back({b[0] + padw, b[1] + padh, b[2] + padw, b[3] + padh});
      res.labels.cls.push_back(s[i]->cls[k]);
    }
  }
  // The fill: per row, the gaps between the (at most two, non-overlapping) tiles that cross it.
  for (int y = 0; y < S2; ++y) {
    std::array<std::pair<int, int>, 4> spans{};
    int n = 0;
    for (const auto& r : placed)
      if (!r.empty() && y >= r.y && y < r.y + r.height) spans[n++] = {r.x, r.x + r.width};
    std::sort(spans.begin(), spans.begin() + n);
    cv::Vec3b* row = res.img.ptr<cv::Vec3b>(y);
    int x = 0;
    for (int k = 0; k <= n; ++k) {
      const int end = k < n ? spans[k].first : S2;
      if (end > x) std::memset(row[0].val + 3 * x, 114, static_cast<size_t>(end - x) * 3);  // (114,114,114): one byte
      x = std::max(x, end);
      if (k < n) x = std::max(x, spans[k].second);
    }
  }
  const float lim = static_cast<float>(S2);
  std::vector<int64_t> cls;
  for (size_t k = 0; k < res.boxes_padded.size(); ++k) {
    const Box& b = res.boxes_padded[k];
    const Box c{std::clamp(b[0], 0.0f, lim), std::clamp(b[1], 0.0f, lim), std::clamp(b[2], 0.0f, lim),
                std::clamp(b[3], 0.0f, lim)};
    res.boxes_clipped.push_back(c);
    const bool good = (c[2] - c[0]) * (c[3] - c[1]) > 0.0f;
    res.keep.push_back(good ? 1 : 0);
    if (good) {
      res.labels.boxes.push_back(c);
      cls.push_back(res.labels.cls[k]);
    }
  }
  res.labels.cls = std::move(cls);
  return res;
}

void mixup(cv::Mat& img, Labels& labels, const cv::Mat& img2, const Labels& labels2, double r) {
  if (img.size() != img2.size() || img.type() != img2.type())
    throw std::runtime_error("mixup: images differ in size or type");
  const size_t n = img.total() * img.channels();
  cv::Mat out(img.size(), img.type());
  const uint8_t* a = img.isContinuous() ? img.ptr<uint8_t>() : nullptr;
  const uint8_t* b = img2.isContinuous() ? img2.ptr<uint8_t>() : nullptr;
  if (!a || !b) throw std::runtime_error("mixup: images must be continuous");
  uint8_t* o = out.ptr<uint8_t>();
  for (size_t i = 0; i < n; ++i) o[i] = static_cast<uint8_t>(a[i] * r + b[i] * (1.0 - r));
  img = out;
  labels.append(labels2);
}

// Fraction of box b's area that lies inside region q (both xyxy).
static float ioa(const Box& q, const Box& b) {
  const float iw = std::max(0.0f, std::min(q[2], b[2]) - std::max(q[0], b[0]));
  const float ih = std::max(0.0f, std::min(q[3], b[3]) - std::max(q[1], b[1]));
  return iw * ih / ((b[2] - b[0]) * (b[3] - b[1]) + 1e-7f);
}

void cutmix(cv::Mat& img, Labels& labels, const cv::Mat& img2, const Labels& labels2, std::array<int, 4> region,
            float thr) {
  if (img.size() != img2.size() || img.type() != img2.type())
    throw std::runtime_error("cutmix: images differ in size or type");
  const int x1 = std::clamp(region[0], 0, img.cols), y1 = std::clamp(region[1], 0, img.rows);
  const int x2 = std::clamp(region[2], 0, img.cols), y2 = std::clamp(region[3], 0, img.rows);
  if (x2 <= x1 || y2 <= y1) return;
  const Box q{static_cast<float>(x1), static_cast<float>(y1), static_cast<float>(x2), static_cast<float>(y2)};
  Labels out;
  for (size_t i = 0; i < labels.size(); ++i)
    if (ioa(q, labels.boxes[i]) < 1.0f - thr) {
      out.boxes.push_back(labels.boxes[i]);
      out.cls.push_back(labels.cls[i]);
    }
  for (size_t i = 0; i < labels2.size(); ++i)
    if (ioa(q, labels2.boxes[i]) >= thr) {
      const Box& b = labels2.boxes[i];
      out.boxes.push_back({std::clamp(b[0], q[0], q[2]), std::clamp(b[1], q[1], q[3]), std::clamp(b[2], q[0], q[2]),
                           std::clamp(b[3], q[1], q[3])});
      out.cls.push_back(labels2.cls[i]);
    }
  img = img.clone();  // may share pixels with a cached image
  img2(cv::Rect(x1, y1, x2 - x1, y2 - y1)).copyTo(img(cv::Rect(x1, y1, x2 - x1, y2 - y1)));
  labels = std::move(out);
}

void flip_ud(cv::Mat& img, std::vector<Box>& xywh) {
  cv::Mat out;
  cv::flip(img, out, 0);
  img = out;
  const float h = static_cast<float>(img.rows);
  for (auto& b : xywh) b[1] = h - b[1];
}

void flip_lr(cv::Mat& img, std::vector<Box>& xywh) {
  cv::Mat out;
  cv::flip(img, out, 1);
  img = out;
  const float w = static_cast<float>(img.cols);
  for (auto& b : xywh) b[0] = w - b[0];
}

std::vector<Box> normalize_xywh(const std::vector<Box>& xywh, int w, int h) {
  const float fw = static_cast<float>(w), fh = static_cast<float>(h);
  std::vector<Box> out;
  out.reserve(xywh.size());
  for (const auto& b : xywh) out.push_back({b[0] / fw, b[1] / fh, b[2] / fw, b[3] / fh});
  return out;
}

void hwc_bgr_to_chw_rgb(const cv::Mat& img, uint8_t* dst) {
  if (img.type() != CV_8UC3) throw std::runtime_error("hwc_bgr_to_chw_rgb: expected CV_8UC3");
  const int h = img.rows, w = img.cols;
  const size_t plane = static_cast<size_t>(h) * w;
  // cv::split (SIMD) straight into the three destination planes: B → plane 2, G → plane 1, R → plane 0.
  std::vector<cv::Mat> planes{cv::Mat(h, w, CV_8UC1, dst + 2 * plane), cv::Mat(h, w, CV_8UC1, dst + plane),
                              cv::Mat(h, w, CV_8UC1, dst)};
  cv::split(img, planes);
}

}  // namespace yolo11::data
