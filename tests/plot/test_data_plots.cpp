// Pictures are written, decodable and sized as documented; the synthetic dataset round-trips through Dataset.
#include <gtest/gtest.h>

#include <opencv2/imgcodecs.hpp>

#include <filesystem>

#include "golden.h"
#include "yolo11/data/loader.h"
#include "yolo11/plot/data_plots.h"
#include "yolo11/data/synth.h"
#include "yolo11/io/file.h"

using namespace yolo11::data;
using namespace yolo11::plot;
namespace fs = std::filesystem;

TEST(Synth, ASmallerDatasetIntoTheSameFolderReplacesTheOlderOneAndABadExtIsAClearError) {
  const fs::path d = yolo11::test::scratch_dir("synth_again");
  SynthOptions so;
  so.imgsz = 64;
  so.train = 5;
  so.val = 3;
  write_synthetic_dataset((d / "ds").string(), so);
  fs::create_directories(d / "ds" / "images" / "train" / "keep");
  yolo11::io::write_file_atomic((d / "ds" / "images" / "train" / "mine.png").string(), "x");  // not synth's: kept
  so.train = 2;
  so.val = 1;
  write_synthetic_dataset((d / "ds").string(), so);
  auto count = [&](const char* sub) {
    int n = 0;
    for (const auto& e : fs::directory_iterator(d / "ds" / sub))
      n += e.is_regular_file() && e.path().filename().string() != "mine.png";
    return n;
  };
  EXPECT_EQ(count("images/train"), 2);
  EXPECT_EQ(count("labels/train"), 2);
  EXPECT_EQ(count("images/val"), 1);
  EXPECT_TRUE(fs::exists(d / "ds" / "images" / "train" / "mine.png"));
  so.ext = ".gif";
  try {
    write_synthetic_dataset((d / "gif").string(), so);
    ADD_FAILURE() << ".gif accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("ext=.gif is not an image format it writes"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(d / "gif"));  // checked before anything is written
}

TEST(Synth, WritesExactLabelsThatTheDatasetAccepts) {
  const fs::path d = yolo11::test::scratch_dir("synth");
  setenv("YOLO11_CACHE_DIR", (d / "usercache").c_str(), 1);
  SynthOptions so;
  so.train = 6;
  so.val = 2;
  so.imgsz = 128;
  const std::string y = write_synthetic_dataset((d / "ds").string(), so);
  const auto info = load_dataset_yaml(y);
  EXPECT_EQ(info.nc, 3);
  DatasetOptions o;
  o.imgsz = 128;
  o.require_instances = true;
  auto ds = std::make_shared<Dataset>(info.train, info, o);
  EXPECT_EQ(ds->size(), 6u);
  EXPECT_EQ(ds->stats().corrupt, 0);
  EXPECT_TRUE(ds->warnings().empty());
  // deterministic: same seed → same bytes
  write_synthetic_dataset((d / "ds2").string(), so);
  for (auto& e : fs::directory_iterator(d / "ds" / "labels" / "train"))
    EXPECT_EQ(yolo11::io::read_file(e.path().string()),
              yolo11::io::read_file((d / "ds2" / "labels" / "train" / e.path().filename()).string()));

  // plots of a training batch, a prediction overlay and labels.jpg
  AugmentOptions aug;
  aug.imgsz = 128;
  Loader l(ds, aug, LoaderOptions{.batch = 4, .workers = 1});
  auto b = l.next();
  ASSERT_TRUE(b);
  plot_images(*b, info.names, (d / "train_batch0.jpg").string());
  const cv::Mat m = cv::imread((d / "train_batch0.jpg").string());
  EXPECT_EQ(m.rows, 256);  // 2×2 grid of 128 px tiles
  EXPECT_EQ(m.cols, 256);
  std::vector<at::Tensor> preds(4, torch::tensor({{10.f, 10.f, 60.f, 60.f, 0.9f, 1.f}}));
  plot_images(*b, info.names, (d / "val_batch0_pred.jpg").string(), &preds);
  EXPECT_FALSE(cv::imread((d / "val_batch0_pred.jpg").string()).empty());
  plot_labels(*ds, (d / "labels.jpg").string());
  const cv::Mat labels = cv::imread((d / "labels.jpg").string());
  ASSERT_FALSE(labels.empty());
  EXPECT_EQ(labels.size(), cv::Size(1400, 1140));  // bar chart on top, two density panels under it
}
