// Batch and label pictures (see data_plots.h).
#include "yolo11/plot/data_plots.h"

#include <torch/torch.h>

#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>

#include "yolo11/data/dataset.h"
#include "yolo11/plot/text.h"
#include "yolo11/io/file.h"
#include "yolo11/plot/chart.h"

namespace yolo11::plot {

static std::string name_of(const std::vector<std::string>& names, int64_t c) {
  return display_name(c >= 0 && c < static_cast<int64_t>(names.size()) ? names[c] : std::string(), c);
}

// A box and its caption, kept inside the box's mosaic tile.
static void draw_box(cv::Mat& img, const cv::Rect& tile, float x1, float y1, float x2, float y2, const cv::Scalar& col,
                     const std::string& label) {
  plot::draw_box(img, cv::Rect2f(x1, y1, x2 - x1, y2 - y1), label, col, 1, 0.35, tile);
}

static void write_jpg(const std::string& path, const cv::Mat& img) {
  std::vector<uchar> buf;
  if (!cv::imencode(".jpg", img, buf, {cv::IMWRITE_JPEG_QUALITY, 90}))
    throw std::runtime_error("cannot encode " + path + " as JPEG");
  io::write_file_atomic(path, std::string_view(reinterpret_cast<const char*>(buf.data()), buf.size()));
}

void plot_images(const data::Batch& b, const std::vector<std::string>& names, const std::string& path,
                 const std::vector<at::Tensor>* preds) {
  const int64_t B = std::min<int64_t>(b.size(), 16);
  if (B == 0) throw std::runtime_error("plot_images: empty batch for " + path);
  const int64_t H = b.images.size(2), W = b.images.size(3);
  const int ns = static_cast<int>(std::ceil(std::sqrt(static_cast<double>(B))));
  const double scale = std::min(1.0, 1920.0 / (ns * std::max(H, W)));
  const int h = static_cast<int>(std::ceil(H * scale)), w = static_cast<int>(std::ceil(W * scale));
  cv::Mat canvas(ns * h, ns * w, CV_8UC3, cv::Scalar(255, 255, 255));
  const auto imgs =
      (b.images.is_floating_point() ? b.images.to(torch::kCPU).mul(255.0).round_() : b.images.to(torch::kCPU))
          .to(torch::kUInt8)
          .contiguous();  // float [0, 1] input (data::InputFormat::float_channels_last) or uint8
  const auto bb = b.bboxes.to(torch::kCPU).to(torch::kFloat).contiguous();
  const auto bi = b.batch_idx.to(torch::kCPU).to(torch::kLong).contiguous();
  const auto cl = b.cls.to(torch::kCPU).to(torch::kLong).contiguous();
  for (int64_t k = 0; k < B; ++k) {
    const int ox = static_cast<int>(k % ns) * w, oy = static_cast<int>(k / ns) * h;
    // CHW RGB → HWC BGR
    auto hwc = imgs[k].flip({0}).permute({1, 2, 0}).contiguous();
    cv::Mat im(static_cast<int>(H), static_cast<int>(W), CV_8UC3, hwc.data_ptr<uint8_t>());
    const cv::Rect tile_rect(ox, oy, w, h);
    cv::Mat tile = canvas(tile_rect);
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
        draw_box(canvas, tile_rect, ox + r[0] * static_cast<float>(scale), oy + r[1] * static_cast<float>(scale),
                 ox + r[2] * static_cast<float>(scale), oy + r[3] * static_cast<float>(scale), class_color(c),
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
        draw_box(canvas, tile_rect, ox + (cx - bw / 2) * s, oy + (cy - bh / 2) * s, ox + (cx + bw / 2) * s,
                 oy + (cy + bh / 2) * s, class_color(c), name_of(names, c));
      }
    }
  }
  write_jpg(path, canvas);
}

void plot_labels(const data::Dataset& ds, const std::string& path) {
  const int64_t nc = std::max<int64_t>(1, ds.info().nc);
  std::vector<double> counts(static_cast<size_t>(nc), 0.0);
  const int D = 200;  // density grid cells a side
  cv::Mat centres(D, D, CV_32F, cv::Scalar(0)), sizes(D, D, CV_32F, cv::Scalar(0));
  for (size_t i = 0; i < ds.size(); ++i) {
    const auto& l = ds.labels(i);
    for (size_t j = 0; j < l.cls.size(); ++j) {
      if (l.cls[j] >= 0 && l.cls[j] < nc) ++counts[static_cast<size_t>(l.cls[j])];
      const auto& b = l.xywhn[j];
      auto bin = [&](double v) { return std::clamp(static_cast<int>(v * D), 0, D - 1); };
      centres.at<float>(D - 1 - bin(b[1]), bin(b[0])) += 1;  // row 0 is the top: y = 1 at the top of the panel
      sizes.at<float>(D - 1 - bin(b[3]), bin(b[2])) += 1;
    }
  }
  // Top: instances per class, one bar per class, named under it. Bottom: box centres and box sizes as densities.
  const int W = 1400, top_h = 520, bottom_h = 620;
  cv::Mat canvas(top_h + bottom_h, W, CV_8UC3, cv::Scalar(255, 255, 255));
  plot::ChartOptions bars;
  bars.title = "instances per class";
  bars.ylabel = "instances";
  bars.font_scale = 0.45;
  bars.grid = true;
  for (int64_t c = 0; c < nc; ++c) bars.xcategories.push_back(name_of(ds.info().names, c));
  std::vector<cv::Scalar> colors;
  for (int64_t c = 0; c < nc; ++c) colors.push_back(class_color(c));
  plot::draw_bars(canvas, cv::Rect(0, 0, W, top_h), counts, colors, bars);
  auto panel = [&](cv::Mat& dens, cv::Rect cell, const std::string& title, const std::string& xl,
                   const std::string& yl) {
    plot::ChartOptions o;
    o.title = title, o.xlabel = xl, o.ylabel = yl;
    o.xlim = std::array<double, 2>{0.0, 1.0};
    o.ylim = std::array<double, 2>{0.0, 1.0};
    o.font_scale = 0.45;
    const plot::Axes ax = plot::draw_chart(canvas, cell, {}, o);
    // log-scaled, blurred density (white: none, dark blue: most) inside the frame
    cv::GaussianBlur(dens, dens, cv::Size(3, 3), 0);
    double dmax = 0;
    cv::minMaxLoc(dens, nullptr, &dmax);
    cv::Mat norm;
    cv::log(dens + 1, norm);
    norm /= std::max(1e-6, std::log(dmax + 1));
    const cv::Rect inner(ax.area.x + 1, ax.area.y + 1, ax.area.width - 2, ax.area.height - 2);
    cv::Mat big;
    cv::resize(norm, big, inner.size(), 0, 0, cv::INTER_NEAREST);
    cv::Mat col(inner.size(), CV_8UC3);
    for (int y = 0; y < big.rows; ++y)
      for (int x = 0; x < big.cols; ++x) {
        const float v = big.at<float>(y, x);
        const cv::Scalar s = v > 0 ? plot::blues(0.15 + 0.85 * v) : cv::Scalar(255, 255, 255);
        col.at<cv::Vec3b>(y, x) = cv::Vec3b(cv::saturate_cast<uchar>(s[0]), cv::saturate_cast<uchar>(s[1]),
                                            cv::saturate_cast<uchar>(s[2]));
      }
    col.copyTo(canvas(inner));
  };
  const int side = std::min(W / 2, bottom_h);
  panel(centres, cv::Rect((W / 2 - side) / 2, top_h, side, bottom_h), "box centres (normalized)", "x", "y");
  panel(sizes, cv::Rect(W / 2 + (W / 2 - side) / 2, top_h, side, bottom_h), "box sizes (normalized)", "width",
        "height");
  write_jpg(path, canvas);
}

}  // namespace yolo11::plot
