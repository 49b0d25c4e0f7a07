// Text in pictures: ASCII through Hershey exactly as cv::putText; UTF-8 class names through freetype (when built
// with it) instead of "????"; the class index otherwise.
#include <gtest/gtest.h>

#include <opencv2/imgproc.hpp>

#include <opencv2/imgcodecs.hpp>
#include <torch/torch.h>

#include "golden.h"
#include "yolo11/plot/data_plots.h"
#include "yolo11/plot/text.h"

using namespace yolo11::data;
using namespace yolo11::plot;

namespace {
[[maybe_unused]] cv::Rect ink(const cv::Mat& img) {  // bounding box of the non-white pixels
  cv::Mat gray, mask;
  cv::cvtColor(img, gray, cv::COLOR_BGR2GRAY);
  cv::threshold(gray, mask, 250, 255, cv::THRESH_BINARY_INV);
  return cv::boundingRect(mask);
}
}  // namespace

TEST(PlotText, AsciiIsHersheyPixelForPixel) {
  cv::Mat a(40, 200, CV_8UC3, cv::Scalar::all(255)), b = a.clone();
  put_text(a, "person 0.87", {5, 30}, 0.5, cv::Scalar(0, 0, 0));
  cv::putText(b, "person 0.87", {5, 30}, cv::FONT_HERSHEY_SIMPLEX, 0.5, cv::Scalar(0, 0, 0), 1, cv::LINE_AA);
  EXPECT_EQ(cv::norm(a, b, cv::NORM_INF), 0.0);
  EXPECT_EQ(display_name("person", 0), "person");
  EXPECT_EQ(display_name("", 7), "7");
  EXPECT_TRUE(is_ascii("person"));
  EXPECT_FALSE(is_ascii("caf\xc3\xa9"));
}

TEST(PlotText, NonAsciiNameIsDrawnWithTheFontOrAsTheClassIndex) {
  const std::string name = "\xd1\x81\xd0\xbe\xd0\xb1\xd0\xb0\xd0\xba\xd0\xb0";  // "собака" (Cyrillic, 6 letters)
#ifdef YOLO11_HAS_FREETYPE
  ASSERT_TRUE(utf8_text_available()) << "built with freetype but no font found (install fonts-dejavu-core or set "
                                        "YOLO11_FONT); font path: '" << utf8_font_path() << "'";
  EXPECT_EQ(display_name(name, 3), name);
  cv::Mat ft(60, 300, CV_8UC3, cv::Scalar::all(255)), hershey = ft.clone(), ascii = ft.clone();
  put_text(ft, name, {10, 40}, 0.8, cv::Scalar(0, 0, 0));
  cv::putText(hershey, name, {10, 40}, cv::FONT_HERSHEY_SIMPLEX, 0.8, cv::Scalar(0, 0, 0), 1, cv::LINE_AA);  // "??????"
  put_text(ascii, "COBAKA", {10, 40}, 0.8, cv::Scalar(0, 0, 0));
  const cv::Rect r = ink(ft), rh = ink(hershey), ra = ink(ascii);
  EXPECT_GT(cv::norm(ft, hershey, cv::NORM_L1), 0.0);  // not the "?" glyphs
  // Lower-case Cyrillic: x-height letters (~0.55 em) plus the tall "б"; same baseline and left edge as Hershey.
  EXPECT_NEAR(r.x, 10, 3);
  EXPECT_NEAR(r.y + r.height, 40, 3) << r;
  EXPECT_GT(r.width, 60);
  EXPECT_LT(r.width, 2 * ra.width);
  EXPECT_NEAR(r.height, ra.height, 6) << r << " vs " << ra << " (hershey ? " << rh << ")";
  const cv::Size s = text_size(name, 0.8, 1);
  EXPECT_NEAR(s.width, r.width, 6);
#else
  EXPECT_FALSE(utf8_text_available());
  EXPECT_EQ(display_name(name, 3), "3");
#endif
}

TEST(PlotText, BatchMosaicDrawsUtf8NamesNotQuestionMarks) {
  // One white 64x64 image with one box of class 0; the picture with a Cyrillic name must differ from the one drawn
  // with the literal "??" bytes Hershey would have produced.
  Batch b;
  b.images = torch::full({1, 3, 64, 64}, 255, torch::kUInt8);
  b.batch_idx = torch::zeros({1}, torch::kLong);
  b.cls = torch::zeros({1}, torch::kLong);
  b.bboxes = torch::tensor({{0.5f, 0.6f, 0.8f, 0.5f}});
  b.im_files = {"a.jpg"};
  const std::string dir = yolo11::test::scratch_dir("mosaic");
  plot_images(b, {"\xd0\xb6\xd1\x83\xd0\xba"}, dir + "/utf8.jpg");  // "жук"
  plot_images(b, {"???"}, dir + "/qmarks.jpg");     // Hershey: one "?" per code point
  plot_images(b, {"??????"}, dir + "/qmarks6.jpg");  // or per byte
  plot_images(b, {"0"}, dir + "/index.jpg");
  const cv::Mat u = cv::imread(dir + "/utf8.jpg"), q = cv::imread(dir + "/qmarks.jpg"), i = cv::imread(dir + "/index.jpg");
  ASSERT_FALSE(u.empty());
  EXPECT_GT(cv::norm(u, q, cv::NORM_L1), 0.0);
  EXPECT_GT(cv::norm(u, cv::imread(dir + "/qmarks6.jpg"), cv::NORM_L1), 0.0);
  if (utf8_text_available()) EXPECT_GT(cv::norm(u, i, cv::NORM_L1), 0.0);
  else EXPECT_EQ(cv::norm(u, i, cv::NORM_INF), 0.0);  // fallback: the class index
}
