// plot/chart.h: nice ticks, tick labels, colours, and what a rendered chart holds (lines, clipping, gaps, legend room).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <limits>
#include <opencv2/imgcodecs.hpp>

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
