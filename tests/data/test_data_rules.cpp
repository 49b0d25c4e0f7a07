// Issue 16: wrong data from real-world dataset shapes is found, not trained on. One test per kind of fault; every
// fixture is generated here (images drawn with OpenCV, labels and lists written as text, zips built with libzip).
#include <gtest/gtest.h>

#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#if __has_include(<zip.h>)  // libzip-dev: tests/CMakeLists.txt links it with the library's zip support
#include <zip.h>
#define YOLO11_TEST_HAS_LIBZIP 1
#endif

#include "golden.h"
#include "yolo11/data/dataset.h"
#include "yolo11/data/dataset_info.h"
#include "yolo11/data/labels.h"
#include "yolo11/data/transforms.h"
#include "yolo11/data/unzip.h"
#include "yolo11/engine/schedule.h"
#include "util.h"

using namespace yolo11::data;
namespace fs = std::filesystem;
using yolo11::test::any_contains;
using yolo11::test::write_file;

namespace {

/// A 40×40 image of one flat colour (BGR), encoded by extension.
void write_image(const fs::path& p, cv::Scalar bgr) {
  fs::create_directories(p.parent_path());
  ASSERT_TRUE(cv::imwrite(p.string(), cv::Mat(40, 40, CV_8UC3, bgr))) << p;
}
DatasetInfo info_nc(const fs::path& root, int64_t nc) {
  DatasetInfo info;
  info.root = root.string();
  info.yaml = (root / "data.yaml").string();
  info.nc = nc;
  for (int64_t i = 0; i < nc; ++i) info.names.push_back("c" + std::to_string(i));
  return info;
}
DatasetOptions small() {
  DatasetOptions o;
  o.imgsz = 32;
  o.buffer = 0;
  o.threads = 1;
  return o;
}
size_t index_of(const Dataset& ds, const std::string& name) {
  for (size_t i = 0; i < ds.size(); ++i)
    if (fs::path(ds.im_file(i)).filename() == name) return i;
  ADD_FAILURE() << name << " not in the dataset";
  return 0;
}
const char* kBox = "0 0.5 0.5 0.5 0.5\n";

}  // namespace

// 1. cache=disk keys its .npy on the exact file: a.jpg and a.png (one folder, one stem) each get their own pixels, a
//    changed image is decoded again, and the two images sharing labels/a.txt are reported.
TEST(DataRules, DiskCacheIsTiedToTheExactImageFileAndSameStemImagesAreReported) {
  const fs::path d = yolo11::test::scratch_dir("same_stem");
  setenv("YOLO11_CACHE_DIR", (d / "usercache").c_str(), 1);
  write_image(d / "images" / "a.jpg", {200, 0, 0});  // blue
  write_image(d / "images" / "a.png", {0, 0, 200});  // red
  write_file(d / "labels" / "a.txt", kBox);
  DatasetOptions o = small();
  o.cache = yolo11::core::CacheMode::disk;
  {
    Dataset ds({(d / "images").string()}, info_nc(d, 1), o);
    ASSERT_EQ(ds.size(), 2u);
    EXPECT_EQ(ds.stats().shared_labels, 1);
    EXPECT_TRUE(any_contains(ds.warnings(), "share the label file " + (d / "labels" / "a.txt").string()))
        << ds.summary();
    EXPECT_NE(ds.summary().find("1 images sharing a label file"), std::string::npos) << ds.summary();
    const cv::Mat png = ds.load(index_of(ds, "a.png")).img, jpg = ds.load(index_of(ds, "a.jpg")).img;
    EXPECT_EQ(png.at<cv::Vec3b>(5, 5), cv::Vec3b(0, 0, 200));  // its own pixels, not a.jpg's
    EXPECT_GT(jpg.at<cv::Vec3b>(5, 5)[0], 190);
  }
  // The image changes (new content, new mtime): the cache entry is not reused, and the stale one is removed.
  write_image(d / "images" / "a.png", {0, 200, 0});
  fs::last_write_time(d / "images" / "a.png", fs::last_write_time(d / "images" / "a.png") + std::chrono::seconds(5));
  Dataset again({(d / "images").string()}, info_nc(d, 1), o);
  EXPECT_EQ(again.load(index_of(again, "a.png")).img.at<cv::Vec3b>(5, 5), cv::Vec3b(0, 200, 0));
  int entries = 0;
  for (const auto& e : fs::directory_iterator(d / "images"))
    entries += e.path().filename().string().rfind("a.png.", 0) == 0 && e.path().extension() == ".npy";
  EXPECT_EQ(entries, 1);
}

// 2. Hidden directories (.ipynb_checkpoints) and hidden / AppleDouble files are not dataset content.
TEST(DataRules, HiddenFilesAndDirectoriesAreSkippedAndCounted) {
  const fs::path d = yolo11::test::scratch_dir("hidden");
  write_image(d / "images" / "train" / "a.jpg", {90, 90, 90});
  write_image(d / "images" / "train" / ".ipynb_checkpoints" / "a-checkpoint.jpg", {90, 90, 90});
  write_image(d / "images" / "train" / ".ipynb_checkpoints" / "deeper" / "b.jpg", {90, 90, 90});
  write_image(d / "images" / "train" / "._a.jpg", {90, 90, 90});  // macOS AppleDouble
  write_file(d / "labels" / "train" / "a.txt", kBox);
  ListReport rep;
  const auto files = list_images((d / "images" / "train").string(), &rep);
  ASSERT_EQ(files.size(), 1u);
  EXPECT_EQ(fs::path(files[0]).filename(), "a.jpg");
  EXPECT_EQ(rep.hidden, 3);
  Dataset ds({(d / "images" / "train").string()}, info_nc(d, 1), small());
  EXPECT_EQ(ds.size(), 1u);
  EXPECT_EQ(ds.stats().hidden, 3);
  EXPECT_NE(ds.summary().find("3 hidden files skipped"), std::string::npos) << ds.summary();
  EXPECT_TRUE(any_contains(ds.warnings(), "3 image(s) in hidden files or directories skipped")) << ds.summary();
}

// 3. List files: BOM, CRLF, comments and Windows separators are read; missing files, non-images and drive paths are
//    reported with file:line, never silently dropped.
TEST(DataRules, ListFileLinesGetLabelFileHygieneAndUnusableLinesAreReported) {
  const fs::path d = yolo11::test::scratch_dir("listfile");
  for (const char* n : {"a.jpg", "b.jpg", "c.jpg"}) write_image(d / "images" / n, {60, 60, 60});
  write_file(d / "train.txt",
             "\xEF\xBB\xBF./images/a.jpg\r\n"  // 1: BOM + CRLF
             "# a comment\r\n"                  // 2
             "images\\b.jpg\r\n"                // 3: Windows separator
             "\r\n"                             // 4: blank
             "images/missing.jpg\n"             // 5: does not exist
             "C:\\data\\images\\c.jpg\n"        // 6: drive path
             "notes.md\n"                       // 7: not an image
             "  images/c.jpg  \n");             // 8: surrounding spaces
  ListReport rep;
  const auto files = list_images((d / "train.txt").string(), &rep);
  ASSERT_EQ(files.size(), 3u);
  EXPECT_EQ(files[0], (d / "images" / "a.jpg").string());
  EXPECT_EQ(files[1], (d / "images" / "b.jpg").string());
  EXPECT_EQ(files[2], (d / "images" / "c.jpg").string());
  EXPECT_EQ(rep.unusable_lines, 3);
  const std::string list = (d / "train.txt").string();
  EXPECT_TRUE(any_contains(rep.warnings, list + ":5: listed image")) << rep.warnings.size();
  EXPECT_TRUE(any_contains(rep.warnings, list + ":6: Windows drive path"));
  EXPECT_TRUE(any_contains(rep.warnings, list + ":7: 'notes.md' is not an image file"));
}

// 4. 1-based class ids (names of length 3, ids 1..3) stop the run with one error; ids beyond nc in a 0-based dataset
//    skip their images with one summary.
TEST(DataRules, OneBasedClassIdsAreAnErrorAndOtherOutOfRangeIdsAreSummarised) {
  const fs::path d = yolo11::test::scratch_dir("class_ids");
  for (int i = 0; i < 4; ++i) write_image(d / "images" / ("im" + std::to_string(i) + ".jpg"), {80, 80, 80});
  write_file(d / "labels" / "im0.txt", "1 0.5 0.5 0.2 0.2\n");
  write_file(d / "labels" / "im1.txt", "2 0.5 0.5 0.2 0.2\n");
  write_file(d / "labels" / "im2.txt", "1 0.3 0.3 0.2 0.2\n3 0.5 0.5 0.2 0.2\n");
  write_file(d / "labels" / "im3.txt", "3 0.5 0.5 0.2 0.2\n");
  DatasetOptions o = small();
  try {
    Dataset ds({(d / "images").string()}, info_nc(d, 3), o);
    FAIL() << "1-based ids were accepted: " << ds.summary();
  } catch (const std::runtime_error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("class ids are 0-based"), std::string::npos) << m;
    EXPECT_NE(m.find("largest class id in the labels is 3 = nc 3"), std::string::npos) << m;
    EXPECT_NE(m.find((d / "labels" / "im2.txt").string() + ":2"), std::string::npos) << m;  // first offending row
  }
  // The same ids with a 0 somewhere: 0-based after all, so only the images holding id 3 are skipped, and said so.
  write_file(d / "labels" / "im0.txt", "0 0.5 0.5 0.2 0.2\n");
  Dataset ds({(d / "images").string()}, info_nc(d, 3), o);
  EXPECT_EQ(ds.size(), 2u);
  EXPECT_EQ(ds.stats().oob_rows, 2);
  EXPECT_EQ(ds.stats().oob_images, 2);
  EXPECT_EQ(ds.stats().max_cls, 3);
  EXPECT_TRUE(any_contains(ds.warnings(), "2 label row(s) in 2 image(s) have a class id >= nc 3 (largest 3, first at " +
                                              (d / "labels" / "im2.txt").string() + ":2)"))
      << ds.summary();
  // The label cache keeps what the check needs: a second scan (from the cache) decides the same.
  Dataset cached({(d / "images").string()}, info_nc(d, 3), o);
  EXPECT_TRUE(cached.stats().from_cache);
  EXPECT_EQ(cached.stats().oob_rows, 2);
}

// 6. `channels:` other than 3 is a clear error (no silent 3-channel model); unknown keys are warned about.
TEST(DataRules, ChannelsOtherThanThreeIsAnErrorAndUnknownYamlKeysAreWarned) {
  const fs::path d = yolo11::test::scratch_dir("channels");
  write_image(d / "images" / "a.jpg", {1, 2, 3});
  write_file(d / "gray.yaml", "path: .\ntrain: images\nval: images\nnames: [a]\nchannels: 1\n");
  try {
    load_dataset_yaml((d / "gray.yaml").string());
    FAIL() << "channels: 1 was accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("`channels: 1` is not supported"), std::string::npos) << e.what();
  }
  write_file(d / "ok.yaml",
             "path: .\ntrain: images\nval: images\nnames: [a]\nchannels: 3\nkpt_shape: [17, 3]\nfoo: 1\n");
  const auto info = load_dataset_yaml((d / "ok.yaml").string());
  ASSERT_EQ(info.warnings.size(), 1u);
  EXPECT_NE(info.warnings[0].find("keys not used by this trainer (detection): kpt_shape, foo"), std::string::npos)
      << info.warnings[0];
}

// 8. data=ds.zip is unpacked (once) into datasets_dir and its YAML read; unsafe entries unpack nothing.
#if YOLO11_TEST_HAS_LIBZIP
namespace {
void make_zip(const fs::path& zip, const std::vector<std::pair<std::string, std::string>>& entries) {
  int err = 0;
  zip_t* z = zip_open(zip.c_str(), ZIP_CREATE | ZIP_TRUNCATE, &err);
  ASSERT_NE(z, nullptr);
  for (const auto& [name, bytes] : entries) {  // `entries` outlives zip_close, which reads the buffers
    zip_source_t* s = zip_source_buffer(z, bytes.data(), bytes.size(), 0);
    ASSERT_GE(zip_file_add(z, name.c_str(), s, ZIP_FL_OVERWRITE), 0) << name;
  }
  ASSERT_EQ(zip_close(z), 0);
}
std::string png_bytes() {
  std::vector<uchar> b;
  cv::imencode(".png", cv::Mat(40, 40, CV_8UC3, cv::Scalar(10, 20, 30)), b);
  return std::string(b.begin(), b.end());
}
/// A one-image dataset zip: the YAML at `yaml_entry`, x.png and its label under `root`/{images,labels}/train.
void make_dataset_zip(const fs::path& zip, const std::string& yaml_entry, const std::string& yaml,
                      const std::string& root) {
  make_zip(zip, {{yaml_entry, yaml}, {root + "/images/train/x.png", png_bytes()}, {root + "/labels/train/x.txt", kBox}});
}
}  // namespace

TEST(DataRules, ZipDatasetIsUnpackedSafelyIntoDatasetsDir) {
  if (!has_zip_support()) GTEST_SKIP() << "built without libzip";
  const fs::path d = yolo11::test::scratch_dir("zip");
  const fs::path datasets = d / "datasets";
  make_dataset_zip(d / "tiny.zip", "tiny/tiny.yaml", "path: tiny\ntrain: images/train\nval: images/train\nnames: [a]\n",
                   "tiny");
  const auto info = load_dataset_yaml((d / "tiny.zip").string(), datasets.string());
  EXPECT_EQ(info.root, (datasets / "tiny").string());
  ASSERT_EQ(info.train.size(), 1u);
  EXPECT_EQ(list_images(info.train[0]).size(), 1u);
  EXPECT_TRUE(fs::exists(datasets / "tiny" / "labels" / "train" / "x.txt"));
  // Unchanged zip: not unpacked again (a file added by the user stays).
  write_file(datasets / "tiny" / "mine.txt", "kept");
  load_dataset_yaml((d / "tiny.zip").string(), datasets.string());
  EXPECT_TRUE(fs::exists(datasets / "tiny" / "mine.txt"));

  make_zip(d / "evil.zip", {{"evil/evil.yaml", "names: [a]\n"}, {"evil/../../escaped.txt", "x"}});
  try {
    load_dataset_yaml((d / "evil.zip").string(), datasets.string());
    FAIL() << "path traversal accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("is unsafe ('..' component)"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(d / "escaped.txt"));
  EXPECT_FALSE(fs::exists(datasets / "evil"));
  // A zip without the extension is named as a zip, not a YAML parse error on binary bytes.
  fs::copy_file(d / "tiny.zip", d / "tiny.data");
  try {
    load_dataset_yaml((d / "tiny.data").string(), datasets.string());
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("is a zip archive"), std::string::npos) << e.what();
  }
}

// A zip's YAML with `path: .` (or a relative path) is rooted in the unpacked folder, not in datasets_dir.
TEST(DataRules, ZipDatasetPathIsRelativeToItsUnpackedYaml) {
  if (!has_zip_support()) GTEST_SKIP() << "built without libzip";
  const fs::path d = yolo11::test::scratch_dir("zip_path");
  const fs::path datasets = d / "datasets";
  make_dataset_zip(d / "dot.zip", "dot/data.yaml", "path: .\ntrain: images/train\nval: images/train\nnames: [a]\n", "dot");
  const auto dot = load_dataset_yaml((d / "dot.zip").string(), datasets.string());
  EXPECT_EQ(dot.root, (datasets / "dot").string());
  ASSERT_EQ(dot.train.size(), 1u);
  EXPECT_EQ(dot.train[0], (datasets / "dot" / "images" / "train").string());
  EXPECT_EQ(list_images(dot.train[0]).size(), 1u);

  // A relative path naming a folder inside the unpacked tree; a path elsewhere (another machine's) means the YAML's
  // folder, as Ultralytics roots a zip at its YAML's folder.
  make_dataset_zip(d / "sub.zip", "sub/data.yaml", "path: data\ntrain: images/train\nval: images/train\nnames: [a]\n",
                   "sub/data");
  EXPECT_EQ(load_dataset_yaml((d / "sub.zip").string(), datasets.string()).root, (datasets / "sub" / "data").string());
  make_dataset_zip(d / "far.zip", "far/data.yaml",
                   "path: ../elsewhere/far\ntrain: images/train\nval: images/train\nnames: [a]\n", "far");
  fs::create_directories(datasets / "elsewhere" / "far");  // exists, but outside what the zip unpacked
  EXPECT_EQ(load_dataset_yaml((d / "far.zip").string(), datasets.string()).root, (datasets / "far").string());
}
#endif

// 9. Tiny datasets: warmup (at least 100 iterations) spans more than warmup_epochs, or the whole run — said so.
TEST(DataRules, WarmupLongerThanWarmupEpochsIsWarned) {
  yolo11::engine::SchedulerOptions o;
  o.epochs = 3;
  o.nb = 1;  // 8 images, batch 16
  o.warmup_epochs = 3;
  const std::string w = yolo11::engine::warmup_warning(o);
  EXPECT_NE(w.find("1 batch(es) per epoch that is 100.0 epochs, not warmup_epochs=3"), std::string::npos) << w;
  EXPECT_NE(w.find("the whole run is warmup"), std::string::npos) << w;
  o.nb = 50;  // 100 iterations = 2 epochs < 3: no warning
  EXPECT_EQ(yolo11::engine::warmup_warning(o), "");
  o.nb = 20;
  o.epochs = 100;  // 5 epochs of warmup, of a 100-epoch run
  const std::string w2 = yolo11::engine::warmup_warning(o);
  EXPECT_NE(w2.find("that is 5.0 epochs"), std::string::npos) << w2;
  EXPECT_EQ(w2.find("whole run"), std::string::npos) << w2;
}
