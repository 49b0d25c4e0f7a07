#pragma once
// The validator of `yolo11 val` run in process on golden/val_shapes3's weights (shapes3 val, imgsz 256, batch 16,
// rect=false as the golden record, fused, channels_last), with per-image records kept.
#include <filesystem>
#include <string>
#include <vector>

#include "golden.h"
#include "yolo11/config/train_config.h"
#include "yolo11/data/dataset_info.h"
#include "yolo11/engine/data_setup.h"
#include "yolo11/engine/inference.h"
#include "yolo11/engine/validator.h"
#include "yolo11_test_config.h"

namespace yolo11::test {

/// `extra` key=value overrides apply after the defaults above; `vo` carries the validator switches under test
/// (agnostic_nms, augment, ...). No plots, no per-class table, keep_images on.
inline engine::ValResult validate_golden_weights(const std::vector<std::string>& extra,
                                                 engine::ValidatorOptions vo = {}) {
  const std::string src = YOLO11_TEST_SOURCE_DIR;
  std::vector<std::string> ov = {"data=" + src + "/configs/datasets/shapes3.yaml",
                                 "datasets_dir=" + std::filesystem::path(dataset_dir("shapes3")).parent_path().string(),
                                 "imgsz=256", "batch=16", "workers=0", "mode=val", "rect=false"};
  ov.insert(ov.end(), extra.begin(), extra.end());
  const auto cfg = config::TrainConfig::load("", ov);
  auto det = engine::load_detector(golden_path("val_shapes3/weights.safetensors"), src + "/configs/models/yolo11.yaml");
  const auto info = data::load_dataset_yaml(cfg.data, cfg.datasets_dir);
  auto loader = engine::make_val_loader(info, info.val, cfg, cfg.batch, "val", engine::ValShapes::standalone);
  vo.plots = false;
  vo.verbose = false;
  vo.keep_images = true;
  engine::Validator v(loader, info.names, vo);
  det.model->fuse();
  model::to_channels_last(*det.model);
  return v.run(det.model, nullptr, torch::kCPU);
}

}  // namespace yolo11::test
