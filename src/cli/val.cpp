// yolo11 val / yolo11-val: validates weights on a dataset split like `yolo val`: per-class table, speed line, plots.
//   yolo11-val --weights runs/train/train/weights/best.safetensors --data configs/datasets/coco8.yaml imgsz=640
#include "yolo11/core/cpus.h"
#include "yolo11/cli/cli.h"

#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include <thread>

#include "yolo11/config/train_config.h"
#include "yolo11/core/device.h"
#include "yolo11/data/dataset_info.h"
#include "yolo11/engine/fp_env.h"
#include "yolo11/engine/data_setup.h"
#include "yolo11/engine/inference.h"
#include "yolo11/engine/val_outputs.h"
#include "yolo11/engine/validator.h"
#include "yolo11/io/console.h"
#include "yolo11/io/run_dir.h"
#include "parse.h"

namespace yolo11::cli {

int val(int argc, char** argv) {
  io::setup_console();  // plain lines, errors on stderr, no LibTorch notices (include/yolo11/io/console.h)
  CLI::App app{"yolo11-val: mAP of a weights file on a dataset split (Ultralytics DetectionValidator semantics)"};
  std::string weights, data;
  std::vector<std::string> overrides;
  app.add_option("--weights", weights, "weights (.safetensors, Ultralytics state_dict keys, or an Ultralytics .pt)")->required();
  app.add_option("--data", data, "dataset YAML")->required();
  app.add_option("overrides", overrides, "key=value: imgsz batch conf iou max_det workers device split single_cls plots "
                 "project name rect half agnostic_nms classes augment save_json save_txt save_conf verbose");
  if (const int rc = parse(app, argc, argv); rc >= 0) return rc;
  try {
    // rect=true first: the reference's Model.val (what `yolo val` and YOLO(...).val() run) sets it as its method
    // default, and the user's rect=false, later on the line, wins. DetectionValidator on its own defaults to false.
    overrides.insert(overrides.begin(), "rect=true");
    overrides.push_back("data=" + data);
    overrides.push_back("mode=val");
    auto cfg = yolo11::config::TrainConfig::load("", overrides);
    const int cores = yolo11::core::usable_cores().usable;  // affinity and cgroup quota (core/cpus.h)
    torch::set_num_threads(cfg.threads > 0 ? static_cast<int>(cfg.threads) : cores);
    spdlog::debug("{}", yolo11::engine::flush_denormals());  // environment lines: train.log of a training run has them
    spdlog::debug("{}", yolo11::engine::tune_malloc());
    auto det = yolo11::engine::load_detector(weights, cfg.model.empty() ? "configs/models/yolo11.yaml" : cfg.model);
    spdlog::info("{}", det.report);
    spdlog::info("{}", det.model->summary(cfg.imgsz));
    const auto info = yolo11::data::load_dataset_yaml(cfg.data, cfg.datasets_dir);
    // single_cls (as the trainer): every label becomes class 0 "item"; the dataset's nc still bounds the label ids.
    const int64_t nc = cfg.single_cls ? 1 : info.nc;
    const std::vector<std::string> names = cfg.single_cls ? std::vector<std::string>{"item"} : info.names;
    if (nc != det.nc)
      throw std::runtime_error(weights + " predicts " + std::to_string(det.nc) + " classes but " + cfg.data + " has " +
                               std::to_string(nc) + (cfg.single_cls ? " with single_cls=true" : "") +
                               "; pass the dataset the weights were trained on" +
                               (det.nc == 1 && !cfg.single_cls ? " (a model trained with single_cls=true: add "
                                                                  "single_cls=true)" : ""));
    const auto& sources = cfg.split == "train" ? info.train : cfg.split == "test" ? info.test : info.val;
    if (sources.empty())
      throw std::runtime_error(cfg.data + " has no '" + cfg.split + "' split; choose split=train, val or test among "
                               "the splits the dataset YAML lists");
    auto loader = yolo11::engine::make_val_loader(info, sources, cfg, cfg.batch, cfg.split,
                                                 yolo11::engine::ValShapes::standalone);
    const std::string save_dir = yolo11::io::make_run_dir(cfg.project.empty() ? "runs/val" : cfg.project,
                                                              cfg.name.empty() ? "val" : cfg.name, cfg.exist_ok, /*weights_dir=*/false);
    const yolo11::core::DevicePlan plan = yolo11::core::plan_device(cfg.device);
    spdlog::info("device: {}", plan.reason);
    const torch::Device device = plan.device;
    yolo11::engine::ValidatorOptions vo;
    vo.conf = cfg.conf.value_or(0.001);
    vo.iou = cfg.iou;
    vo.max_det = cfg.max_det;
    vo.plots = cfg.plots;
    vo.save_dir = save_dir;
    vo.verbose = cfg.verbose;
    vo.agnostic_nms = cfg.agnostic_nms || cfg.single_cls;
    vo.augment = cfg.augment;
    vo.half = cfg.half && device.is_cuda();
    vo.warmup = true;  // CUDA only: Speed: without the process's start-up
    if (cfg.half && !vo.half)
      spdlog::info("half=true: float16 validation needs a CUDA device; validating in float32 on {} (as the reference)",
                   device.str());
    vo.save_json = cfg.save_json;
    vo.save_txt = cfg.save_txt;
    vo.save_conf = cfg.save_conf;
    bool coco = false;
    for (const auto& s : sources) coco |= yolo11::engine::is_coco_split(s);
    vo.class_map = yolo11::engine::coco_class_map(coco && det.nc == 80, det.nc);
    if (cfg.augment) spdlog::info("augment=true: test-time augmentation (scales 1, 0.83 flipped, 0.67; merged)");
    yolo11::engine::Validator validator(loader, names, vo);
    yolo11::loss::DetectionLoss criterion(det.nc, det.model->strides(), det.model->reg_max());
    det.model->fuse();
    yolo11::model::to_channels_last(*det.model);
    det.model->to(device);
    if (vo.half) det.model->to(torch::kHalf);
    const auto r = validator.run(det.model, &criterion, device);
    // The trainer's val/*_loss columns: the mean of the per-batch loss items, so they depend on the batch split.
    spdlog::info("Losses (mean over {} batch{} of {}): box {:.5f}, cls {:.5f}, dfl {:.5f}", loader->num_batches(),
                 loader->num_batches() == 1 ? "" : "es",
                 cfg.batch, r.loss_items[0], r.loss_items[1], r.loss_items[2]);
    spdlog::info("metrics (exact): {{\"precision\": {:.9g}, \"recall\": {:.9g}, \"mAP50\": {:.9g}, "
                 "\"mAP50-95\": {:.9g}}}",
                 r.metrics.precision, r.metrics.recall, r.metrics.map50, r.metrics.map50_95);
    spdlog::info("Results saved to {}", save_dir);
    return 0;
  } catch (const std::exception& e) {
    return fail(argc > 0 ? argv[0] : nullptr, e);
  }
}

}  // namespace yolo11::cli
