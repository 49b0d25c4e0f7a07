// plot/chart.h: nice ticks, tick labels, colours, and what a rendered chart holds (lines, clipping, gaps, legend room).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <limits>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#include <set>

#include "yolo11/plot/chart.h"

using namespace yolo11;

namespace {

const cv::Scalar kRed(0, 0, 255);

/// Pixels of exactly `color` in img.
int count_color(const cv::Mat& img, cv::Scalar color) {
  cv::Mat mask;
  cv::inRange(img, color, color, mask);
  return cv::countNonZero(mask);
}

/// Pixels lighter than 200 in every channel (anti-aliased white text on a colour).
int count_light(const cv::Mat& img) {
  cv::Mat mask;
  cv::inRange(img, cv::Scalar(200, 200, 200), cv::Scalar(255, 255, 255), mask);
  return cv::countNonZero(mask);
}

/// Rightmost column holding a pixel of exactly `color`, -1 when none.
int rightmost(const cv::Mat& img, cv::Scalar color) {
  cv::Mat mask;
  cv::inRange(img, color, color, mask);
  for (int x = mask.cols - 1; x >= 0; --x)
    if (cv::countNonZero(mask.col(x)) > 0) return x;
  return -1;
}

plot::ChartOptions unit_options() {
  plot::ChartOptions opt;
  opt.title = "Title";
  opt.xlabel = "x";
  opt.ylabel = "y";
  opt.xlim = std::array<double, 2>{0.0, 1.0};
  opt.ylim = std::array<double, 2>{0.0, 1.0};
  return opt;
}

}  // namespace

TEST(NiceTicks, OneTwoFiveSteps) {
  EXPECT_EQ(plot::nice_ticks(0, 103), (std::vector<double>{0, 20, 40, 60, 80, 100}));
  EXPECT_EQ(plot::nice_ticks(0, 1), (std::vector<double>{0.0, 0.2, 0.4, 0.6, 0.8, 1.0}));
  EXPECT_EQ(plot::nice_ticks(0, 68.8), (std::vector<double>{0, 10, 20, 30, 40, 50, 60}));  // never 34.4 / 68.8
  EXPECT_EQ(plot::nice_ticks(-0.37, 0.52), (std::vector<double>{-0.2, 0.0, 0.2, 0.4}));
  EXPECT_EQ(plot::nice_ticks(0, 1, 11), (std::vector<double>{0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0}));
  EXPECT_EQ(plot::nice_ticks(1200, 4700), (std::vector<double>{1500, 2000, 2500, 3000, 3500, 4000, 4500}));
  EXPECT_EQ(plot::nice_ticks(2.5, 2.5), (std::vector<double>{2.5}));
  EXPECT_EQ(plot::nice_ticks(0, 1 / (1 + 1e-9)).back(), 1.0);  // a normalised maximum a hair under 1 keeps its tick
  const auto t = plot::nice_ticks(0, 1e-3);  // tiny ranges too
  ASSERT_EQ(t.size(), 6u);
  EXPECT_DOUBLE_EQ(t[1], 2e-4);
  EXPECT_FALSE(std::signbit(plot::nice_ticks(-1, 1)[2]));  // the zero tick is +0
}

TEST(NiceTicks, RejectsBadRanges) {
  EXPECT_THROW(plot::nice_ticks(1, 0), std::invalid_argument);
  EXPECT_THROW(plot::nice_ticks(0, std::numeric_limits<double>::infinity()), std::invalid_argument);
  EXPECT_THROW(plot::nice_ticks(std::nan(""), 1), std::invalid_argument);
  EXPECT_THROW(plot::nice_ticks(0, 1, 1), std::invalid_argument);
}

TEST(TickLabel, DecimalsFollowTheStep) {
  EXPECT_EQ(plot::tick_label(0, 0.2), "0.0");
  EXPECT_EQ(plot::tick_label(0.6000000000000001, 0.2), "0.6");
  EXPECT_EQ(plot::tick_label(100, 20), "100");
  EXPECT_EQ(plot::tick_label(0.05, 0.05), "0.05");
  EXPECT_EQ(plot::tick_label(-0.0, 0.1), "0.0");
  EXPECT_EQ(plot::tick_label(-1e-17, 0.5), "0.0");  // rounding to zero never prints "-0.0"
  EXPECT_EQ(plot::tick_label(-0.4, 0.2), "-0.4");
  EXPECT_EQ(plot::tick_label(3e7, 1e7), "3e+07");
  EXPECT_EQ(plot::tick_label(4.158892, 2e-6), "4.158892");  // a flat loss: was "4.15889" at every tick
  EXPECT_EQ(plot::tick_label(8e-7, 2e-7), "8e-07");
}

TEST(Colors, PaletteAndBlues) {
  EXPECT_EQ(plot::palette(0), cv::Scalar(180, 119, 31));  // tab:blue, BGR
  EXPECT_EQ(plot::palette(1), cv::Scalar(14, 127, 255));  // tab:orange
  EXPECT_EQ(plot::palette(10), plot::palette(0));
  EXPECT_EQ(plot::blues(0), cv::Scalar(255, 251, 247));
  EXPECT_EQ(plot::blues(1), cv::Scalar(107, 48, 8));
  EXPECT_EQ(plot::blues(7), plot::blues(1));
  EXPECT_EQ(plot::blues(std::nan("")), cv::Scalar(255, 255, 255));
  EXPECT_LT(plot::blues(0.6)[2], plot::blues(0.4)[2]);  // darker as t grows
}

TEST(Chart, DrawsLinesClippedToTheAxesWithGaps) {
  const double nan = std::nan("");
  // A horizontal red line at y = 0.5 with a gap around x = 0.5, and a line running far above the axes.
  plot::Series gap{{0.0, 0.4, nan, 0.6, 1.0}, {0.5, 0.5, nan, 0.5, 0.5}, kRed, 3, "gap"};
  plot::Series high{{0.0, 1.0}, {5.0, 5.0}, cv::Scalar(0, 255, 0), 3, "high"};
  const cv::Mat img = plot::render_chart({600, 400}, {gap, high}, unit_options());
  ASSERT_EQ(img.size(), cv::Size(600, 400));
  ASSERT_EQ(img.type(), CV_8UC3);
  EXPECT_GT(count_color(img, kRed), 500);
  cv::Mat red;
  cv::inRange(img, kRed, kRed, red);
  // Find the row of the red line, then check that the middle of it is empty (the gap) and a quarter in is not.
  int row = -1, best = 0;
  for (int y = 0; y < red.rows; ++y)
    if (cv::countNonZero(red.row(y)) > best) best = cv::countNonZero(red.row(y)), row = y;
  ASSERT_GE(row, 0);
  std::vector<int> xs;
  for (int x = 0; x < red.cols; ++x)
    if (red.at<uchar>(row, x)) xs.push_back(x);
  const int x0 = xs.front(), x1 = xs.back(), mid = (x0 + x1) / 2;
  EXPECT_EQ(red.at<uchar>(row, mid), 0) << "the NaN point should break the line";
  EXPECT_EQ(red.at<uchar>(row, x0 + (x1 - x0) / 4), 255);
  EXPECT_NEAR(row, 400 / 2, 60);  // y = 0.5 lies in the middle band of the picture
  // Only the legend sample of the green line is drawn: y = 5 is clipped away.
  EXPECT_GT(count_color(img, cv::Scalar(0, 255, 0)), 0);
  EXPECT_LT(count_color(img, cv::Scalar(0, 255, 0)), 200);
}

TEST(Chart, OutsideLegendNarrowsThePlotArea) {
  // A falling diagonal: its right end is the bottom-right corner of the plot area, away from an inside legend.
  plot::Series diag{{0.0, 1.0}, {1.0, 0.0}, kRed, 2, "a rather long legend entry"};
  auto opt = unit_options();
  opt.legend = plot::Legend::kNone;
  const int none = rightmost(plot::render_chart({800, 500}, {diag}, opt), kRed);
  EXPECT_GT(none, 700);
  opt.legend = plot::Legend::kOutsideRight;  // even the legend's red sample line sits left of where the line ended
  EXPECT_LT(rightmost(plot::render_chart({800, 500}, {diag}, opt), kRed), none - 150);
  opt.legend = plot::Legend::kAuto;  // one entry: inside, the plot area as wide as without a legend
  EXPECT_NEAR(rightmost(plot::render_chart({800, 500}, {diag}, opt), kRed), none, 2);
}

TEST(Chart, AutoLimitsAndErrors) {
  plot::Series s{{0, 50, 103}, {3, -2, 7}, kRed, 3, ""};
  const cv::Mat img = plot::render_chart({400, 300}, {s}, plot::ChartOptions{});  // data range + 5 %, no labels
  EXPECT_GT(count_color(img, kRed), 50);
  plot::Series bad{{0, 1}, {0}, kRed, 1, "bad"};
  EXPECT_THROW(plot::render_chart({400, 300}, {bad}, {}), std::invalid_argument);
  auto opt = unit_options();
  opt.xlim = std::array<double, 2>{1.0, 1.0};
  EXPECT_THROW(plot::render_chart({400, 300}, {s}, opt), std::invalid_argument);
  EXPECT_THROW(plot::render_chart({100, 300}, {s}, {}), std::invalid_argument);
  cv::Mat canvas(300, 400, CV_8UC3);
  EXPECT_THROW(plot::draw_chart(canvas, cv::Rect(300, 0, 200, 200), {s}, {}), std::invalid_argument);
  cv::Mat gray(300, 400, CV_8UC1);
  EXPECT_THROW(plot::draw_chart(gray, cv::Rect(0, 0, 400, 300), {s}, {}), std::invalid_argument);
}

TEST(Chart, DrawsIntoACellOfALargerCanvas) {
  cv::Mat canvas(300, 800, CV_8UC3, cv::Scalar(0, 0, 0));
  plot::Series s{{0.0, 1.0}, {0.0, 1.0}, kRed, 2, ""};
  plot::draw_chart(canvas, cv::Rect(400, 0, 400, 300), {s}, unit_options());
  EXPECT_EQ(count_color(canvas(cv::Rect(0, 0, 400, 300)), cv::Scalar(0, 0, 0)), 400 * 300);  // left cell untouched
  EXPECT_GT(count_color(canvas(cv::Rect(400, 0, 400, 300)), kRed), 100);
}

TEST(SaveImage, WritesAPngAndThrowsForAMissingDirectory) {
  const auto dir = std::filesystem::temp_directory_path() / ("yolo11_test_chart_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto path = (dir / "chart.png").string();
  plot::Series s{{0.0, 1.0}, {1.0, 0.0}, kRed, 2, "line"};
  plot::save_image(path, plot::render_chart({500, 400}, {s}, unit_options()));
  const cv::Mat back = cv::imread(path);
  EXPECT_EQ(back.size(), cv::Size(500, 400));
  EXPECT_GT(count_color(back, kRed), 100);
  std::filesystem::remove_all(dir);
  EXPECT_THROW(plot::save_image("/nonexistent_dir_xyz/chart.png", back), std::runtime_error);
}

TEST(NiceTicks, MinStepAndSweepRanges) {
  EXPECT_EQ(plot::nice_ticks(0.9, 3.1, 8, 1.0), (std::vector<double>{1, 2, 3}));  // epochs: never 1.5
  EXPECT_EQ(plot::nice_ticks(0.9, 3.1), (std::vector<double>{1.0, 1.5, 2.0, 2.5, 3.0}));
  EXPECT_EQ(plot::nice_ticks(0, 137.5, 6), (std::vector<double>{0, 50, 100}));
  EXPECT_EQ(plot::nice_ticks(0, 137.5), (std::vector<double>{0, 20, 40, 60, 80, 100, 120}));  // not 34.4, 68.8, 103.1
  EXPECT_EQ(plot::nice_ticks(0.2, 0.8, 8, 1.0), (std::vector<double>{}));                   // no whole number inside
  EXPECT_THROW(plot::nice_ticks(0, 1, 8, -1), std::invalid_argument);
}

TEST(Abbreviate, CutsToCodePointsWithADot) {
  EXPECT_EQ(plot::abbreviate("traffic light", 8), "traffic.");
  EXPECT_EQ(plot::abbreviate("dog", 8), "dog");
  EXPECT_EQ(plot::abbreviate("12345678", 8), "12345678");
  EXPECT_EQ(plot::abbreviate("собака-пёс", 4), "соб.");  // never splits a UTF-8 sequence
}

TEST(Chart, AutoLimitsOfNonNegativeDataNeverGoBelowZero) {
  cv::Mat img(300, 400, CV_8UC3);
  plot::Series p{{1, 2, 3}, {0.0, 0.5, 1.0}, kRed, 2, ""};  // a precision curve
  auto ax = plot::draw_chart(img, {0, 0, 400, 300}, {p}, {});
  EXPECT_EQ(ax.y0, 0.0);
  EXPECT_NEAR(ax.y1, 1.05, 1e-12);
  plot::Series zero{{1, 2, 3}, {0, 0, 0}, kRed, 2, ""};  // all zero: 0…1, was -0.5…0.5
  ax = plot::draw_chart(img, {0, 0, 400, 300}, {zero}, {});
  EXPECT_EQ(ax.y0, 0.0);
  EXPECT_EQ(ax.y1, 1.0);
  plot::Series neg{{1, 2}, {-1.0, 1.0}, kRed, 2, ""};  // signed data keep the margin below
  EXPECT_LT(plot::draw_chart(img, {0, 0, 400, 300}, {neg}, {}).y0, -1.0);
  // the returned axes map data to the picture's pixels, the cell offset included
  ax = plot::draw_chart(img, {0, 0, 400, 300}, {p}, unit_options());
  EXPECT_EQ(ax.to_px(0, 0), cv::Point(ax.area.x, ax.area.br().y - 1));
  EXPECT_EQ(ax.to_px(1, 1), cv::Point(ax.area.br().x - 1, ax.area.y));
}

TEST(Chart, MarkersAndBestLegendCorner) {
  // A rising line fills the bottom-left and top-right corners; the best legend goes top-left.
  plot::Series up{{0.0, 1.0}, {0.0, 1.0}, kRed, 2, "results", 4};
  auto opt = unit_options();
  opt.legend = plot::Legend::kInsideBest;
  cv::Mat img = plot::render_chart({600, 400}, {up}, opt);
  cv::Mat left = img(cv::Rect(0, 0, 300, 200)), right = img(cv::Rect(300, 0, 300, 200));
  // The legend's frame colour appears in the top-left quarter only.
  EXPECT_GT(count_color(left, cv::Scalar(204, 204, 204)), 50);
  EXPECT_LT(count_color(right, cv::Scalar(204, 204, 204)), 5);  // (a stray anti-aliased pixel of the title)
  plot::Series bad = up;
  bad.marker = -1;
  EXPECT_THROW(plot::render_chart({600, 400}, {bad}, opt), std::invalid_argument);
}

TEST(Bars, OneBarPerCategoryWithRotatedNames) {
  plot::ChartOptions o;
  for (int i = 0; i < 80; ++i) o.xcategories.push_back("class number " + std::to_string(i));
  std::vector<double> v(80, 0.0);
  v[3] = 10, v[40] = 5;
  cv::Mat img(500, 1200, CV_8UC3);
  const auto ax = plot::draw_bars(img, {0, 0, 1200, 500}, v, {kRed}, o);
  EXPECT_EQ(ax.y0, 0.0);
  EXPECT_NEAR(ax.y1, 10.5, 1e-12);
  cv::Mat red;
  cv::inRange(img, kRed, kRed, red);
  const cv::Rect bars = cv::boundingRect(red);
  EXPECT_NEAR(bars.y, ax.to_px(0, 10).y, 1);  // the tallest bar reaches 10
  EXPECT_GT(bars.height, ax.area.height * 0.9);
  // The names under the axis are drawn rotated: dark pixels well below the plot area (taller than one text line).
  cv::Mat below = img(cv::Rect(0, ax.area.br().y + 40, 1200, 40)), gray;
  cv::cvtColor(below, gray, cv::COLOR_BGR2GRAY);
  EXPECT_GT(cv::countNonZero(gray < 128), 200);
  EXPECT_THROW(plot::draw_bars(img, {0, 0, 1200, 500}, {1.0}, {}, o), std::invalid_argument);
}

TEST(Bars, StackedSegmentsInPaletteOrderCutAtTheTopAndCrosses) {
  plot::ChartOptions o;
  o.xcategories = {"a", "b"};
  o.ylim = std::array<double, 2>{0.0, 100.0};
  cv::Mat img(400, 600, CV_8UC3, cv::Scalar(255, 255, 255));
  const auto ax = plot::draw_chart(img, {0, 0, 600, 400}, {}, o);
  plot::draw_stacked_bars(img, ax, {{30, 20}, {80, 60, std::nan("")}});
  // Bar 0: palette(0) from 0 to 30, palette(1) from 30 to 50; bar 1: palette(0) to 80, palette(1) cut at 100.
  EXPECT_EQ(cv::Scalar(img.at<cv::Vec3b>(ax.to_px(0, 15))), plot::palette(0));
  EXPECT_EQ(cv::Scalar(img.at<cv::Vec3b>(ax.to_px(0, 40))), plot::palette(1));
  EXPECT_EQ(cv::Scalar(img.at<cv::Vec3b>(ax.to_px(0, 60))), cv::Scalar(255, 255, 255));
  EXPECT_EQ(cv::Scalar(img.at<cv::Vec3b>(ax.to_px(1, 95))), plot::palette(1));
  EXPECT_EQ(cv::Scalar(img.at<cv::Vec3b>(ax.to_px(1, 101))), cv::Scalar(255, 255, 255));  // nothing above the axes
  const cv::Point c = ax.to_px(0.5, 50);
  plot::draw_cross(img, c, "oom", kRed);
  EXPECT_EQ(cv::Scalar(img.at<cv::Vec3b>(c)), kRed);
  cv::Mat label;  // the label above it: reddish pixels (anti-aliased text has few pure ones)
  cv::inRange(img(cv::Rect(c.x - 14, c.y - 24, 40, 16)), cv::Scalar(0, 0, 150), cv::Scalar(170, 170, 255), label);
  EXPECT_GT(cv::countNonZero(label), 5);
}

TEST(Heatmap, NumbersInCellsAndAColourBar) {
  plot::HeatmapOptions o;
  o.row_labels = o.col_labels = {"a", "b"};
  o.cell_format = "%.2f";
  const double nan = std::nan("");
  const cv::Mat img = plot::render_heatmap({{1.0, nan}, {nan, 0.2}}, o);
  const cv::Scalar darkest = plot::blues(1.0);
  cv::Mat dark;
  cv::inRange(img, darkest, darkest, dark);
  const cv::Rect cell = cv::boundingRect(dark);
  ASSERT_GT(cell.area(), 50 * 50);
  // "1.00" in white inside the dark cell
  EXPECT_GT(count_light(img(cell)), 20);
  // The colour bar: right of the cells, a column of many different blues from light to dark.
  std::set<int> blues;
  for (int y = 0; y < img.rows; ++y) {
    const auto px = img.at<cv::Vec3b>(y, cell.br().x + 100 + 28 + 10);
    if (px[0] > px[2] + 5) blues.insert(px[0] << 16 | px[1] << 8 | px[2]);
  }
  EXPECT_GT(blues.size(), 50u);
  o.cell_format.clear();  // without numbers the dark cell is solid
  const cv::Mat plain = plot::render_heatmap({{1.0, nan}, {nan, 0.2}}, o);
  EXPECT_LT(count_light(plain(cell)), 5);
  EXPECT_THROW(plot::render_heatmap({{1.0}}, o), std::invalid_argument);  // 2 labels for 1 row
  EXPECT_THROW(plot::draw_colorbar(const_cast<cv::Mat&>(plain), {0, 0, 10, 10}, 0.0), std::invalid_argument);
}

// One box style for every picture of boxes (batch mosaics and predictions): Ultralytics' palette by class, the frame
// in the class colour at the line width, the caption kept inside the bounds.
TEST(Boxes, ClassColoursAreUltralyticsPaletteAndTheBoxIsFramedAndCaptioned) {
  EXPECT_EQ(plot::class_color(0), cv::Scalar(0x38, 0x38, 0xFF));   // FF3838 as BGR
  EXPECT_EQ(plot::class_color(19), cv::Scalar(0xC7, 0x37, 0xFF));  // FF37C7
  EXPECT_EQ(plot::class_color(20), plot::class_color(0));
  EXPECT_EQ(plot::class_color(-1), plot::class_color(0));
  cv::Mat img(200, 200, CV_8UC3, cv::Scalar(0, 0, 0));
  const cv::Scalar c = plot::class_color(5);
  plot::draw_box(img, cv::Rect2f(40.f, 60.f, 100.f, 80.f), "dog 0.91", c, 3, 0.5, cv::Rect(0, 0, 200, 200));
  EXPECT_GT(count_color(img(cv::Rect(40, 90, 3, 20)), c), 40);   // the left edge, 3 px wide
  EXPECT_GT(count_color(img(cv::Rect(138, 90, 3, 20)), c), 40);  // the right edge
  EXPECT_EQ(count_color(img(cv::Rect(60, 90, 60, 30)), c), 0);   // the inside is not filled
  EXPECT_GT(count_light(img(cv::Rect(40, 35, 100, 25))), 10);    // the caption above the top edge
  cv::Mat bare(200, 200, CV_8UC3, cv::Scalar(0, 0, 0));
  plot::draw_box(bare, cv::Rect2f(40.f, 60.f, 100.f, 80.f), "", c, 1, 0.5, cv::Rect(0, 0, 200, 200));
  EXPECT_EQ(count_light(bare(cv::Rect(40, 35, 100, 25))), 0);  // no label, no caption
}

TEST(Caption, StaysInsideThePicture) {
  const cv::Rect pic(0, 0, 640, 480);
  const cv::Size t(120, 20);
  // Room above: on the box's top edge, outside.
  EXPECT_EQ(plot::caption_rect(t, {100, 100, 50, 50}, pic), cv::Rect(100, 80, 120, 20));
  // At the top: inside, below the top edge (was cut off above the picture).
  EXPECT_EQ(plot::caption_rect(t, {100, 5, 50, 50}, pic), cv::Rect(100, 5, 120, 20));
  // At the right edge: moved left so that it ends at the picture's edge (was cut off on the right).
  EXPECT_EQ(plot::caption_rect(t, {600, 100, 40, 40}, pic), cv::Rect(520, 80, 120, 20));
  // A box at the bottom-right corner, past the picture: inside both ways.
  const cv::Rect r = plot::caption_rect(t, {630, 475, 40, 40}, pic);
  EXPECT_EQ(r & pic, r);
  // A mosaic tile as bounds
  const cv::Rect tile(320, 240, 320, 240);
  const cv::Rect q = plot::caption_rect(t, {322, 241, 400, 10}, tile);
  EXPECT_EQ(q & tile, q);
  // draw_caption returns what it drew, inside the picture, with the colour and white text
  cv::Mat img(480, 640, CV_8UC3, cv::Scalar(0, 0, 0));
  const cv::Rect d = plot::draw_caption(img, "traffic light 0.93", {600, 0, 40, 40}, pic, 0.5, kRed);
  EXPECT_EQ(d & pic, d);
  EXPECT_EQ(d.br().x, 640);
  EXPECT_GT(count_color(img(d), kRed), d.area() / 2);
  EXPECT_GT(count_light(img(d)), 20);
  EXPECT_TRUE(plot::draw_caption(img, "", {0, 0, 5, 5}, pic, 0.5, kRed).empty());
}
