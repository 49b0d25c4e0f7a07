// One test per bad-input kind: each has its defined outcome and shows up in the scan summary. Fixtures are built
// in a scratch dir by the tests (nothing binary committed).
#include <gtest/gtest.h>

#include <opencv2/imgcodecs.hpp>

#include <filesystem>
#include <fstream>

#include "golden.h"
#include "yolo11/data/dataset.h"
#include "yolo11/data/labels.h"
#include "yolo11/io/file.h"
#include "util.h"

using namespace yolo11::data;
namespace fs = std::filesystem;
using yolo11::test::any_contains;
using yolo11::test::write_file;

namespace {
std::string encode(const cv::Mat& m, const std::string& ext) {
  std::vector<uchar> b;
  EXPECT_TRUE(cv::imencode(ext, m, b));
  return std::string(b.begin(), b.end());
}
cv::Mat gradient(int h, int w) {
  cv::Mat m(h, w, CV_8UC3);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) m.at<cv::Vec3b>(y, x) = cv::Vec3b(x % 256, y % 256, (x + y) % 256);
  return m;
}
LabelParse parse(const std::string& name, const std::string& text, int64_t nc = 3) {
  const fs::path d = yolo11::test::scratch_dir("labels_" + name);
  write_file(d / "a.txt", text);
  return parse_label_file((d / "a.txt").string(), nc);
}
}  // namespace

// ---- paths ------------------------------------------------------------------------------------------------------
TEST(Paths, LabelPathReplacesOnlyLastImagesComponentAndLastExtension) {
  EXPECT_EQ(img2label_path("/d/images/train/a.jpg"), "/d/labels/train/a.txt");
  EXPECT_EQ(img2label_path("/x/images/d/images/train/a.b.JPG"), "/x/images/d/labels/train/a.b.txt");
  EXPECT_EQ(img2label_path("/d.v1/images/noext"), "/d.v1/labels/noext.txt");
  EXPECT_EQ(img2label_path("/my images/images/ä ö.png"), "/my images/labels/ä ö.txt");
}

TEST(Paths, LabelPathComesFromThePathAsGivenNotTheSymlinkTarget) {
  const fs::path d = yolo11::test::scratch_dir("symlink");
  write_file(d / "real" / "store" / "a.png", encode(gradient(20, 20), ".png"));
  fs::create_directories(d / "ds" / "images");
  fs::create_symlink(d / "real" / "store" / "a.png", d / "ds" / "images" / "a.png");
  const auto files = list_images((d / "ds" / "images").string());
  ASSERT_EQ(files.size(), 1u);
  EXPECT_EQ(img2label_path(files[0]), (d / "ds" / "labels" / "a.txt").string());
}

TEST(Paths, ImageExtensionsAnyCaseSpacesAndNonAsciiNamesAreListed) {
  const fs::path d = yolo11::test::scratch_dir("listing");
  const std::string png = encode(gradient(12, 12), ".png");
  for (const char* n : {"a.JPG", "b.jpeg", "c.Png", "d e.bmp", "é.tif", "f.webp", "g.txt", "h.gif"})
    write_file(d / "images" / n, png);
  write_file(d / "images" / "sub" / "z.png", png);
  const auto files = list_images((d / "images").string());
  EXPECT_EQ(files.size(), 7u);  // not .txt, not .gif
  // .txt list with relative paths (resolved against the list's dir)
  write_file(d / "list.txt", "./images/a.JPG\r\nimages/sub/z.png\n\n");
  const auto l = list_images((d / "list.txt").string());
  ASSERT_EQ(l.size(), 2u);
  EXPECT_EQ(l[0], (d / "images" / "a.JPG").string());
  EXPECT_THROW(list_images((d / "nope").string()), std::runtime_error);
}

// ---- images -----------------------------------------------------------------------------------------------------
TEST(ReadImage, GrayscaleBecomesThreeChannels) {
  const fs::path d = yolo11::test::scratch_dir("gray");
  cv::Mat g(16, 16, CV_8UC1, cv::Scalar(77));
  write_file(d / "g.png", encode(g, ".png"));
  const cv::Mat m = read_image((d / "g.png").string());
  EXPECT_EQ(m.type(), CV_8UC3);
  EXPECT_EQ(m.at<cv::Vec3b>(3, 3), cv::Vec3b(77, 77, 77));
}

TEST(ReadImage, SixteenBitIsScaledNotTruncatedToHighByte) {
  const fs::path d = yolo11::test::scratch_dir("u16");
  // 65280 → 254.0 and 200 → 0.78 → 1 when scaled by 255/65535; the high byte would give 255 and 0
  cv::Mat g(16, 16, CV_16UC3, cv::Scalar(65280, 200, 65535));
  write_file(d / "g.png", encode(g, ".png"));
  const cv::Mat m = read_image((d / "g.png").string());
  EXPECT_EQ(m.type(), CV_8UC3);
  EXPECT_EQ(m.at<cv::Vec3b>(0, 0), cv::Vec3b(254, 1, 255));
}

TEST(ReadImage, AlphaChannelIsDropped) {
  const fs::path d = yolo11::test::scratch_dir("alpha");
  cv::Mat g(16, 16, CV_8UC4, cv::Scalar(10, 20, 30, 0));
  write_file(d / "g.png", encode(g, ".png"));
  const cv::Mat m = read_image((d / "g.png").string());
  EXPECT_EQ(m.type(), CV_8UC3);
  EXPECT_EQ(m.at<cv::Vec3b>(0, 0), cv::Vec3b(10, 20, 30));
}

TEST(ReadImage, ExifOrientationIsApplied) {
  const fs::path d = yolo11::test::scratch_dir("exif");
  cv::Mat img(20, 40, CV_8UC3, cv::Scalar(0, 0, 0));
  img(cv::Rect(0, 0, 20, 20)).setTo(cv::Scalar(255, 255, 255));  // left half white
  std::string jpg = encode(img, ".jpg");
  // APP1 Exif, big-endian TIFF, IFD0 with one entry: Orientation (0x0112) SHORT = 6 (rotate 90° clockwise)
  const std::string tiff("MM\x00\x2A\x00\x00\x00\x08" "\x00\x01" "\x01\x12\x00\x03\x00\x00\x00\x01\x00\x06\x00\x00"
                         "\x00\x00\x00\x00", 26);
  const std::string payload = std::string("Exif\0\0", 6) + tiff;
  const size_t len = payload.size() + 2;
  const std::string app1 = std::string("\xFF\xE1", 2) + static_cast<char>(len >> 8) + static_cast<char>(len & 0xFF) + payload;
  jpg.insert(2, app1);
  write_file(d / "r.jpg", jpg);
  const cv::Mat m = read_image((d / "r.jpg").string());
  EXPECT_EQ(m.rows, 40);
  EXPECT_EQ(m.cols, 20);
  EXPECT_GT(m.at<cv::Vec3b>(2, 10)[0], 200);  // the white left half is now on top
  EXPECT_LT(m.at<cv::Vec3b>(37, 10)[0], 50);
}

TEST(ReadImage, ZeroByteTruncatedAndGarbageFilesThrowNamingTheFile) {
  const fs::path d = yolo11::test::scratch_dir("corrupt");
  write_file(d / "zero.jpg", "");
  const std::string jpg = encode(gradient(64, 64), ".jpg"), png = encode(gradient(64, 64), ".png");
  write_file(d / "trunc.jpg", jpg.substr(0, jpg.size() / 2));
  write_file(d / "trunc.png", png.substr(0, png.size() - 20));
  write_file(d / "garbage.png", "this is not an image at all, just text");
  for (const char* n : {"zero.jpg", "trunc.jpg", "trunc.png", "garbage.png"}) {
    try {
      read_image((d / n).string());
      ADD_FAILURE() << n << " did not throw";
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find(n), std::string::npos) << e.what();
    }
  }
}

// ---- label rows -------------------------------------------------------------------------------------------------
TEST(LabelParse, WrongColumnCountSkipsImageWithFileLine) {
  auto r = parse("cols", "0 0.5 0.5 0.2 0.2\n1 0.5 0.5 0.2\n");
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.error.find("a.txt:2"), std::string::npos) << r.error;
}
TEST(LabelParse, NonNumericFieldSkipsImage) {
  auto r = parse("nan", "0 0.5 abc 0.2 0.2\n");
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.error.find("a.txt:1"), std::string::npos);
  EXPECT_NE(r.error.find("abc"), std::string::npos);
}
TEST(LabelParse, CoordinateOutsideUnitRangeBeyondToleranceSkipsImage) {
  EXPECT_FALSE(parse("neg", "0 -0.2 0.5 0.2 0.2\n").ok);
  EXPECT_FALSE(parse("big", "0 0.5 1.2 0.2 0.2\n").ok);
  auto r = parse("tol", "0 1.0004 0.5 0.2 0.2\n");  // within 0.001: clipped
  ASSERT_TRUE(r.ok);
  EXPECT_EQ(r.rows[0].xywhn[0], 1.0f);
}
TEST(LabelParse, NegativeSizeSkipsImage) {
  auto r = parse("negsize", "0 0.5 0.5 0.2 0.2\n0 0.5 0.5 -0.0005 0.2\n");
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.error.find("a.txt:2"), std::string::npos);
}
TEST(LabelParse, ClassOutOfRangeOrNonIntegerSkipsImage) {
  auto r = parse("cls", "0 0.5 0.5 0.2 0.2\n3 0.5 0.5 0.2 0.2\n", 3);
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.error.find("a.txt:2"), std::string::npos);
  EXPECT_NE(r.error.find(">= nc 3"), std::string::npos);
  EXPECT_FALSE(parse("cls2", "1.5 0.5 0.5 0.2 0.2\n").ok);
  EXPECT_FALSE(parse("cls3", "-1 0.5 0.5 0.2 0.2\n").ok);
}
TEST(LabelParse, DuplicateRowsAreRemovedWithWarning) {
  auto r = parse("dup", "0 0.5 0.5 0.2 0.2\n0 0.5 0.5 0.2 0.2\n1 0.5 0.5 0.2 0.2\n");
  ASSERT_TRUE(r.ok);
  EXPECT_EQ(r.rows.size(), 2u);
  EXPECT_TRUE(any_contains(r.warnings, "a.txt:2: duplicate row removed"));
}
TEST(LabelParse, PolygonRowsBecomeBoxes) {
  auto r = parse("poly", "2 0.1 0.2 0.5 0.2 0.3 0.6\n");
  ASSERT_TRUE(r.ok);
  ASSERT_EQ(r.rows.size(), 1u);
  EXPECT_EQ(r.rows[0].cls, 2);
  EXPECT_FLOAT_EQ(r.rows[0].xywhn[0], 0.3f);
  EXPECT_FLOAT_EQ(r.rows[0].xywhn[1], 0.4f);
  EXPECT_FLOAT_EQ(r.rows[0].xywhn[2], 0.4f);
  EXPECT_FLOAT_EQ(r.rows[0].xywhn[3], 0.4f);
}
TEST(LabelParse, BlankLinesCrlfBomAndTrailingSpacesAreAccepted) {
  auto r = parse("fmt", "\xEF\xBB\xBF" "0 0.5 0.5 0.2 0.2  \r\n\r\n   \n\t1 0.25 0.25 0.1 0.1\r\n");
  ASSERT_TRUE(r.ok) << r.error;
  ASSERT_EQ(r.rows.size(), 2u);
  EXPECT_EQ(r.rows[1].line, 4);
}
TEST(LabelParse, MissingFileIsBackground) {
  const auto r = parse_label_file((yolo11::test::scratch_dir("missing") + "/none.txt"), 3);
  EXPECT_TRUE(r.ok);
  EXPECT_TRUE(r.missing);
  EXPECT_TRUE(r.rows.empty());
}

// ---- a whole split with every kind of defect ----------------------------------------------------------------------
namespace {
struct BadSplit {
  fs::path root;
  DatasetInfo info;
  BadSplit() {
    root = yolo11::test::scratch_dir("bad_split");
    setenv("YOLO11_CACHE_DIR", (root / "usercache").c_str(), 1);
    const fs::path im = root / "images" / "train", lb = root / "labels" / "train";
    const std::string png = encode(gradient(100, 120), ".png"), jpg = encode(gradient(64, 64), ".jpg");
    write_file(im / "good1.png", png);
    write_file(lb / "good1.txt", "0 0.5 0.5 0.2 0.2\n1 0.3 0.3 0.1 0.1\n");
    write_file(im / "good2.PNG", png);
    write_file(lb / "good2.txt", "2 0.5 0.5 0.4 0.4\n2 0.5 0.5 0.4 0.4\n");        // duplicate
    write_file(im / "degenerate.png", png);
    write_file(lb / "degenerate.txt", "0 0.5 0.5 0.3 0.3\n0 0.5 0.5 0.0 0.3\n0 0.5 0.5 0.001 0.3\n");  // 2 dropped
    write_file(im / "background.png", png);                                       // no label file
    write_file(im / "empty_label.png", png);
    write_file(lb / "empty_label.txt", "\n");
    write_file(im / "zero.jpg", "");
    write_file(im / "trunc.jpg", jpg.substr(0, jpg.size() / 2));
    write_file(im / "badlabel.png", png);
    write_file(lb / "badlabel.txt", "0 0.5 0.5 0.2 0.2\n7 0.5 0.5 0.2 0.2\n");   // class 7 ≥ nc 3
    write_file(lb / "orphan.txt", "0 0.5 0.5 0.2 0.2\n");                        // label without image
    info.root = root.string();
    info.nc = 3;
    info.names = {"a", "b", "c"};
  }
};
}  // namespace

TEST(Scan, SummaryCountsEveryDefectAndWarningsNameFileAndLine) {
  BadSplit s;
  DatasetOptions o;
  o.imgsz = 120;
  Dataset ds({(s.root / "images" / "train").string()}, s.info, o);
  EXPECT_EQ(ds.size(), 5u);  // good1, good2, degenerate, background, empty_label
  EXPECT_EQ(ds.stats().corrupt, 3);
  EXPECT_EQ(ds.stats().missing, 1);
  EXPECT_EQ(ds.stats().empty, 1);
  EXPECT_EQ(ds.stats().duplicates, 1);
  EXPECT_NE(ds.summary().find("8 images, 2 backgrounds, 3 corrupt, 4 instances, 1 duplicate removed, 2 degenerate boxes"),
            std::string::npos)
      << ds.summary();
  EXPECT_TRUE(any_contains(ds.warnings(), "badlabel.txt:2"));
  EXPECT_TRUE(any_contains(ds.warnings(), "degenerate.txt:2: degenerate box dropped"));
  EXPECT_TRUE(any_contains(ds.warnings(), "degenerate.txt:3: degenerate box dropped"));  // 0.12 px at imgsz 120
  EXPECT_TRUE(any_contains(ds.warnings(), "zero.jpg is empty"));
  EXPECT_TRUE(any_contains(ds.warnings(), "trunc.jpg is a truncated JPEG"));
  EXPECT_FALSE(any_contains(ds.warnings(), "orphan"));
}

TEST(Scan, CacheIsReusedAndRebuiltOnSameSizeEditAndWhenUnreadable) {
  BadSplit s;
  DatasetOptions o;
  o.imgsz = 120;
  const std::string src = (s.root / "images" / "train").string();
  { Dataset a({src}, s.info, o); EXPECT_FALSE(a.stats().from_cache); }
  Dataset b({src}, s.info, o);
  EXPECT_TRUE(b.stats().from_cache);
  EXPECT_EQ(b.stats().cache_path, (s.root / "labels" / "train.yolo11.cache").string());
  // same byte count, same mtime: only the content hash can tell
  const fs::path lab = s.root / "labels" / "train" / "good1.txt";
  const auto mt = fs::last_write_time(lab);
  write_file(lab, "1 0.5 0.5 0.2 0.2\n1 0.3 0.3 0.1 0.1\n");
  fs::last_write_time(lab, mt);
  Dataset c({src}, s.info, o);
  EXPECT_FALSE(c.stats().from_cache);
  bool found = false;
  for (size_t i = 0; i < c.size(); ++i)
    if (c.im_file(i).find("good1") != std::string::npos) found = c.labels(i).cls[0] == 1;
  EXPECT_TRUE(found);
  write_file(s.root / "labels" / "train.yolo11.cache", "{not json");
  Dataset d({src}, s.info, o);
  EXPECT_FALSE(d.stats().from_cache);
  EXPECT_EQ(d.size(), 5u);
  // nc is part of the key
  auto info4 = s.info;
  info4.nc = 4;
  info4.names.push_back("d");
  Dataset e({src}, info4, o);
  EXPECT_FALSE(e.stats().from_cache);
}

TEST(Scan, ReadOnlyLabelsDirFallsBackToUserCacheDir) {
  BadSplit s;
  const fs::path lbroot = s.root / "labels";
  fs::permissions(lbroot, fs::perms::owner_write | fs::perms::group_write | fs::perms::others_write,
                  fs::perm_options::remove);
  DatasetOptions o;
  o.imgsz = 120;
  Dataset ds({(s.root / "images" / "train").string()}, s.info, o);
  fs::permissions(lbroot, fs::perms::owner_write, fs::perm_options::add);
  EXPECT_FALSE(fs::exists(lbroot / "train.yolo11.cache"));
  EXPECT_EQ(ds.stats().cache_path.rfind((s.root / "usercache").string(), 0), 0u) << ds.stats().cache_path;
  Dataset again({(s.root / "images" / "train").string()}, s.info, o);
  EXPECT_TRUE(again.stats().from_cache);
}

TEST(Scan, DatasetFilesAreNeverModified) {
  BadSplit s;
  std::map<std::string, std::string> before;
  for (auto& e : fs::recursive_directory_iterator(s.root / "images"))
    if (e.is_regular_file()) before[e.path().string()] = yolo11::io::read_file(e.path().string());
  DatasetOptions o;
  o.imgsz = 120;
  Dataset ds({(s.root / "images" / "train").string()}, s.info, o);
  for (auto& [p, bytes] : before) EXPECT_EQ(yolo11::io::read_file(p), bytes) << p;
}

TEST(Scan, EmptySplitIsAnErrorNamingThePath) {
  const fs::path d = yolo11::test::scratch_dir("empty_split");
  fs::create_directories(d / "images" / "val");
  DatasetInfo info;
  info.nc = 1;
  try {
    Dataset ds({(d / "images" / "val").string()}, info, DatasetOptions{});
    FAIL() << "no throw";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find((d / "images" / "val").string()), std::string::npos) << e.what();
  }
}

TEST(Scan, TrainSplitWithoutInstancesIsAnErrorNamingTheExpectedLabelPath) {
  const fs::path d = yolo11::test::scratch_dir("no_instances");
  setenv("YOLO11_CACHE_DIR", (d / "usercache").c_str(), 1);
  write_file(d / "imgs" / "images" / "a.png", encode(gradient(20, 20), ".png"));
  DatasetInfo info;
  info.nc = 1;
  DatasetOptions o;
  o.require_instances = true;
  try {
    Dataset ds({(d / "imgs" / "images").string()}, info, o);
    FAIL() << "no throw";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find((d / "imgs" / "labels" / "a.txt").string()), std::string::npos) << e.what();
  }
}

TEST(Scan, MoreInstancesThanMaxDetIsReported) {
  const fs::path d = yolo11::test::scratch_dir("maxdet");
  setenv("YOLO11_CACHE_DIR", (d / "usercache").c_str(), 1);
  write_file(d / "images" / "a.png", encode(gradient(100, 100), ".png"));
  std::string rows;
  for (int i = 0; i < 5; ++i) rows += "0 " + std::to_string(0.1 + 0.15 * i) + " 0.5 0.1 0.1\n";
  write_file(d / "labels" / "a.txt", rows);
  DatasetInfo info;
  info.nc = 1;
  DatasetOptions o;
  o.max_det = 3;
  o.imgsz = 100;
  Dataset ds({(d / "images").string()}, info, o);
  EXPECT_TRUE(any_contains(ds.warnings(), "5 instances > max_det 3"));
}

TEST(ReadImage, CmykTiffBecomesBgr) {
  // Hand-built uncompressed little-endian TIFF, 10×10, CMYK (Photometric 5, InkSet 1), every pixel C0 M255 Y255 K0
  // = pure red.
  std::string t("II*\0\x08\0\0\0", 8);
  auto u16 = [&](uint16_t v) { t.push_back(static_cast<char>(v & 0xFF)); t.push_back(static_cast<char>(v >> 8)); };
  auto u32 = [&](uint32_t v) { u16(v & 0xFFFF); u16(v >> 16); };
  auto entry = [&](uint16_t tag, uint16_t type, uint32_t count, uint32_t value) {
    u16(tag), u16(type), u32(count);
    if (type == 3 && count == 1) {
      u16(static_cast<uint16_t>(value)), u16(0);
    } else {
      u32(value);
    }
  };
  const uint32_t bps_off = 8 + 2 + 11 * 12 + 4, data_off = bps_off + 8;
  u16(11);
  entry(256, 3, 1, 10);
  entry(257, 3, 1, 10);
  entry(258, 3, 4, bps_off);
  entry(259, 3, 1, 1);
  entry(262, 3, 1, 5);
  entry(273, 4, 1, data_off);
  entry(277, 3, 1, 4);
  entry(278, 3, 1, 10);
  entry(279, 4, 1, 400);
  entry(284, 3, 1, 1);
  entry(332, 3, 1, 1);
  u32(0);
  for (int i = 0; i < 4; ++i) u16(8);
  for (int i = 0; i < 100; ++i) t += std::string("\x00\xFF\xFF\x00", 4);
  const fs::path d = yolo11::test::scratch_dir("cmyk");
  write_file(d / "c.tif", t);
  const cv::Mat m = read_image((d / "c.tif").string());
  EXPECT_EQ(m.type(), CV_8UC3);
  const cv::Vec3b p = m.at<cv::Vec3b>(5, 5);
  EXPECT_LT(p[0], 30);   // B
  EXPECT_LT(p[1], 30);   // G
  EXPECT_GT(p[2], 225);  // R
}

TEST(Scan, PathsWithSpacesAndNonAsciiCharactersWorkEndToEnd) {
  const fs::path d = fs::path(yolo11::test::scratch_dir("unicode")) / "my data sät";
  setenv("YOLO11_CACHE_DIR", (d / "usercache").c_str(), 1);
  write_file(d / "images" / "tr ain" / "bild ö 1.JPG", encode(gradient(40, 50), ".jpg"));
  write_file(d / "labels" / "tr ain" / "bild ö 1.txt", "0 0.5 0.5 0.5 0.5\n");
  DatasetInfo info;
  info.nc = 1;
  DatasetOptions o;
  o.imgsz = 64;
  o.require_instances = true;
  Dataset ds({(d / "images" / "tr ain").string()}, info, o);
  ASSERT_EQ(ds.size(), 1u);
  EXPECT_EQ(ds.labels(0).cls.size(), 1u);
  EXPECT_EQ(ds.load(0).img.cols, 64);
  EXPECT_TRUE(fs::exists(d / "labels" / "tr ain.yolo11.cache"));
}
