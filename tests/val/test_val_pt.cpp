// Ultralytics .pt checkpoints (<shared>/fixtures/ultralytics, README there) through the real executable: `yolo11 val`
// against the reference validator's figures on the same file, `yolo11 predict`, `yolo11 train model=x.pt`, and the
// clear refusal of `resume=x.pt`.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "golden.h"
#include "process.h"
#include "yolo11/io/pt_checkpoint.h"
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
  args.push_back("save_pt=true");
  std::string log;
  ASSERT_EQ(run_cli(args, dir + "/train.log", log), 0) << log;
  EXPECT_NE(log.find("Transferred 499/499 items"), std::string::npos) << log;
  const fs::path last = fs::path(dir) / "t" / "weights" / "last.safetensors";
  ASSERT_TRUE(fs::exists(last)) << log;
  // the fixture's SPPF.cv1 has no activation (8.4.50): the run's weights say so, for yolo11 val / predict
  EXPECT_EQ(yolo11::io::read_safetensors_metadata(last.string())["sppf_act"], "false");
  // save_pt=true: the same EMA weights as Ultralytics checkpoints, float16, with the run's names and settings
  for (const char* stem : {"last", "best"}) {
    const fs::path pt = fs::path(dir) / "t" / "weights" / (std::string(stem) + ".pt");
    ASSERT_TRUE(fs::exists(pt)) << pt << "\n" << log;
    const auto ck = yolo11::io::read_pt_checkpoint(pt.string());
    const auto st = yolo11::io::load_safetensors((fs::path(dir) / "t" / "weights" / (std::string(stem) + ".safetensors")).string());
    EXPECT_EQ(ck.nc, 80);
    EXPECT_EQ(ck.names.at(0), "person");
    EXPECT_EQ(ck.yaml.value("sppf_act", true), false);
    EXPECT_EQ(ck.train_args.value("imgsz", 0), 64);
    ASSERT_EQ(ck.state_dict.size(), st.tensors.size());
    for (size_t i = 0; i < st.tensors.size(); ++i) {
      const auto& [k, t] = st.tensors[i];
      EXPECT_EQ(ck.state_dict[i].first, k);
      const auto want = t.is_floating_point() ? t.to(torch::kHalf).to(torch::kFloat) : t;
      EXPECT_TRUE(torch::equal(ck.state_dict[i].second, want)) << stem << " " << k;
    }
  }

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

// save_pt=true's file in the reference itself (Ultralytics 8.4.50 from PyPI, test-only; skipped where it is not
// installed): its loader reads the fine-tuned weights bit-equal to ours in float16, and its validator's metrics on the
// file equal `yolo11 val` on the same file.
TEST(ValPt, TheReferenceLoadsAndValidatesAPtWeWrote) {
  std::string why;
  const std::string py = yolo11::test::reference_python(why);
  if (py.empty()) GTEST_SKIP() << why;
  const std::string src = YOLO11_TEST_SOURCE_DIR, dir = yolo11::test::scratch_dir("pt_reference");
  const std::string shapes3 = yolo11::test::dataset_dir("shapes3");
  const std::string datasets = fs::path(shapes3).parent_path().string();
  std::string log;
  // A short fine-tune of the shapes3 fixture: weights of our own whose metrics are far from 0.
  ASSERT_EQ(run_cli({"train", "model=" + pt_fixture("yolo11n_shapes3.pt"), "data=" + src + "/configs/datasets/shapes3.yaml",
                     "datasets_dir=" + datasets, "epochs=1", "fraction=0.1", "imgsz=256", "batch=8", "workers=0",
                     "threads=2", "seed=0", "plots=false", "instrument=off", "close_mosaic=0", "save_pt=true",
                     "project=" + dir, "name=t", "exist_ok=true"},
                    dir + "/train.log", log),
            0)
      << log;
  const std::string weights = dir + "/t/weights/best";
  ASSERT_TRUE(fs::exists(weights + ".pt")) << log;
  ASSERT_EQ(run_cli({"val", "weights=" + weights + ".pt", "data=" + src + "/configs/datasets/shapes3.yaml",
                     "datasets_dir=" + datasets, "imgsz=256", "batch=16", "workers=0", "threads=2", "plots=false",
                     "project=" + dir, "name=v", "exist_ok=true"},
                    dir + "/val.log", log),
            0)
      << log;
  const auto at = log.find("metrics (exact): ");
  ASSERT_NE(at, std::string::npos) << log;
  const auto ours = nlohmann::json::parse(log.substr(at + 17, log.find('\n', at) - at - 17));

  // The reference writes label caches beside the labels: it validates a copy.
  const fs::path copy = fs::path(dir) / "data" / "shapes3";
  fs::remove_all(copy);
  fs::create_directories(copy.parent_path());
  fs::copy(shapes3, copy, fs::copy_options::recursive);
  std::ofstream(copy.parent_path() / "shapes3.yaml")
      << "path: " << copy.string() << "\ntrain: images/train\nval: images/val\nnames:\n  0: rect\n  1: ellipse\n  2: triangle\n";
  const std::string out = dir + "/reference.json";
  ASSERT_EQ(yolo11::test::run(py, {src + "/tests/val/pt_reference.py", weights + ".pt", weights + ".safetensors",
                                   (copy.parent_path() / "shapes3.yaml").string(), "256", out},
                              dir + "/reference.log"),
            0)
      << yolo11::test::read_text(dir + "/reference.log");
  const auto ref = nlohmann::json::parse(yolo11::test::read_text(out));
  EXPECT_EQ(ref["class"], "DetectionModel");
  EXPECT_EQ(ref["state_dict"]["keys"], 499);
  EXPECT_EQ(ref["state_dict"]["ours"], 499);
  EXPECT_EQ(ref["state_dict"]["same_order"], true);
  EXPECT_TRUE(ref["state_dict"]["unequal"].empty()) << ref["state_dict"]["unequal"].dump();
  EXPECT_EQ(ref["stride"], nlohmann::json::parse("[8.0, 16.0, 32.0]"));
  const auto& m = ref["metrics"];
  EXPECT_GT(m.at("metrics/mAP50(B)").get<double>(), 0.05) << m.dump();
  EXPECT_NEAR(ours.at("precision").get<double>(), m.at("metrics/precision(B)").get<double>(), 1e-4) << m.dump();
  EXPECT_NEAR(ours.at("recall").get<double>(), m.at("metrics/recall(B)").get<double>(), 1e-4) << m.dump();
  EXPECT_NEAR(ours.at("mAP50").get<double>(), m.at("metrics/mAP50(B)").get<double>(), 1e-4) << m.dump();
  EXPECT_NEAR(ours.at("mAP50-95").get<double>(), m.at("metrics/mAP50-95(B)").get<double>(), 1e-4) << m.dump();
}
