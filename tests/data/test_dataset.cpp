// Dataset on the real coco128 set: summary counts, cache hit on the second scan, ram/disk image cache.
#include <gtest/gtest.h>

#include <filesystem>

#include "golden.h"
#include "yolo11/data/dataset.h"

using namespace yolo11::data;
namespace fs = std::filesystem;

TEST(Dataset, Coco128SummaryCountsBackgroundsAndInstances) {
  const std::string root = yolo11::test::dataset_dir("coco128");
  setenv("YOLO11_CACHE_DIR", yolo11::test::scratch_dir("coco128_cache").c_str(), 1);
  DatasetInfo info;
  info.root = root;
  info.nc = 80;
  DatasetOptions o;
  o.imgsz = 640;
  o.require_instances = true;
  Dataset ds({root + "/images/train2017"}, info, o);
  EXPECT_EQ(ds.size(), 128u);
  EXPECT_NE(ds.summary().find("128 images, 2 backgrounds, 0 corrupt, 929 instances"), std::string::npos)
      << ds.summary();
  Dataset again({root + "/images/train2017"}, info, o);
  EXPECT_TRUE(again.stats().from_cache);
  EXPECT_EQ(again.summary().substr(0, 60), ds.summary().substr(0, 60));
  const auto s = ds.load(0);
  EXPECT_EQ(std::max(s.img.rows, s.img.cols), 640);
  EXPECT_EQ(s.img.rows, ds.resized_shape(0)[0]);
  EXPECT_EQ(s.img.cols, ds.resized_shape(0)[1]);
}
