// engine::Predictor: letterbox → batched forward → NMS → boxes back to the original image; drawing; txt / json / video
// outputs. Sources are resolved in predict_source.cpp.
#include "yolo11/engine/predictor.h"

#include <spdlog/spdlog.h>
#include <torch/torch.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#include <stdexcept>
#ifdef YOLO11_HAS_VIDEOIO
#include <opencv2/videoio.hpp>
#include <opencv2/videoio/registry.hpp>
#endif

#include "yolo11/core/device.h"
#include "yolo11/data/dataset_info.h"
#include "yolo11/data/labels.h"
#include "yolo11/plot/text.h"
#include "yolo11/data/transforms.h"
#include "yolo11/engine/inference.h"
#include "yolo11/metrics/nms.h"
#include "yolo11/plot/chart.h"

namespace fs = std::filesystem;

namespace yolo11::engine {
namespace {

cv::Mat to_bgr(const cv::Mat& img) {
  if (img.empty()) throw std::runtime_error("Predictor::predict: empty image");
  if (img.depth() != CV_8U) throw std::runtime_error("Predictor::predict: images must be 8-bit (CV_8U)");
  if (img.channels() == 3) return img;
  cv::Mat out;
  if (img.channels() == 1) cv::cvtColor(img, out, cv::COLOR_GRAY2BGR);
  else if (img.channels() == 4) cv::cvtColor(img, out, cv::COLOR_BGRA2BGR);
  else throw std::runtime_error("Predictor::predict: images must have 1, 3 or 4 channels");
  return out;
}

bool is_video(const std::string& path) {
  std::string e = fs::path(path).extension().string();
  std::transform(e.begin(), e.end(), e.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  const auto& v = video_extensions();
  return std::find(v.begin(), v.end(), e) != v.end();
}

}  // namespace

struct Predictor::Impl {
  PredictOptions o;
  LoadedDetector det;
  torch::Device device{torch::kCPU};
  metrics::NmsOptions nms;
};

Predictor::Predictor(const std::string& weights, PredictOptions options, const std::string& model_yaml)
    : impl_(std::make_unique<Impl>()) {
  impl_->o = std::move(options);
  const PredictOptions& o = impl_->o;
  impl_->device = core::plan_device(o.device).device;  // core/device.h: the one device resolution
  impl_->det = load_detector(weights, model_yaml);
  auto& det = impl_->det;
  if (!o.data.empty()) {
    const auto info = data::load_dataset_yaml(o.data);
    if (info.nc != det.nc)
      throw std::runtime_error(weights + " predicts " + std::to_string(det.nc) + " classes but " + o.data + " has " +
                               std::to_string(info.nc) + "; pass the dataset the weights were trained on (or no data=)");
    det.names = info.names;
  }
  det.model->fuse();
  det.model->to(impl_->device);
  impl_->nms.conf = o.conf;
  impl_->nms.iou = o.iou;
  impl_->nms.max_det = o.max_det;
}

Predictor::~Predictor() = default;
Predictor::Predictor(Predictor&&) noexcept = default;
Predictor& Predictor::operator=(Predictor&&) noexcept = default;

const std::vector<std::string>& Predictor::names() const { return impl_->det.names; }
const std::string& Predictor::weights_report() const { return impl_->det.report; }
const PredictOptions& Predictor::options() const { return impl_->o; }

std::vector<Prediction> Predictor::predict(const std::vector<cv::Mat>& images) {
  const int sz = static_cast<int>(impl_->o.imgsz);
  std::vector<Prediction> out(images.size());
  std::vector<cv::Mat> lbs(images.size());
  std::vector<data::LetterboxParams> lps(images.size());
  for (size_t i = 0; i < images.size(); ++i) {
    const cv::Mat img = to_bgr(images[i]);
    out[i].height = img.rows;
    out[i].width = img.cols;
    // Predict-path letterbox: scale up or down to imgsz, minimal padding to a multiple of 32.
    lps[i] = data::letterbox_params(img.rows, img.cols, sz, sz, /*scaleup=*/true, /*auto_pad=*/true, 32);
    lbs[i] = data::letterbox_image(img, lps[i]);
    out[i].input_h = lbs[i].rows;
    out[i].input_w = lbs[i].cols;
  }
  torch::NoGradGuard ng;
  const auto batch = static_cast<size_t>(std::max<int64_t>(1, impl_->o.batch));
  for (size_t b = 0; b < images.size();) {
    size_t e = b + 1;  // one forward pass: consecutive images of the same letterboxed shape, at most `batch`
    while (e < images.size() && e - b < batch && lbs[e].size() == lbs[b].size()) ++e;
    const int64_t n = static_cast<int64_t>(e - b);
    auto x = torch::empty({n, 3, lbs[b].rows, lbs[b].cols}, torch::kUInt8);
    const int64_t plane = 3LL * lbs[b].rows * lbs[b].cols;
    for (size_t i = b; i < e; ++i) data::hwc_bgr_to_chw_rgb(lbs[i], x.data_ptr<uint8_t>() + plane * static_cast<int64_t>(i - b));
    const auto t0 = std::chrono::steady_clock::now();
    const auto pred = impl_->det.model->forward(to_input(x, impl_->device, /*channels_last=*/false));
    auto dets = metrics::non_max_suppression(pred, impl_->nms);
    for (auto& d : dets) d = d.to(torch::kCPU).contiguous();
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() / n;
    for (size_t i = b; i < e; ++i) {
      const auto& lp = lps[i];
      Prediction& p = out[i];
      p.ms = ms;
      const auto d = dets[i - b].accessor<float, 2>();
      const float w = static_cast<float>(p.width), h = static_cast<float>(p.height);
      auto unpad = [&](float v, int pad, float hi) {  // letterboxed pixels → original pixels, clipped
        return std::clamp(static_cast<float>((v - pad) / lp.ratio), 0.f, hi);
      };
      for (int64_t k = 0; k < d.size(0); ++k)
        p.boxes.push_back(Box{unpad(d[k][0], lp.left, w), unpad(d[k][1], lp.top, h), unpad(d[k][2], lp.left, w),
                              unpad(d[k][3], lp.top, h), d[k][4], static_cast<int64_t>(d[k][5])});
    }
    b = e;
  }
  return out;
}

cv::Mat Predictor::annotate(const cv::Mat& image, const Prediction& p) const {
  cv::Mat img = to_bgr(image).clone();
  const auto& names = impl_->det.names;
  const int lw = static_cast<int>(impl_->o.line_width);
  for (const Box& b : p.boxes) {
    const std::string name = plot::display_name(
        b.cls < static_cast<int64_t>(names.size()) ? names[static_cast<size_t>(b.cls)] : std::string(), b.cls);
    plot::draw_box(img, cv::Rect2f(b.x1, b.y1, b.x2 - b.x1, b.y2 - b.y1), fmt::format("{} {:.2f}", name, b.conf),
                   plot::class_color(b.cls), lw, 0.5, cv::Rect(0, 0, img.cols, img.rows));
  }
  return img;
}

std::string Predictor::to_txt(const Prediction& p, bool save_conf) {
  std::string s;
  const double w = p.width, h = p.height;
  for (const Box& b : p.boxes) {
    s += fmt::format("{} {:.6g} {:.6g} {:.6g} {:.6g}", b.cls, (b.x1 + b.x2) / 2 / w, (b.y1 + b.y2) / 2 / h,
                     (b.x2 - b.x1) / w, (b.y2 - b.y1) / h);
    if (save_conf) s += fmt::format(" {:.6g}", b.conf);
    s += "\n";
  }
  return s;
}

namespace {

/// Writes one prediction's outputs; returns its log line.
struct Sink {
  const Predictor& pr;
  std::string save_dir;
  nlohmann::json json = nlohmann::json::array();
  PredictSummary& sum;

  void labels(const Prediction& p, const std::string& stem) {
    if (!pr.options().save_txt) return;
    const std::string file = save_dir + "/labels/" + stem + ".txt";
    std::ofstream f(file);
    f << Predictor::to_txt(p, pr.options().save_conf);
    if (!f) throw std::runtime_error("cannot write " + file);
  }
  void record(const Prediction& p) {
    sum.detections += static_cast<int64_t>(p.boxes.size());
    if (pr.options().save_json) {
      nlohmann::json boxes = nlohmann::json::array();
      for (const Box& b : p.boxes) {
        const auto& names = pr.names();
        boxes.push_back({{"cls", b.cls},
                         {"name", b.cls < static_cast<int64_t>(names.size()) ? names[static_cast<size_t>(b.cls)] : ""},
                         {"conf", b.conf},
                         {"xyxy", {b.x1, b.y1, b.x2, b.y2}}});
      }
      json.push_back({{"source", p.path}, {"frame", p.frame}, {"width", p.width}, {"height", p.height},
                      {"boxes", boxes}});
    }
    std::map<std::string, int> counts;
    for (const Box& b : p.boxes)
      ++counts[b.cls < static_cast<int64_t>(pr.names().size()) ? pr.names()[static_cast<size_t>(b.cls)] : std::to_string(b.cls)];
    std::string what;
    for (const auto& [n, k] : counts) what += fmt::format("{}{} {}", what.empty() ? "" : ", ", k, n);
    spdlog::info("{}{}: {}x{} {}, {:.1f}ms", p.path, p.frame ? fmt::format(" frame {}", p.frame) : std::string(),
                 p.input_h, p.input_w, what.empty() ? "(no detections)" : what, p.ms);
  }
};

void run_images(Predictor& pr, Sink& sink, const std::vector<std::string>& paths) {
  std::vector<cv::Mat> imgs;
  std::vector<std::string> names;
  auto flush = [&] {
    auto preds = pr.predict(imgs);
    for (size_t i = 0; i < preds.size(); ++i) {
      preds[i].path = names[i];
      sink.record(preds[i]);
      sink.labels(preds[i], fs::path(names[i]).stem().string());
      if (pr.options().save) {
        const std::string out = sink.save_dir + "/" + fs::path(names[i]).filename().string();
        if (!cv::imwrite(out, pr.annotate(imgs[i], preds[i]))) throw std::runtime_error("cannot write " + out);
        sink.sum.outputs.push_back(out);
      }
      ++sink.sum.images;
    }
    imgs.clear();
    names.clear();
  };
  for (const auto& path : paths) {
    try {
      imgs.push_back(data::read_image(path));
      names.push_back(path);
    } catch (const std::exception& e) {
      spdlog::warn("skipping {}: {}", path, e.what());
    }
    if (static_cast<int64_t>(imgs.size()) >= pr.options().batch) flush();
  }
  if (!imgs.empty()) flush();
}

#ifdef YOLO11_HAS_VIDEOIO
/// Every vid_stride-th frame of `cap` predicted (in batches), drawn into <save_dir>/<stem>.avi and labelled
/// labels/<stem>_<frame>.txt (frame 1-based).
void run_capture(Predictor& pr, Sink& sink, cv::VideoCapture& cap, const std::string& label, const std::string& stem) {
  double fps = cap.get(cv::CAP_PROP_FPS);
  if (!(fps > 0 && fps < 1000)) fps = 30;
  fps /= static_cast<double>(pr.options().vid_stride);
  cv::VideoWriter writer;
  const std::string out = sink.save_dir + "/" + stem + ".avi";
  std::vector<cv::Mat> frames;
  std::vector<int64_t> numbers;
  int64_t decoded = 0, written = 0;
  auto flush = [&] {
    auto preds = pr.predict(frames);
    for (size_t i = 0; i < preds.size(); ++i) {
      preds[i].path = label;
      preds[i].frame = numbers[i];
      sink.record(preds[i]);
      sink.labels(preds[i], stem + "_" + std::to_string(numbers[i]));
      if (pr.options().save) {
        if (!writer.isOpened()) {
          writer.open(out, cv::VideoWriter::fourcc('M', 'J', 'P', 'G'), fps, frames[i].size());
          if (!writer.isOpened()) throw std::runtime_error("cannot open " + out + " for writing (MJPG .avi)");
        }
        writer.write(pr.annotate(frames[i], preds[i]));
        ++written;
      }
      ++sink.sum.frames;
    }
    frames.clear();
    numbers.clear();
  };
  cv::Mat f;
  while (cap.read(f) && !f.empty()) {
    ++decoded;
    if ((decoded - 1) % pr.options().vid_stride != 0) continue;
    frames.push_back(f.clone());
    numbers.push_back(decoded);
    if (static_cast<int64_t>(frames.size()) >= pr.options().batch) flush();
  }
  if (!frames.empty()) flush();
  if (decoded == 0) throw std::runtime_error(label + ": 0 frames decoded (not a video OpenCV can read, or empty)");
  if (writer.isOpened()) {
    writer.release();
    sink.sum.outputs.push_back(out);
  }
  spdlog::info("{}: {} frames decoded, {} predicted{}", label, decoded, (decoded + pr.options().vid_stride - 1) / pr.options().vid_stride,
               written ? fmt::format(", {} written to {}", written, out) : std::string());
}
#endif

#ifndef YOLO11_HAS_VIDEOIO
[[noreturn]] void no_videoio(const std::string& what) {
  throw std::runtime_error(what + ": this build has no OpenCV videoio module (install libopencv-videoio-dev and "
                           "reconfigure) so video files and webcams cannot be read");
}
#endif

}  // namespace

PredictSummary Predictor::run(const std::string& source, const std::string& save_dir) {
  const Source src = resolve_source(source);
  PredictSummary sum;
  sum.save_dir = save_dir;
  fs::create_directories(save_dir);
  if (impl_->o.save_txt) fs::create_directories(save_dir + "/labels");
  Sink sink{*this, save_dir, nlohmann::json::array(), sum};
  if (src.kind == Source::Kind::Webcam) {
#ifdef YOLO11_HAS_VIDEOIO
    cv::VideoCapture cap(src.webcam);
    if (!cap.isOpened())
      throw std::runtime_error("--source " + source + ": webcam " + std::to_string(src.webcam) +
                               " cannot be opened (no camera /dev/video" + std::to_string(src.webcam) +
                               " here, or it is busy)");
    ++sum.videos;
    run_capture(*this, sink, cap, "webcam:" + std::to_string(src.webcam), "webcam" + std::to_string(src.webcam));
#else
    no_videoio("--source " + source);
#endif
  } else {
    std::vector<std::string> images;
    for (const auto& path : src.files) {
      if (!is_video(path)) {
        images.push_back(path);
        continue;
      }
      run_images(*this, sink, images);
      images.clear();
#ifdef YOLO11_HAS_VIDEOIO
      // A file goes to FFmpeg alone when OpenCV has it: CAP_ANY would also hand the path to GStreamer and gPhoto2
      // (which probes USB cameras for a matching name), slow and noisy on a broken file.
      cv::VideoCapture cap(path, cv::videoio_registry::hasBackend(cv::CAP_FFMPEG) ? cv::CAP_FFMPEG : cv::CAP_ANY);
      if (!cap.isOpened()) throw std::runtime_error(path + ": cannot be opened as a video");
      ++sum.videos;
      run_capture(*this, sink, cap, path, fs::path(path).stem().string());
#else
      no_videoio(path);
#endif
    }
    run_images(*this, sink, images);
  }
  if (sum.images + sum.frames == 0)
    throw std::runtime_error("--source " + source + ": nothing could be read (every image was skipped)");
  if (impl_->o.save_json) {
    const std::string file = save_dir + "/predictions.json";
    std::ofstream f(file);
    f << sink.json.dump(1) << "\n";
    if (!f) throw std::runtime_error("cannot write " + file);
  }
  return sum;
}

}  // namespace yolo11::engine
