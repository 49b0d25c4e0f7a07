// yolo11 predict / yolo11-predict: a thin main over engine::Predictor (include/yolo11/engine/predictor.h). Sources: an
// image, a folder, a glob ('dir/*.jpg'), a video file, a webcam index, a .txt list; writes annotated images / videos
// and, with save_txt=true, Ultralytics-style labels (class cx cy w h [conf], normalized to the original image).
//   yolo11-predict --weights best.safetensors --source datasets/coco8/images/val conf=0.25 save_txt=true
#include "yolo11/core/cpus.h"
#include "yolo11/cli/cli.h"

#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>
#include <torch/torch.h>

#include <algorithm>
#include <thread>

#include "yolo11/engine/fp_env.h"
#include "yolo11/engine/predictor.h"
#include "yolo11/io/console.h"
#include "yolo11/io/run_dir.h"
#include "parse.h"

namespace yolo11::cli {

int predict(int argc, char** argv) {
  io::setup_console();  // plain lines, errors on stderr, no LibTorch notices (include/yolo11/io/console.h)
  CLI::App app{"yolo11-predict: run a trained YOLO11 on images / videos; annotated outputs (+ txt labels) in runs/predict/"};
  std::string weights, source;
  std::vector<std::string> overrides;
  app.add_option("--weights", weights, "weights (.safetensors, Ultralytics state_dict keys, or an Ultralytics .pt)")->required();
  app.add_option("--source", source,
                 "an image, a folder, a glob ('dir/*.jpg'), a video file, a webcam index (0) or a .txt list of paths "
                 "(or the source= key)");
  app.add_option("overrides", overrides,
                 "key=value (configs/default.yaml): imgsz conf iou max_det batch vid_stride save save_txt save_conf "
                 "save_json line_width device project name exist_ok data source");
  if (const int rc = parse(app, argc, argv); rc >= 0) return rc;
  try {
    const auto o = engine::PredictOptions::from_overrides(overrides);
    if (source.empty()) source = o.source;
    if (source.empty())
      throw std::runtime_error("no source: pass --source PATH (or source=PATH): an image, a folder, a glob, a video "
                               "file, a webcam index or a .txt list");
    torch::set_num_threads(core::usable_cores().usable);  // affinity and cgroup quota (core/cpus.h)
    spdlog::debug("{}", yolo11::engine::tune_malloc());
    engine::resolve_source(source);  // before the weights: fail fast on a bad path
    engine::Predictor p(weights, o);
    spdlog::info("{}", p.weights_report());
    const std::string save_dir = io::make_run_dir(o.project, o.name, o.exist_ok, /*weights_dir=*/false);
    const auto s = p.run(source, save_dir);
    spdlog::info("{} images, {} video frames, {} detections; results saved to {}", s.images, s.frames, s.detections,
                 s.save_dir);
    return 0;
  } catch (const std::exception& e) {
    return fail(argc > 0 ? argv[0] : nullptr, e);
  }
}

}  // namespace yolo11::cli
