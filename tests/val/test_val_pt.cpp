// Ultralytics .pt checkpoints (<shared>/fixtures/ultralytics, README there) through the real executable: `yolo11 val`
// against the reference validator's figures on the same file, `yolo11 predict`, `yolo11 train model=x.pt`, and the
// clear refusal of `resume=x.pt`.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "golden.h"
#include "process.h"
#include "yolo11/io/safetensors.h"
#include "yolo11_test_config.h"

namespace {
namespace fs = std::filesystem;

std::string pt_fixture(const std::string& name) {
  return std::string(YOLO11_TEST_SHARED_DIR) + "/fixtures/ultralytics/" + name;
}

int run_cli(const std::vector<std::string>& args, const std::string& log_path, std::string& log) {
  fs::remove(log_path);
  const int rc = yolo11::test::run(yolo11::test::exe("yolo11"), args, log_path);
  log = yolo11::test::read_text(log_path);
  return rc;
}

}  // namespace

TEST(ValPt, Shapes3CheckpointGivesTheReferenceValidatorsMetrics) {
  // yolo11n_shapes3.json: the reference validator on this .pt (shapes3 val, imgsz 256, batch 16, rect as `yolo val`)
  std::ifstream in(pt_fixture("yolo11n_shapes3.json"));
  const auto ref = nlohmann::json::parse(in).at("val_shapes3_imgsz256");
  const std::string src = YOLO11_TEST_SOURCE_DIR, dir = yolo11::test::scratch_dir("val_pt");
  std::string log;
  ASSERT_EQ(run_cli({"val", "weights=" + pt_fixture("yolo11n_shapes3.pt"),
                     "data=" + src + "/configs/datasets/shapes3.yaml",
                    "datasets_dir=" + fs::path(yolo11::test::dataset_dir("shapes3")).parent_path().string(),
                    "imgsz=256", "batch=16", "workers=0", "threads=2", "plots=false", "project=" + dir, "name=v",
                    "exist_ok=true"},
                   dir + "/val.log", log),
            0)
      << log;
  EXPECT_NE(log.find("Transferred 499/499"), std::string::npos) << log;
  const auto at = log.find("metrics (exact): ");
  ASSERT_NE(at, std::string::npos) << log;
  const auto m = nlohmann::json::parse(log.substr(at + 17, log.find('\n', at) - at - 17));
  EXPECT_NEAR(m.at("precision").get<double>(), ref.at("metrics/precision(B)").get<double>(), 1e-4);
  EXPECT_NEAR(m.at("recall").get<double>(), ref.at("metrics/recall(B)").get<double>(), 1e-4);
  EXPECT_NEAR(m.at("mAP50").get<double>(), ref.at("metrics/mAP50(B)").get<double>(), 1e-4);
  EXPECT_NEAR(m.at("mAP50-95").get<double>(), ref.at("metrics/mAP50-95(B)").get<double>(), 1e-4);
}

TEST(ValPt, PredictReadsACheckpoint) {
  const std::string dir = yolo11::test::scratch_dir("predict_pt");
  std::string log;
  ASSERT_EQ(run_cli({"predict", "weights=" + pt_fixture("yolo11n_coco128_e2.pt"),
                    "source=" + yolo11::test::dataset_dir("coco8") + "/images/val", "imgsz=320", "conf=0.001",
                    "save_txt=true", "project=" + dir, "name=p", "exist_ok=true"},
                   dir + "/predict.log", log),
            0)
      << log;
  EXPECT_TRUE(fs::exists(fs::path(dir) / "p" / "000000000036.jpg")) << log;
}

TEST(ValPt, TrainFromACheckpointTransfersEveryTensorAndResumeIsRefused) {
  const std::string dir = yolo11::test::scratch_dir("train_pt");
  auto args = yolo11::test::coco8_train_args(dir, "t", 1);
  args.insert(args.begin(), "train");
  args.push_back("model=" + pt_fixture("yolo11n_coco128_e2.pt"));  // the last value of a key wins
  args.push_back("exist_ok=true");
  std::string log;
  ASSERT_EQ(run_cli(args, dir + "/train.log", log), 0) << log;
  EXPECT_NE(log.find("Transferred 499/499 items"), std::string::npos) << log;
  const fs::path last = fs::path(dir) / "t" / "weights" / "last.safetensors";
  ASSERT_TRUE(fs::exists(last)) << log;
  // the fixture's SPPF.cv1 has no activation (8.4.50): the run's weights say so, for yolo11 val / predict
  EXPECT_EQ(yolo11::io::read_safetensors_metadata(last.string())["sppf_act"], "false");

  // pretrained=x.pt: the transfer report (shapes3, nc=3, into the nc=80 model: its class branch cv3 starts fresh)
  auto pre = yolo11::test::coco8_train_args(dir, "p", 1);
  pre.insert(pre.begin(), "train");
  pre.push_back("pretrained=" + pt_fixture("yolo11n_shapes3.pt"));
  pre.push_back("exist_ok=true");
  ASSERT_EQ(run_cli(pre, dir + "/pretrained.log", log), 0) << log;
  EXPECT_NE(log.find("Transferred 448/499 items"), std::string::npos) << log;
  EXPECT_EQ(log.find("Transferred 448/499 items", log.find("Transferred 448/499 items") + 1), std::string::npos)
      << "the transfer report is printed once (issue 33 item 16)\n" << log;
  EXPECT_NE(log.find("class count differs (3 in the source, 80 here)"), std::string::npos) << log;

  args.push_back("resume=" + pt_fixture("yolo11n_coco128_e2.pt"));
  EXPECT_NE(run_cli(args, dir + "/resume.log", log), 0) << log;
  EXPECT_NE(log.find("not an Ultralytics .pt"), std::string::npos) << log;
}
