// Pictures are written, decodable and sized as documented; the synthetic dataset round-trips through Dataset.
#include <gtest/gtest.h>

#include <opencv2/imgcodecs.hpp>

#include <filesystem>

#include "golden.h"
#include "yolo11/data/loader.h"
#include "yolo11/data/plots.h"
#include "yolo11/data/synth.h"
#include "yolo11/io/file.h"

using namespace yolo11::data;
namespace fs = std::filesystem;

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
  EXPECT_FALSE(cv::imread((d / "labels.jpg").string()).empty());
}
