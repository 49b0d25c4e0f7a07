// The val keys people use (yolo11 help val), each through the real `yolo11 val` on the golden shapes3 weights:
// save_json, save_txt / save_conf, split, half, agnostic_nms, classes, augment, verbose, plots; and predictions.json
// evaluated by pycocotools (test-only reader, skipped where missing) against our own mAP50-95.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "golden.h"
#include "golden_val.h"
#include "process.h"
#include "yolo11/config/train_config.h"
#include "yolo11/data/dataset_info.h"
#include "yolo11/engine/data_setup.h"
#include "yolo11/engine/inference.h"
#include "yolo11/engine/val_outputs.h"
#include "yolo11/engine/validator.h"
#include "yolo11/io/safetensors.h"
#include "yolo11/metrics/nms.h"
#include "yolo11_test_config.h"

namespace {
using namespace yolo11;
namespace fs = std::filesystem;

/// Runs `yolo11 val` on the golden weights (shapes3, imgsz 256) with `extra`; returns the exit code, log in `log`.
int val(const std::string& dir, const std::vector<std::string>& extra, std::string& log) {
  const std::string src = YOLO11_TEST_SOURCE_DIR;
  std::vector<std::string> args = {"val",
                                   "weights=" + test::golden_path("val_shapes3/weights.safetensors"),
                                   "data=" + src + "/configs/datasets/shapes3.yaml",
                                   "datasets_dir=" + fs::path(test::dataset_dir("shapes3")).parent_path().string(),
                                   "model=" + src + "/configs/models/yolo11.yaml",
                                   "imgsz=256", "workers=0", "threads=1", "project=" + dir, "name=v", "exist_ok=true"};
  args.insert(args.end(), extra.begin(), extra.end());
  const std::string path = dir + "/val.log";
  fs::remove(path);
  const int rc = test::run(test::exe("yolo11"), args, path);
  log = test::read_text(path);
  return rc;
}

/// The "all" row of the printed table: P, R, mAP50, mAP50-95.
std::vector<double> all_row(const std::string& log) {
  std::smatch m;
  const std::regex re(R"(\n\s+all\s+(\d+)\s+(\d+)\s+([0-9.]+)\s+([0-9.]+)\s+([0-9.]+)\s+([0-9.]+))");
  if (!std::regex_search(log, m, re)) return {};
  return {std::stod(m[3]), std::stod(m[4]), std::stod(m[5]), std::stod(m[6]), std::stod(m[1]), std::stod(m[2])};
}

int count_class_rows(const std::string& log) {
  int n = 0;
  for (const char* c : {"\n                  rect ", "\n               ellipse ", "\n              triangle "})
    n += log.find(c) != std::string::npos;
  return n;
}

TEST(ValKeys, YoloValDefaultsToRectBatchesAsTheReferencesCommand) {
  // The reference on these weights (tools/reference/val_crosscheck.sh, Ultralytics 8.4.50, CPU): `yolo val` /
  // YOLO(...).val() (Model.val sets rect=true) and the same with rect=False (the golden record's configuration).
  const double with_rect[4] = {0.26611052234753246, 0.39234555610862226, 0.2554276192302956, 0.12670253337045018};
  const double without[4] = {0.2788505952350659, 0.4263549617583043, 0.25954014409549614, 0.12846951063935347};
  const std::string dir = test::scratch_dir("rect");
  for (const bool given : {false, true}) {
    std::string log;
    ASSERT_EQ(val(dir, given ? std::vector<std::string>{"rect=false", "plots=false"}
                             : std::vector<std::string>{"plots=false"}, log), 0) << log;
    const auto at = log.find("metrics (exact): ");
    ASSERT_NE(at, std::string::npos) << log;
    const auto m = nlohmann::json::parse(log.substr(at + 17, log.find('\n', at) - at - 17));
    const double* ref = given ? without : with_rect;
    const char* keys[4] = {"precision", "recall", "mAP50", "mAP50-95"};
    for (int k = 0; k < 4; ++k)
      EXPECT_NEAR(m[keys[k]].get<double>(), ref[k], 1e-4) << keys[k] << (given ? " rect=false" : "");
  }
}

TEST(ValKeys, AugmentAgnosticNmsAndClassesEqualTheReference) {
  // Reference figures on these weights: YOLO(...).val(**kw) of Ultralytics 8.4.50 on the CPU (see docs/loss_metrics.md,
  // "Measured agreement"), P, R, mAP50, mAP50-95.
  struct Case {
    std::vector<std::string> keys;
    double ref[4];
  };
  const Case cases[] = {
      {{"augment=true"}, {0.25365407896194253, 0.39770787950315084, 0.24015754445189244, 0.12397755016477793}},
      {{"augment=true", "rect=false"},
       {0.2172649868153873, 0.3940663131615533, 0.22536693153536028, 0.11718310942067385}},
      {{"agnostic_nms=true"}, {0.272908061445636, 0.324935321334704, 0.2205959311226187, 0.1051049963847037}},
      {{"classes=[0, 2]"}, {0.31976592295231965, 0.35465405674464906, 0.2838269624796429, 0.13573757225014937}},
  };
  const std::string dir = test::scratch_dir("ref");
  for (const auto& c : cases) {
    auto keys = c.keys;
    keys.push_back("plots=false");
    std::string log;
    ASSERT_EQ(val(dir, keys, log), 0) << log;
    const auto at = log.find("metrics (exact): ");
    ASSERT_NE(at, std::string::npos) << log;
    const auto m = nlohmann::json::parse(log.substr(at + 17, log.find('\n', at) - at - 17));
    const char* names[4] = {"precision", "recall", "mAP50", "mAP50-95"};
    for (int k = 0; k < 4; ++k) EXPECT_NEAR(m[names[k]].get<double>(), c.ref[k], 1e-4) << names[k] << " " << c.keys[0];
  }
}

TEST(ValKeys, SaveJsonWritesCocoResultsInOriginalImagePixels) {
  const std::string dir = test::scratch_dir("json");
  std::string log;
  ASSERT_EQ(val(dir, {"save_json=true", "plots=false", "rect=false"}, log), 0) << log;
  const auto j = nlohmann::json::parse(test::read_text(dir + "/v/predictions.json"));
  ASSERT_TRUE(j.is_array());
  ASSERT_GT(j.size(), 1000u);
  std::map<int64_t, int> per_image;
  for (const auto& p : j) {
    ASSERT_TRUE(p["image_id"].is_number_integer()) << p.dump();  // "0007.jpg" → 7, as the reference
    per_image[p["image_id"].get<int64_t>()]++;
    const int64_t cat = p["category_id"];
    EXPECT_GE(cat, 1);  // class + 1 for a dataset that is not COCO's own val2017
    EXPECT_LE(cat, 3);
    const auto& b = p["bbox"];  // x, y (top-left), w, h in the 256×256 original's pixels
    EXPECT_GE(b[0].get<double>(), 0.0);
    EXPECT_LE(b[0].get<double>() + b[2].get<double>(), 256.001);
    EXPECT_LE(b[1].get<double>() + b[3].get<double>(), 256.001);
    EXPECT_GE(p["score"].get<double>(), 0.001);  // conf > 0.001, rounded to 5 decimals
    EXPECT_EQ(p["file_name"].get<std::string>().size(), 8u);
  }
  const auto ref = nlohmann::json::parse(test::read_text(test::golden_path("val_shapes3/reference_val.json")));
  for (const auto& ri : ref["images"]) {  // as many results per image as the reference validator's predictions
    const std::string f = ri["im_file"];
    EXPECT_EQ(per_image[std::stoll(f.substr(0, 4))], static_cast<int>(ri["pred_conf"].size())) << f;
  }
  EXPECT_NE(log.find("predictions.json"), std::string::npos) << log;
}

TEST(ValKeys, SaveTxtWritesOneLabelFilePerImageWithPredictionsAndSaveConfAddsTheConfidence) {
  const std::string dir = test::scratch_dir("txt");
  std::string log;
  ASSERT_EQ(val(dir, {"save_txt=true", "save_conf=true", "plots=false", "rect=false"}, log), 0) << log;
  const auto ref = nlohmann::json::parse(test::read_text(test::golden_path("val_shapes3/reference_val.json")));
  int files = 0;
  for (const auto& ri : ref["images"]) {
    const std::string stem = ri["im_file"].get<std::string>().substr(0, 4);
    std::ifstream f(dir + "/v/labels/" + stem + ".txt");
    ASSERT_TRUE(f.good()) << stem;
    ++files;
    std::string line;
    size_t lines = 0;
    while (std::getline(f, line)) {
      std::istringstream is(line);
      int cls = -1;
      double v[5];
      ASSERT_TRUE(is >> cls >> v[0] >> v[1] >> v[2] >> v[3] >> v[4]) << line;
      EXPECT_TRUE(cls >= 0 && cls < 3) << line;
      for (int k = 0; k < 4; ++k) EXPECT_TRUE(v[k] >= 0 && v[k] <= 1) << line;
      if (lines < ri["pred_conf"].size()) {
        EXPECT_NEAR(v[4], ri["pred_conf"][lines].get<double>(), 1e-4) << line;
      }
      ++lines;
    }
    EXPECT_EQ(lines, ri["pred_conf"].size()) << stem;
  }
  EXPECT_EQ(files, 50);
  // without save_conf: 5 fields
  const std::string dir2 = test::scratch_dir("txt_noconf");
  ASSERT_EQ(val(dir2, {"save_txt=true", "plots=false"}, log), 0) << log;
  std::ifstream f(dir2 + "/v/labels/0000.txt");
  std::string line;
  ASSERT_TRUE(std::getline(f, line));
  std::istringstream is(line);
  std::string tok;
  int fields = 0;
  while (is >> tok) ++fields;
  EXPECT_EQ(fields, 5) << line;
}

TEST(ValKeys, SplitHalfVerboseAndPlots) {
  const std::string dir = test::scratch_dir("split");
  std::string log;
  ASSERT_EQ(val(dir, {"split=train", "plots=false", "verbose=false", "batch=32"}, log), 0) << log;
  const auto train = all_row(log);
  ASSERT_EQ(train.size(), 6u) << log;
  EXPECT_EQ(train[4], 200);  // shapes3's train split
  EXPECT_EQ(count_class_rows(log), 0) << "verbose=false prints the 'all' row only\n" << log;
  EXPECT_NE(val(dir, {"split=test"}, log), 0);
  EXPECT_NE(log.find("has no 'test' split"), std::string::npos) << log;

  ASSERT_EQ(val(dir, {"half=true"}, log), 0) << log;
  EXPECT_NE(log.find("half=true: float16 validation needs a CUDA device"), std::string::npos) << log;
  const auto half = all_row(log);
  EXPECT_EQ(count_class_rows(log), 3) << log;
  for (const char* f : {"val_batch0_labels.jpg", "val_batch0_pred.jpg", "val_batch1_labels.jpg", "val_batch2_pred.jpg",
                        "confusion_matrix.png", "confusion_matrix_normalized.png"})
    EXPECT_TRUE(fs::exists(dir + "/v/" + f)) << f;
  EXPECT_FALSE(fs::exists(dir + "/v/val_batch3_labels.jpg"));  // three batches, as the reference
  ASSERT_EQ(val(dir, {"plots=false"}, log), 0) << log;
  EXPECT_EQ(all_row(log), half);  // the CPU ignores half=true, as the reference
}

/// test::validate_golden_weights with the agnostic_nms / augment switches.
engine::ValResult validate(const std::vector<std::string>& extra, bool agnostic = false, bool augment = false) {
  engine::ValidatorOptions vo;
  vo.agnostic_nms = agnostic;
  vo.augment = augment;
  return test::validate_golden_weights(extra, vo);
}

double max_cross_class_iou(const at::Tensor& pred) {
  double worst = 0;
  const auto a = pred.accessor<float, 2>();
  for (int64_t i = 0; i < pred.size(0); ++i)
    for (int64_t k = i + 1; k < pred.size(0); ++k) {
      if (a[i][5] == a[k][5]) continue;
      const double iw = std::max(0.f, std::min(a[i][2], a[k][2]) - std::max(a[i][0], a[k][0]));
      const double ih = std::max(0.f, std::min(a[i][3], a[k][3]) - std::max(a[i][1], a[k][1]));
      const double inter = iw * ih;
      const double u = (a[i][2] - a[i][0]) * (a[i][3] - a[i][1]) + (a[k][2] - a[k][0]) * (a[k][3] - a[k][1]) - inter;
      worst = std::max(worst, inter / u);
    }
  return worst;
}

TEST(ValKeys, AgnosticNmsSuppressesAcrossClasses) {
  const auto per_class = validate({});
  const auto agnostic = validate({}, /*agnostic=*/true);
  double worst_per_class = 0, worst_agnostic = 0;
  int64_t n_pc = 0, n_ag = 0;
  for (size_t i = 0; i < per_class.per_image.size(); ++i) {
    worst_per_class = std::max(worst_per_class, max_cross_class_iou(per_class.per_image[i].pred));
    worst_agnostic = std::max(worst_agnostic, max_cross_class_iou(agnostic.per_image[i].pred));
    n_pc += per_class.per_image[i].pred.size(0);
    n_ag += agnostic.per_image[i].pred.size(0);
  }
  EXPECT_GT(worst_per_class, 0.7);  // per-class NMS keeps overlapping boxes of different classes
  EXPECT_LE(worst_agnostic, 0.7 + 1e-6);
  EXPECT_LT(n_ag, n_pc);
}

TEST(ValKeys, ClassesKeepsOnlyTheListedClassesLabels) {
  const auto all = validate({});
  const auto only0 = validate({"classes=[0]"});
  ASSERT_EQ(only0.metrics.per_class.size(), 1u);
  EXPECT_EQ(only0.metrics.per_class[0].cls, 0);
  EXPECT_EQ(only0.instances, all.metrics.per_class[0].instances);  // 49 "rect" boxes
  const auto two = validate({"classes=[0, 2]"});
  EXPECT_EQ(two.metrics.per_class.size(), 2u);
  EXPECT_EQ(two.instances, all.metrics.per_class[0].instances + all.metrics.per_class[2].instances);
}

TEST(ValKeys, AugmentMergesThreeScalesMappedBackToTheInput) {
  // predict_augment on a 256×256 input: scale 1 without its stride-32 anchors (1344 − 64), scale 0.83 flipped
  // (212 px padded to 224: 784 + 196 + 49), scale 0.67 without its stride-8 anchors (171 px padded to 192: 144 + 36).
  auto det = engine::load_detector(test::golden_path("val_shapes3/weights.safetensors"),
                                   std::string(YOLO11_TEST_SOURCE_DIR) + "/configs/models/yolo11.yaml");
  torch::NoGradGuard ng;
  const auto x = torch::rand({1, 3, 256, 256}, torch::TensorOptions().dtype(torch::kFloat));
  const auto y = engine::predict_augment(det.model, x);
  ASSERT_EQ(y.size(2), 1280 + 1029 + 180);
  const auto plain = det.model->forward(x);
  EXPECT_TRUE(torch::equal(y.slice(2, 0, 1280), plain.slice(2, 0, 1280)));  // the scale-1 pass, unchanged
  // the flipped 0.83 pass equals a plain pass on the flipped, resized, padded input, de-scaled and de-flipped
  namespace F = torch::nn::functional;
  auto xi = F::interpolate(x.flip({3}), F::InterpolateFuncOptions().size(std::vector<int64_t>{212, 212})
                                            .mode(torch::kBilinear).align_corners(false));
  xi = F::pad(xi, F::PadFuncOptions({0, 12, 0, 12}).value(0.447));
  auto yi = det.model->forward(xi);
  yi.slice(1, 0, 4).div_(0.83);
  yi.slice(1, 0, 1).copy_(256.0 - yi.slice(1, 0, 1));
  EXPECT_ALL_CLOSE(y.slice(2, 1280, 2309), yi, 1e-4, 1e-5);
  // on the golden weights, TTA finds as many or more of the targets (recall) and keeps mAP50 within reach
  const auto tta = validate({}, false, /*augment=*/true);
  const auto plain_r = validate({});
  EXPECT_NE(tta.metrics.map50_95, plain_r.metrics.map50_95);
  EXPECT_GT(tta.metrics.map50, 0.5 * plain_r.metrics.map50);
}

TEST(ValWeights, ClassNamesAsAListOrAnIdObjectAndAClearErrorOtherwise) {
  // tools/export_ultralytics_weights.py writes the reference's names dict ({"0": "rect", ...}); ours write a list.
  const auto file = io::load_safetensors(test::golden_path("val_shapes3/weights.safetensors"));
  const std::string dir = test::scratch_dir("names");
  const std::string yaml = std::string(YOLO11_TEST_SOURCE_DIR) + "/configs/models/yolo11.yaml";
  auto with_names = [&](const std::string& names) {
    const std::string path = dir + "/w.safetensors";
    io::save_safetensors(path, file.tensors, {{"names", names}});
    return path;
  };
  EXPECT_EQ(engine::load_detector(with_names(R"({"0": "rect", "2": "triangle", "1": "ellipse"})"), yaml).names,
            (std::vector<std::string>{"rect", "ellipse", "triangle"}));
  EXPECT_EQ(engine::load_detector(with_names(R"(["a", "b", "c"])"), yaml).names,
            (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(engine::load_detector(with_names(R"({"1": "b"})"), yaml).names,
            (std::vector<std::string>{"0", "b", "2"}));  // ids without a name keep their number
  for (const char* bad : {R"({"7": "x"})", R"("rect")", "{not json"}) {
    try {
      engine::load_detector(with_names(bad), yaml);
      ADD_FAILURE() << bad << " was accepted";
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find("metadata 'names'"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("w.safetensors"), std::string::npos) << e.what();
    }
  }
}

TEST(ValKeys, PycocotoolsAgreesWithOurMap5095WithinOneHundredth) {
  std::string why;
  const std::string py = test::readers_python("pycocotools.cocoeval", why);
  if (py.empty()) GTEST_SKIP() << why;
  const std::string dir = test::scratch_dir("coco");
  std::string log;
  ASSERT_EQ(val(dir, {"save_json=true", "plots=false"}, log), 0) << log;
  const auto ours = all_row(log);
  ASSERT_EQ(ours.size(), 6u) << log;
  // COCO ground truth from the YOLO labels (shapes3 images are 256×256), then COCOeval on predictions.json.
  const std::string script = dir + "/coco_eval.py";
  std::ofstream(script) << R"(import glob, json, os, sys, contextlib, io
from pycocotools.coco import COCO
from pycocotools.cocoeval import COCOeval
root, pred = sys.argv[1], sys.argv[2]
images, anns = [], []
for f in sorted(glob.glob(os.path.join(root, 'images', 'val', '*.jpg'))):
    stem = os.path.splitext(os.path.basename(f))[0]
    iid = int(stem)
    images.append({'id': iid, 'file_name': os.path.basename(f), 'width': 256, 'height': 256})
    for line in open(os.path.join(root, 'labels', 'val', stem + '.txt')):
        c, x, y, w, h = map(float, line.split())
        anns.append({'id': len(anns) + 1, 'image_id': iid, 'category_id': int(c) + 1, 'iscrowd': 0,
                     'bbox': [(x - w / 2) * 256, (y - h / 2) * 256, w * 256, h * 256], 'area': w * h * 256 * 256})
gt = {'images': images, 'annotations': anns, 'categories': [{'id': i + 1, 'name': str(i)} for i in range(3)]}
with contextlib.redirect_stdout(io.StringIO()):
    coco = COCO(); coco.dataset = gt; coco.createIndex()
    e = COCOeval(coco, coco.loadRes(pred), 'bbox'); e.params.maxDets = [1, 10, 300]
    e.evaluate(); e.accumulate(); e.summarize()
p = e.eval['precision'][:, :, :, 0, 2]  # IoU x recall x class, area all, maxDets 300 (the validator's max_det)
print(p[p > -1].mean(), p[0][p[0] > -1].mean())
)";
  const std::string out = dir + "/coco_eval.out";
  ASSERT_EQ(test::run(py, {script, test::dataset_dir("shapes3"), dir + "/v/predictions.json"}, out), 0)
      << test::read_text(out);
  std::istringstream is(test::read_text(out));
  double map50_95 = -1, map50 = -1;
  is >> map50_95 >> map50;
  EXPECT_NEAR(map50_95, ours[3], 0.01) << "pycocotools " << map50_95 << " / ours " << ours[3];
  EXPECT_NEAR(map50, ours[2], 0.01) << "pycocotools " << map50 << " / ours " << ours[2];
  std::printf("[ValKeys] mAP50-95 pycocotools %.4f ours %.4f; mAP50 pycocotools %.4f ours %.4f\n", map50_95, ours[3],
              map50, ours[2]);
}

}  // namespace
