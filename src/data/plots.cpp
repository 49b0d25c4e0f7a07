// Batch and label pictures (see plots.h).
#include "yolo11/data/plots.h"

#include <torch/torch.h>

#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>

#include "yolo11/data/dataset.h"
#include "yolo11/data/text.h"
#include "yolo11/io/file.h"

namespace yolo11::data {

// Ultralytics' 20-colour palette (hex), used as BGR.
static cv::Scalar color(int64_t i) {
  static const char* hex[] = {"FF3838", "FF9D97", "FF701F", "FFB21D", "CFD231", "48F90A", "92CC17",
                              "3DDB86", "1A9334", "00D4BB", "2C99A8", "00C2FF", "344593", "6473FF",
                              "0018EC", "8438FF", "520085", "CB38FF", "FF95C8", "FF37C7"};
  const unsigned v = static_cast<unsigned>(std::stoul(hex[static_cast<size_t>(i) % 20], nullptr, 16));
  return cv::Scalar(v & 0xFF, (v >> 8) & 0xFF, (v >> 16) & 0xFF);
}

static std::string name_of(const std::vector<std::string>& names, int64_t c) {
  return display_name(c >= 0 && c < static_cast<int64_t>(names.size()) ? names[c] : std::string(), c);
}

static void draw_box(cv::Mat& img, float x1, float y1, float x2, float y2, const cv::Scalar& col,
                     const std::string& label) {
  cv::rectangle(img, cv::Point(static_cast<int>(x1), static_cast<int>(y1)),
                cv::Point(static_cast<int>(x2), static_cast<int>(y2)), col, 1, cv::LINE_AA);
  if (label.empty()) return;
  int base = 0;
  const cv::Size ts = text_size(label, 0.35, 1, &base);  // UTF-8 names through the TrueType font (text.h)
  const int tx = static_cast<int>(x1), ty = std::max(static_cast<int>(y1), ts.height + 2);
  cv::rectangle(img, cv::Point(tx, ty - ts.height - 2), cv::Point(tx + ts.width, ty), col, cv::FILLED);
  put_text(img, label, cv::Point(tx, ty - 1), 0.35, cv::Scalar(255, 255, 255), 1);
}

static void write_jpg(const std::string& path, const cv::Mat& img) {
  std::vector<uchar> buf;
  if (!cv::imencode(".jpg", img, buf, {cv::IMWRITE_JPEG_QUALITY, 90}))
    throw std::runtime_error("cannot encode " + path + " as JPEG");
  io::write_file_atomic(path, std::string_view(reinterpret_cast<const char*>(buf.data()), buf.size()));
}

void plot_images(const Batch& b, const std::vector<std::string>& names, const std::string& path,
                 const std::vector<at::Tensor>* preds) {
  const int64_t B = std::min<int64_t>(b.size(), 16);
  if (B == 0) throw std::runtime_error("plot_images: empty batch for " + path);
  const int64_t H = b.images.size(2), W = b.images.size(3);
  const int ns = static_cast<int>(std::ceil(std::sqrt(static_cast<double>(B))));
  const double scale = std::min(1.0, 1920.0 / (ns * std::max(H, W)));
  const int h = static_cast<int>(std::ceil(H * scale)), w = static_cast<int>(std::ceil(W * scale));
  cv::Mat canvas(ns * h, ns * w, CV_8UC3, cv::Scalar(255, 255, 255));
  const auto imgs = (b.images.is_floating_point() ? b.images.to(torch::kCPU).mul(255.0).round_() : b.images.to(torch::kCPU))
                        .to(torch::kUInt8)
                        .contiguous();  // float [0, 1] input (LoaderOptions::float_images) or uint8
  const auto bb = b.bboxes.to(torch::kCPU).to(torch::kFloat).contiguous();
  const auto bi = b.batch_idx.to(torch::kCPU).to(torch::kLong).contiguous();
  const auto cl = b.cls.to(torch::kCPU).to(torch::kLong).contiguous();
  for (int64_t k = 0; k < B; ++k) {
    const int ox = static_cast<int>(k % ns) * w, oy = static_cast<int>(k / ns) * h;
    // CHW RGB → HWC BGR
    auto hwc = imgs[k].flip({0}).permute({1, 2, 0}).contiguous();
    cv::Mat im(static_cast<int>(H), static_cast<int>(W), CV_8UC3, hwc.data_ptr<uint8_t>());
    cv::Mat tile = canvas(cv::Rect(ox, oy, w, h));
    if (scale != 1.0) {
      cv::resize(im, tile, cv::Size(w, h), 0, 0, cv::INTER_AREA);
    } else {
      im.copyTo(tile);
    }
    cv::rectangle(canvas, cv::Rect(ox, oy, w, h), cv::Scalar(255, 255, 255), 2);
    if (k < static_cast<int64_t>(b.im_files.size())) {
      std::string fn = b.im_files[k].substr(b.im_files[k].rfind('/') + 1).substr(0, 40);
      cv::putText(canvas, fn, cv::Point(ox + 5, oy + 12), cv::FONT_HERSHEY_SIMPLEX, 0.35, cv::Scalar(220, 220, 220),
                  1, cv::LINE_AA);
    }
    if (preds) {
      if (k >= static_cast<int64_t>(preds->size())) continue;
      const auto p = (*preds)[k].to(torch::kCPU).to(torch::kFloat).contiguous();
      const float* pp = p.numel() ? p.data_ptr<float>() : nullptr;
      for (int64_t j = 0; j < p.size(0); ++j) {
        const float* r = pp + 6 * j;
        if (r[4] < 0.25f) continue;
        const int64_t c = static_cast<int64_t>(r[5]);
        char conf[16];
        std::snprintf(conf, sizeof conf, " %.2f", r[4]);
        draw_box(canvas, ox + r[0] * static_cast<float>(scale), oy + r[1] * static_cast<float>(scale),
                 ox + r[2] * static_cast<float>(scale), oy + r[3] * static_cast<float>(scale), color(c),
                 name_of(names, c) + conf);
      }
    } else {
      const int64_t* bip = bi.data_ptr<int64_t>();
      const int64_t* clp = cl.data_ptr<int64_t>();
      const float* bbp = bb.data_ptr<float>();
      for (int64_t j = 0; j < bb.size(0); ++j) {
        if (bip[j] != k) continue;
        const float* r = bbp + 4 * j;
        const float cx = r[0] * W, cy = r[1] * H, bw = r[2] * W, bh = r[3] * H;
        const auto s = static_cast<float>(scale);
        const int64_t c = clp[j];
        draw_box(canvas, ox + (cx - bw / 2) * s, oy + (cy - bh / 2) * s, ox + (cx + bw / 2) * s,
                 oy + (cy + bh / 2) * s, color(c), name_of(names, c));
      }
    }
  }
  write_jpg(path, canvas);
}

void plot_labels(const Dataset& ds, const std::string& path) {
  const int64_t nc = std::max<int64_t>(1, ds.info().nc);
  std::vector<int64_t> counts(static_cast<size_t>(nc), 0);
  const int P = 400;  // panel size
  cv::Mat canvas(P + 60, 3 * P + 40, CV_8UC3, cv::Scalar(255, 255, 255));
  cv::Mat centres(P, P, CV_32F, cv::Scalar(0)), sizes(P, P, CV_32F, cv::Scalar(0));
  for (size_t i = 0; i < ds.size(); ++i) {
    const auto& l = ds.labels(i);
    for (size_t j = 0; j < l.cls.size(); ++j) {
      if (l.cls[j] < nc) ++counts[l.cls[j]];
      const auto& b = l.xywhn[j];
      const int cx = std::clamp(static_cast<int>(b[0] * (P - 1)), 0, P - 1);
      const int cy = std::clamp(static_cast<int>(b[1] * (P - 1)), 0, P - 1);
      const int sw = std::clamp(static_cast<int>(b[2] * (P - 1)), 0, P - 1);
      const int sh = std::clamp(static_cast<int>(b[3] * (P - 1)), 0, P - 1);
      centres.at<float>(cy, cx) += 1;
      sizes.at<float>(P - 1 - sh, sw) += 1;  // y axis up
    }
  }
  // (1) histogram
  const int64_t mx = std::max<int64_t>(1, *std::max_element(counts.begin(), counts.end()));
  const double bw = static_cast<double>(P) / nc;
  for (int64_t c = 0; c < nc; ++c) {
    const int hgt = static_cast<int>(static_cast<double>(counts[c]) / mx * (P - 20));
    cv::rectangle(canvas, cv::Point(10 + static_cast<int>(c * bw), 10 + P - hgt),
                  cv::Point(10 + static_cast<int>((c + 1) * bw) - 1, 10 + P), color(c), cv::FILLED);
  }
  cv::putText(canvas, "instances per class (max " + std::to_string(mx) + ")", cv::Point(10, P + 35),
              cv::FONT_HERSHEY_SIMPLEX, 0.5, cv::Scalar(0, 0, 0), 1, cv::LINE_AA);
  // (2), (3) density scatters (log-scaled, blurred)
  auto panel = [&](cv::Mat& dens, int x0, const std::string& title) {
    cv::GaussianBlur(dens, dens, cv::Size(5, 5), 0);
    double dmax = 0;
    cv::minMaxLoc(dens, nullptr, &dmax);
    cv::Mat norm;
    cv::log(dens + 1, norm);
    norm.convertTo(norm, CV_8U, 255.0 / std::max(1e-6, std::log(dmax + 1)));
    cv::Mat col;
    cv::applyColorMap(255 - norm, col, cv::COLORMAP_BONE);
    col.copyTo(canvas(cv::Rect(x0, 10, P, P)));
    cv::rectangle(canvas, cv::Rect(x0, 10, P, P), cv::Scalar(0, 0, 0), 1);
    cv::putText(canvas, title, cv::Point(x0, P + 35), cv::FONT_HERSHEY_SIMPLEX, 0.5, cv::Scalar(0, 0, 0), 1,
                cv::LINE_AA);
  };
  panel(centres, P + 20, "box centres x, y (normalized)");
  panel(sizes, 2 * P + 30, "box sizes w, h (normalized)");
  write_jpg(path, canvas);
}

}  // namespace yolo11::data
