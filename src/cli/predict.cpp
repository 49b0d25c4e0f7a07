// yolo11 predict / yolo11-predict: detects objects in an image or a folder of images; writes annotated copies and, with
// save_txt=true, Ultralytics-style labels (class cx cy w h [conf], normalized to the original image).
//   yolo11-predict --weights best.safetensors --source datasets/coco8/images/val conf=0.25 save_txt=true
#include "yolo11/cli/cli.h"

#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#include <thread>

#include "yolo11/config/train_config.h"
#include "yolo11/data/dataset_info.h"
#include "yolo11/data/labels.h"
#include "yolo11/data/transforms.h"
#include "yolo11/engine/inference.h"
#include "yolo11/io/run_dir.h"
#include "yolo11/metrics/nms.h"

namespace fs = std::filesystem;

namespace {

struct PredictArgs {
  int64_t imgsz = 640, max_det = 300, line_width = 2;
  double conf = 0.25, iou = 0.7;
  bool save_txt = false, save_conf = false, exist_ok = false;
  std::string device = "cpu", project = "runs/predict", name = "predict", data;
};

bool parse_bool(const std::string& k, const std::string& v) {
  if (v == "true" || v == "True" || v == "1") return true;
  if (v == "false" || v == "False" || v == "0") return false;
  throw std::runtime_error("command line: " + k + "=" + v + " is not a boolean (true/false)");
}

PredictArgs parse_args(const std::vector<std::string>& kv) {
  PredictArgs a;
  for (const auto& s : kv) {
    const auto eq = s.find('=');
    if (eq == std::string::npos) throw std::runtime_error("command line: '" + s + "' is not key=value");
    const std::string k = s.substr(0, eq), v = s.substr(eq + 1);
    try {
      if (k == "imgsz") a.imgsz = std::stoll(v);
      else if (k == "max_det") a.max_det = std::stoll(v);
      else if (k == "line_width") a.line_width = std::stoll(v);
      else if (k == "conf") a.conf = std::stod(v);
      else if (k == "iou") a.iou = std::stod(v);
      else if (k == "save_txt") a.save_txt = parse_bool(k, v);
      else if (k == "save_conf") a.save_conf = parse_bool(k, v);
      else if (k == "exist_ok") a.exist_ok = parse_bool(k, v);
      else if (k == "device") a.device = v;
      else if (k == "project") a.project = v;
      else if (k == "name") a.name = v;
      else if (k == "data") a.data = v;
      else
        throw std::runtime_error("command line: unknown key '" + k +
                                 "' (predict keys: imgsz conf iou max_det save_txt save_conf line_width device project "
                                 "name exist_ok data)");
    } catch (const std::invalid_argument&) {
      throw std::runtime_error("command line: " + k + "=" + v + " is not a number");
    }
  }
  if (a.imgsz < 32 || a.imgsz % 32 != 0) throw std::runtime_error("command line: imgsz must be a positive multiple of 32");
  if (!(a.conf >= 0 && a.conf <= 1)) throw std::runtime_error("command line: conf=" + std::to_string(a.conf) + " must be in [0, 1]");
  if (!(a.iou > 0 && a.iou <= 1)) throw std::runtime_error("command line: iou=" + std::to_string(a.iou) + " must be in (0, 1]");
  if (a.max_det < 1) throw std::runtime_error("command line: max_det must be >= 1");
  if (a.line_width < 1) throw std::runtime_error("command line: line_width must be >= 1");
  return a;
}

std::vector<std::string> list_images(const std::string& source) {
  static const std::vector<std::string> exts = {".jpg", ".jpeg", ".png", ".bmp", ".tif", ".tiff", ".webp"};
  auto is_image = [&](const fs::path& p) {
    std::string e = p.extension().string();
    std::transform(e.begin(), e.end(), e.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return std::find(exts.begin(), exts.end(), e) != exts.end();
  };
  std::vector<std::string> out;
  if (!fs::exists(source)) throw std::runtime_error("--source " + source + " does not exist");
  if (fs::is_directory(source)) {
    for (const auto& e : fs::directory_iterator(source))
      if (e.is_regular_file() && is_image(e.path())) out.push_back(e.path().string());
    std::sort(out.begin(), out.end());
  } else if (fs::is_regular_file(source)) {
    out.push_back(source);
  }
  if (out.empty()) throw std::runtime_error("--source " + source + ": no images found (give an image file or a folder of images)");
  return out;
}

cv::Scalar class_color(int64_t c) {
  cv::Mat hsv(1, 1, CV_8UC3, cv::Scalar(static_cast<double>((c * 37) % 180), 200, 255)), bgr;
  cv::cvtColor(hsv, bgr, cv::COLOR_HSV2BGR);
  const auto v = bgr.at<cv::Vec3b>(0, 0);
  return cv::Scalar(v[0], v[1], v[2]);
}

}  // namespace

namespace yolo11::cli {

int predict(int argc, char** argv) {
  CLI::App app{"yolo11-predict: run a trained YOLO11 on images; annotated images (+ txt labels) in runs/predict/"};
  std::string weights, source;
  std::vector<std::string> overrides;
  app.add_option("--weights", weights, "weights (.safetensors, Ultralytics state_dict keys)")->required();
  app.add_option("--source", source, "an image or a folder of images")->required();
  app.add_option("overrides", overrides, "key=value: imgsz conf iou max_det save_txt save_conf line_width device project name data");
  CLI11_PARSE(app, argc, argv);
  try {
    const PredictArgs a = parse_args(overrides);
    torch::set_num_threads(static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
    const std::vector<std::string> images = list_images(source);  // before the weights: fail fast on a bad path
    auto det = yolo11::engine::load_detector(weights);
    if (!a.data.empty()) {
      const auto info = yolo11::data::load_dataset_yaml(a.data);
      if (info.nc != det.nc)
        throw std::runtime_error(weights + " predicts " + std::to_string(det.nc) + " classes but " + a.data + " has " +
                                 std::to_string(info.nc) + "; pass the dataset the weights were trained on (or no data=)");
      det.names = info.names;
    }
    spdlog::info("{}", det.report);
    const torch::Device device = yolo11::engine::select_device(a.device);
    det.model->fuse();
    det.model->to(device);
    const std::string save_dir = yolo11::io::make_run_dir(a.project, a.name, a.exist_ok, /*weights_dir=*/false);
    if (a.save_txt) fs::create_directories(save_dir + "/labels");
    yolo11::metrics::NmsOptions nms;
    nms.conf = a.conf;
    nms.iou = a.iou;
    nms.max_det = a.max_det;
    torch::NoGradGuard ng;
    int64_t total = 0;
    for (const auto& path : images) {
      cv::Mat img;
      try {
        img = yolo11::data::read_image(path);
      } catch (const std::exception& e) {
        spdlog::warn("skipping {}: {}", path, e.what());
        continue;
      }
      const int h = img.rows, w = img.cols;
      // Predict-path letterbox: scale up or down to imgsz, minimal padding to a multiple of 32.
      const auto lp = yolo11::data::letterbox_params(h, w, static_cast<int>(a.imgsz), static_cast<int>(a.imgsz),
                                                     /*scaleup=*/true, /*auto_pad=*/true, 32);
      cv::Mat lb = yolo11::data::letterbox_image(img, lp);
      auto x = torch::empty({1, 3, lb.rows, lb.cols}, torch::kUInt8);
      yolo11::data::hwc_bgr_to_chw_rgb(lb, x.data_ptr<uint8_t>());
      const auto t0 = std::chrono::steady_clock::now();
      const auto pred = det.model->forward(yolo11::engine::to_input(x, device, /*channels_last=*/false));
      auto dets = yolo11::metrics::non_max_suppression(pred, nms)[0].to(torch::kCPU);
      const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      // Back to original pixels: remove the pad, undo the ratio, clip.
      auto boxes = dets.slice(1, 0, 4).clone();
      boxes.select(1, 0).sub_(lp.left).div_(lp.ratio).clamp_(0, w);
      boxes.select(1, 2).sub_(lp.left).div_(lp.ratio).clamp_(0, w);
      boxes.select(1, 1).sub_(lp.top).div_(lp.ratio).clamp_(0, h);
      boxes.select(1, 3).sub_(lp.top).div_(lp.ratio).clamp_(0, h);
      std::map<std::string, int> counts;
      std::ofstream txt;
      const std::string stem = fs::path(path).stem().string();
      if (a.save_txt) txt.open(save_dir + "/labels/" + stem + ".txt");
      const auto b = boxes.accessor<float, 2>();
      const auto d = dets.accessor<float, 2>();
      for (int64_t i = 0; i < dets.size(0); ++i) {
        const auto c = static_cast<int64_t>(d[i][5]);
        const std::string name = c < static_cast<int64_t>(det.names.size()) ? det.names[static_cast<size_t>(c)] : std::to_string(c);
        ++counts[name];
        const cv::Point p1(static_cast<int>(b[i][0]), static_cast<int>(b[i][1]));
        const cv::Point p2(static_cast<int>(b[i][2]), static_cast<int>(b[i][3]));
        cv::rectangle(img, p1, p2, class_color(c), static_cast<int>(a.line_width), cv::LINE_AA);
        const std::string label = fmt::format("{} {:.2f}", name, d[i][4]);
        int base = 0;
        const auto ts = cv::getTextSize(label, cv::FONT_HERSHEY_SIMPLEX, 0.5, 1, &base);
        const cv::Point t1(p1.x, std::max(p1.y - ts.height - 4, 0));
        cv::rectangle(img, t1, cv::Point(t1.x + ts.width + 2, t1.y + ts.height + 4), class_color(c), cv::FILLED);
        cv::putText(img, label, cv::Point(t1.x + 1, t1.y + ts.height + 1), cv::FONT_HERSHEY_SIMPLEX, 0.5,
                    cv::Scalar(255, 255, 255), 1, cv::LINE_AA);
        if (a.save_txt) {
          txt << fmt::format("{} {:.6g} {:.6g} {:.6g} {:.6g}", c, (b[i][0] + b[i][2]) / 2 / w, (b[i][1] + b[i][3]) / 2 / h,
                             (b[i][2] - b[i][0]) / w, (b[i][3] - b[i][1]) / h);
          if (a.save_conf) txt << fmt::format(" {:.6g}", d[i][4]);
          txt << "\n";
        }
      }
      cv::imwrite(save_dir + "/" + fs::path(path).filename().string(), img);
      std::string what;
      for (const auto& [n, k] : counts) what += fmt::format("{}{} {}", what.empty() ? "" : ", ", k, n);
      spdlog::info("{}: {}x{} {}, {:.1f}ms", path, lb.rows, lb.cols, what.empty() ? "(no detections)" : what, ms);
      total += dets.size(0);
    }
    spdlog::info("{} detections; results saved to {}", total, save_dir);
    return 0;
  } catch (const std::exception& e) {
    spdlog::error("{}", e.what());
    return 1;
  }
}

}  // namespace yolo11::cli
