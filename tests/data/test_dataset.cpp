// Dataset on the real coco128 set: summary counts, cache hit on the second scan, ram/disk image cache.
#include <gtest/gtest.h>

#include <filesystem>

#include "golden.h"
#include "yolo11/data/dataset.h"

using namespace yolo11::data;
namespace fs = std::filesystem;

TEST(Dataset, Coco128SummaryCountsBackgroundsAndInstances) {
  const std::string root = yolo11::test::dataset_dir("coco128");
  setenv("YOLO11_CACHE_DIR", yolo11::test::scratch_dir("coco128_cache").c_str(), 1);  // shared/ is read-only
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

namespace {
// A writable copy of coco8/images/train + labels in scratch.
fs::path writable_coco8(const std::string& name) {
  const fs::path d = yolo11::test::scratch_dir(name);
  setenv("YOLO11_CACHE_DIR", (d / "usercache").c_str(), 1);
  const fs::path src = yolo11::test::dataset_dir("coco8");
  fs::create_directories(d / "images");
  fs::create_directories(d / "labels");
  fs::copy(src / "images" / "train", d / "images" / "train", fs::copy_options::recursive);
  fs::copy(src / "labels" / "train", d / "labels" / "train", fs::copy_options::recursive);
  for (auto& e : fs::recursive_directory_iterator(d))
    fs::permissions(e.path(), fs::perms::owner_write, fs::perm_options::add);
  fs::permissions(d / "images" / "train", fs::perms::owner_write, fs::perm_options::add);
  return d;
}
// .npy cache entries of one image beside it (a.jpg → a.jpg.<16 hex>.npy).
int npy_beside(const std::string& im) {
  int n = 0;
  const std::string prefix = fs::path(im).filename().string() + ".";
  for (const auto& e : fs::directory_iterator(fs::path(im).parent_path())) {
    const std::string f = e.path().filename().string();
    n += f.rfind(prefix, 0) == 0 && e.path().extension() == ".npy";
  }
  return n;
}
DatasetInfo info80(const fs::path& root) {
  DatasetInfo info;
  info.root = root.string();
  info.nc = 80;
  return info;
}
}  // namespace

TEST(ImageCache, RamAndDiskCachesGiveTheSamePixelsAsDecoding) {
  const fs::path d = writable_coco8("imgcache");
  const std::string src = (d / "images" / "train").string();
  DatasetOptions o;
  o.imgsz = 320;
  o.buffer = 0;
  Dataset plain({src}, info80(d), o);
  o.cache = yolo11::core::CacheMode::ram;
  Dataset ram({src}, info80(d), o);
  EXPECT_EQ(ram.cache_mode(), yolo11::core::CacheMode::ram);
  o.cache = yolo11::core::CacheMode::disk;
  Dataset disk({src}, info80(d), o);
  EXPECT_EQ(disk.cache_mode(), yolo11::core::CacheMode::disk);
  EXPECT_EQ(npy_beside(plain.im_file(0)), 1);  // beside the original: <name>.<stamp>.npy
  for (size_t i = 0; i < plain.size(); ++i) {
    const cv::Mat a = plain.load(i).img, b = ram.load(i).img, c = disk.load(i).img;
    EXPECT_EQ(cv::norm(a, b, cv::NORM_INF), 0.0);
    EXPECT_EQ(cv::norm(a, c, cv::NORM_INF), 0.0);
  }
  // The pixels come from the .npy: with the original gone, the disk cache still gives them.
  const cv::Mat first = plain.load(0).img;
  fs::remove(plain.im_file(0));
  EXPECT_EQ(cv::norm(first, disk.load(0).img, cv::NORM_INF), 0.0);
}

TEST(ImageCache, DiskCacheFallsBackWhenTheImageDirIsReadOnly) {
  const fs::path d = writable_coco8("imgcache_ro");
  const fs::path im = d / "images" / "train";
  fs::permissions(im, fs::perms::owner_write | fs::perms::group_write | fs::perms::others_write,
                  fs::perm_options::remove);
  DatasetOptions o;
  o.imgsz = 320;
  o.cache = yolo11::core::CacheMode::disk;
  Dataset ds({im.string()}, info80(d), o);
  fs::permissions(im, fs::perms::owner_write, fs::perm_options::add);
  EXPECT_EQ(npy_beside(ds.im_file(0)), 0);
  size_t n = 0;
  for (auto& e : fs::recursive_directory_iterator(d / "usercache")) n += e.path().extension() == ".npy";
  EXPECT_EQ(n, ds.size());
  EXPECT_EQ(ds.load(0).img.cols, 320);
}

TEST(ImageCache, RamCacheIsRefusedWhenTheEstimateExceedsAvailableMemory) {
  const fs::path d = writable_coco8("imgcache_big");
  DatasetOptions o;
  o.imgsz = 1000000;  // ~2e12 bytes per image: more than any test machine has
  o.cache = yolo11::core::CacheMode::ram;
  Dataset ds({(d / "images" / "train").string()}, info80(d), o);
  EXPECT_GT(ds.cache_bytes_estimate(), int64_t(4) << 40);
  EXPECT_EQ(ds.cache_mode(), yolo11::core::CacheMode::off);
}

TEST(Dataset, SingleClsAndFraction) {
  const fs::path d = writable_coco8("singlecls");
  DatasetOptions o;
  o.imgsz = 320;
  o.single_cls = true;
  o.fraction = 0.5;
  Dataset ds({(d / "images" / "train").string()}, info80(d), o);
  EXPECT_EQ(ds.size(), 2u);
  for (size_t i = 0; i < ds.size(); ++i)
    for (auto c : ds.labels(i).cls) EXPECT_EQ(c, 0);
}
