// results.csv header/rows/round trip and results.png rendering.
#include "yolo11/engine/results.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "golden.h"
#include "yolo11/io/file.h"

namespace fs = std::filesystem;
using namespace yolo11;

namespace {

engine::EpochResult row(int64_t e) {
  engine::EpochResult r;
  r.epoch = e;
  r.time = 16.7429 * static_cast<double>(e);
  r.box_loss = 5.11326 / static_cast<double>(e), r.cls_loss = 4.28147, r.dfl_loss = 4.32265;
  r.precision = 0.1 * static_cast<double>(e), r.recall = 0.05, r.map50 = 0.02 * static_cast<double>(e), r.map50_95 = 0.01;
  r.val_box_loss = 5.22461, r.val_cls_loss = 4.39848, r.val_dfl_loss = 4.1636;
  r.lr_pg0 = r.lr_pg1 = r.lr_pg2 = 0.00017148;
  return r;
}

}  // namespace

TEST(ResultsCsv, HeaderAndRowsMatchUltralyticsFormat) {
  const auto dir = test::scratch_dir("results_csv");
  engine::ResultsCsv csv(dir + "/results.csv");
  csv.append(row(1));
  csv.append(row(2));
  const std::string text = io::read_file(dir + "/results.csv");
  const std::string header =
      "epoch,time,train/box_loss,train/cls_loss,train/dfl_loss,metrics/precision(B),metrics/recall(B),"
      "metrics/mAP50(B),metrics/mAP50-95(B),val/box_loss,val/cls_loss,val/dfl_loss,lr/pg0,lr/pg1,lr/pg2\n";
  ASSERT_EQ(text.substr(0, header.size()), header);
  EXPECT_EQ(text.substr(header.size()),
            "1,16.7429,5.11326,4.28147,4.32265,0.1,0.05,0.02,0.01,5.22461,4.39848,4.1636,0.00017148,0.00017148,0.00017148\n"
            "2,33.4858,2.55663,4.28147,4.32265,0.2,0.05,0.04,0.01,5.22461,4.39848,4.1636,0.00017148,0.00017148,0.00017148\n");
}

TEST(ResultsCsv, ReadsBackReferenceFileAndTruncatesForResume) {
  // The reference trainer's own results.csv parses with our reader.
  const auto ref = engine::ResultsCsv::read(test::shared_dir() + "/datasets/shapes3/reference_results_seed0.csv");
  ASSERT_EQ(ref.rows().size(), 30u);
  EXPECT_EQ(ref.results()[0].epoch, 1);
  EXPECT_DOUBLE_EQ(ref.results()[0].box_loss, 5.11326);
  EXPECT_DOUBLE_EQ(ref.column("lr/pg2")[1], 0.000345461);
  // Round trip through our writer keeps the text identical.
  const auto dir = test::scratch_dir("results_resume");
  auto copy = engine::ResultsCsv::parse(ref.text(), dir + "/results.csv");
  EXPECT_EQ(copy.text(), io::read_file(test::shared_dir() + "/datasets/shapes3/reference_results_seed0.csv"));
  copy.truncate(10);
  EXPECT_EQ(engine::ResultsCsv::read(dir + "/results.csv").rows().size(), 10u);
  EXPECT_THROW(copy.column("mAP"), std::runtime_error);
}

TEST(ResultsCsv, BadFilesAreReportedWithLine) {
  const auto dir = test::scratch_dir("results_bad");
  std::ofstream(dir + "/a.csv") << "epoch,time\n1,2\n";
  EXPECT_THROW(engine::ResultsCsv::read(dir + "/a.csv"), std::runtime_error);
  engine::ResultsCsv ok(dir + "/b.csv");
  ok.append(row(1));
  std::ofstream(dir + "/b.csv", std::ios::app) << "2,x,1,1,1,1,1,1,1,1,1,1,1,1,1\n";
  try {
    engine::ResultsCsv::read(dir + "/b.csv");
    ADD_FAILURE() << "expected an error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("b.csv':3 column 'time'"), std::string::npos) << e.what();
  }
}

TEST(PlotResults, DrawsAGridOfCharts) {
  const auto dir = test::scratch_dir("results_png");
  engine::ResultsCsv csv(dir + "/results.csv");
  for (int e = 1; e <= 12; ++e) csv.append(row(e));
  engine::plot_results(dir + "/results.csv", dir + "/results.png");
  const cv::Mat img = cv::imread(dir + "/results.png");
  ASSERT_FALSE(img.empty());
  EXPECT_EQ(img.cols, 5 * 400);
  EXPECT_EQ(img.rows, 3 * 300);
  // Every chart cell has drawn (non-white) pixels; the line colour (BGR 180,119,31) appears in the first chart.
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 5; ++c) {
      if (r == 2 && c == 4) continue;  // 14 charts in 15 cells
      cv::Mat cell = img(cv::Rect(c * 400, r * 300, 400, 300));
      cv::Mat gray;
      cv::cvtColor(cell, gray, cv::COLOR_BGR2GRAY);
      EXPECT_GT(cv::countNonZero(gray < 250), 500) << "cell " << r << "," << c;
    }
  cv::Mat mask;
  cv::inRange(img(cv::Rect(0, 0, 400, 300)), cv::Scalar(170, 110, 20), cv::Scalar(190, 130, 45), mask);
  EXPECT_GT(cv::countNonZero(mask), 50);
  EXPECT_THROW(engine::plot_results(dir + "/missing.csv", dir + "/x.png"), std::runtime_error);
}

TEST(PlotResults, NonNegativeColumnsAreNeverDrawnBelowZero) {
  // recall is 0 in every epoch: its line lies on the bottom of the plot area (y from 0), not in the middle of a
  // -1…1 range as before.
  const auto dir = test::scratch_dir("results_png_zero");
  engine::ResultsCsv csv(dir + "/results.csv");
  for (int e = 1; e <= 6; ++e) {
    auto r = row(e);
    r.recall = 0;
    csv.append(r);
  }
  engine::plot_results(dir + "/results.csv", dir + "/results.png");
  const cv::Mat img = cv::imread(dir + "/results.png");
  ASSERT_FALSE(img.empty());
  cv::Mat mask;  // the data line's colour (tab:blue) in the recall chart (row 0, column 4)
  cv::inRange(img(cv::Rect(4 * 400, 0, 400, 300)), cv::Scalar(170, 110, 20), cv::Scalar(190, 130, 45), mask);
  // leave out the legend (its sample line): look at the line's lowest part only
  const cv::Rect line = cv::boundingRect(mask);
  ASSERT_GT(line.area(), 0);
  EXPECT_GT(line.br().y, 300 - 80) << "the zero line should sit at the bottom of the plot area";
  // the smooth line's colour (tab:orange) is drawn from 5 epochs on, and its legend entry with it
  cv::Mat orange;
  cv::inRange(img(cv::Rect(0, 0, 400, 300)), cv::Scalar(4, 117, 245), cv::Scalar(24, 137, 255), orange);
  EXPECT_GT(cv::countNonZero(orange), 20);
}
