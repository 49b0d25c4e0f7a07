// `yolo11 val`'s validator against the reference's standalone validator (golden/val_shapes3: Ultralytics 8.4.50
// DetectionValidator on fixed yolo11n weights, shapes3 val, imgsz 256): per image the same input size, targets and
// post-NMS predictions, and the same P, R, mAP50, mAP50-95 and per-class AP.
// The golden record was made by a DetectionValidator built with its own defaults, i.e. rect=false (every image an
// imgsz × imgsz letterbox); `yolo val` goes through Model.val, which sets rect=true, and `yolo11 val` follows it
// (ValKeys.YoloValDefaultsToRectBatchesAsTheReferencesCommand). So these tests pass rect=false.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "golden.h"
#include "golden_val.h"
#include "process.h"
#include "yolo11/config/train_config.h"
#include "yolo11/data/dataset_info.h"
#include "yolo11/engine/data_setup.h"
#include "yolo11/engine/inference.h"
#include "yolo11/engine/validator.h"
#include "yolo11_test_config.h"

namespace {
using namespace yolo11;
namespace fs = std::filesystem;

nlohmann::json reference() {
  return nlohmann::json::parse(test::read_text(test::golden_path("val_shapes3/reference_val.json")));
}

torch::Tensor tensor2d(const nlohmann::json& rows, int64_t cols) {
  std::vector<float> v;
  for (const auto& r : rows)
    for (const auto& x : r) v.push_back(x.get<float>());
  return torch::tensor(v, torch::kFloat).reshape({static_cast<int64_t>(rows.size()), cols});
}

torch::Tensor tensor1d(const nlohmann::json& xs) {
  std::vector<float> v;
  for (const auto& x : xs) v.push_back(x.get<float>());
  return torch::tensor(v, torch::kFloat);
}

TEST(ValGolden, EveryImageSeesTheReferencesInputTargetsAndPredictions) {
  const auto r = test::validate_golden_weights({});
  const auto ref = reference();
  ASSERT_EQ(r.per_image.size(), ref["images"].size());
  std::map<std::string, const engine::ValImage*> ours;
  for (const auto& im : r.per_image) ours[fs::path(im.im_file).filename().string()] = &im;
  int64_t preds = 0;
  double worst_box = 0, worst_conf = 0;
  for (const auto& ri : ref["images"]) {
    const std::string name = ri["im_file"];
    ASSERT_TRUE(ours.count(name)) << name;
    const auto& im = *ours[name];
    SCOPED_TRACE(name);
    EXPECT_EQ(im.input_hw[0], ri["imgsz"][0].get<int64_t>());
    EXPECT_EQ(im.input_hw[1], ri["imgsz"][1].get<int64_t>());
    EXPECT_DOUBLE_EQ(im.ratio_pad[0], ri["ratio_pad"][0][0].get<double>());
    EXPECT_DOUBLE_EQ(im.ratio_pad[2], ri["ratio_pad"][1][0].get<double>());
    EXPECT_DOUBLE_EQ(im.ratio_pad[3], ri["ratio_pad"][1][1].get<double>());
    const auto tcls = tensor1d(ri["target_cls"]);
    ASSERT_EQ(im.target_cls.size(0), tcls.size(0));
    EXPECT_TRUE(torch::equal(im.target_cls.to(torch::kFloat), tcls));
    if (tcls.size(0) > 0) {
      EXPECT_ALL_CLOSE(im.target_xyxy, tensor2d(ri["target_xyxy"], 4), 1e-3, 0);
    }
    const int64_t n = static_cast<int64_t>(ri["pred_conf"].size());
    ASSERT_EQ(im.pred.size(0), n) << "post-NMS prediction count";
    preds += n;
    if (n == 0) continue;
    EXPECT_ALL_CLOSE(im.pred.slice(1, 0, 4), tensor2d(ri["pred_xyxy"], 4), 0.01, 0);  // pixels
    EXPECT_ALL_CLOSE(im.pred.select(1, 4), tensor1d(ri["pred_conf"]), 1e-4, 0);
    EXPECT_TRUE(torch::equal(im.pred.select(1, 5), tensor1d(ri["pred_cls"])));
    worst_box = std::max(worst_box, (im.pred.slice(1, 0, 4) - tensor2d(ri["pred_xyxy"], 4)).abs().max().item<double>());
    worst_conf = std::max(worst_conf, (im.pred.select(1, 4) - tensor1d(ri["pred_conf"])).abs().max().item<double>());
  }
  EXPECT_GT(preds, 1000);  // the comparison covered real predictions
  std::printf("[ValGolden] %lld predictions on %zu images: max |box diff| %.3g px, max |conf diff| %.3g\n",
              static_cast<long long>(preds), r.per_image.size(), worst_box, worst_conf);
}

TEST(ValGolden, MetricsEqualTheReferenceValidatorsTo1e4) {
  const auto r = test::validate_golden_weights({});
  const auto ref = reference();
  const auto& m = ref["metrics"];
  EXPECT_NEAR(r.metrics.precision, m["precision"].get<double>(), 1e-4);
  EXPECT_NEAR(r.metrics.recall, m["recall"].get<double>(), 1e-4);
  EXPECT_NEAR(r.metrics.map50, m["mAP50"].get<double>(), 1e-4);
  EXPECT_NEAR(r.metrics.map50_95, m["mAP50-95"].get<double>(), 1e-4);
  std::printf("[ValGolden] |diff| P %.2g R %.2g mAP50 %.2g mAP50-95 %.2g\n",
              std::abs(r.metrics.precision - m["precision"].get<double>()),
              std::abs(r.metrics.recall - m["recall"].get<double>()),
              std::abs(r.metrics.map50 - m["mAP50"].get<double>()),
              std::abs(r.metrics.map50_95 - m["mAP50-95"].get<double>()));
  ASSERT_EQ(r.metrics.per_class.size(), ref["per_class_ap50_95"].size());
  for (size_t c = 0; c < r.metrics.per_class.size(); ++c)
    EXPECT_NEAR(r.metrics.per_class[c].ap50_95(), ref["per_class_ap50_95"][c].get<double>(), 1e-4) << "class " << c;
}

TEST(ValGolden, InTrainingShapesAreRectBatchesPaddedAsTheReferenceTrainer) {
  // The trainer's validation letterboxes into rect batch shapes with pad 0.5: a 256×256 image at imgsz 256 becomes
  // a 288×288 input (ceil(256/32 + 0.5)·32), as the reference trainer's val loader; standalone follows rect.
  const std::string src = YOLO11_TEST_SOURCE_DIR;
  const auto cfg = config::TrainConfig::load(
      "", {"data=" + src + "/configs/datasets/shapes3.yaml",
           "datasets_dir=" + fs::path(test::dataset_dir("shapes3")).parent_path().string(), "imgsz=256", "workers=0"});
  const auto info = data::load_dataset_yaml(cfg.data, cfg.datasets_dir);
  auto in_training = engine::make_val_loader(info, info.val, cfg, 16, "val");
  in_training->start_epoch(0);
  EXPECT_EQ(in_training->next()->images.size(2), 288);
  auto standalone = engine::make_val_loader(info, info.val, cfg, 16, "val", engine::ValShapes::standalone);
  standalone->start_epoch(0);
  EXPECT_EQ(standalone->next()->images.size(2), 256);
  const auto rect = config::TrainConfig::load("", {"data=" + cfg.data, "datasets_dir=" + cfg.datasets_dir,
                                                   "imgsz=256", "workers=0", "rect=true"});
  auto standalone_rect = engine::make_val_loader(info, info.val, rect, 16, "val", engine::ValShapes::standalone);
  standalone_rect->start_epoch(0);
  EXPECT_EQ(standalone_rect->next()->images.size(2), 288);  // rect=true: the reference's rect shapes, pad 0.5
}

}  // namespace
