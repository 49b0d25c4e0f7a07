// results.csv writer/reader and results.png plotter (reference: Ultralytics BaseTrainer.save_metrics,
// utils/plotting.py plot_results).
#include "yolo11/engine/results.h"

#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <sstream>
#include <stdexcept>

#include "yolo11/io/file.h"
#include "yolo11/plot/chart.h"

namespace yolo11::engine {

namespace {

std::string fmt6g(double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.6g", v);
  return buf;
}

std::vector<std::string> split(const std::string& line, char sep) {
  std::vector<std::string> out;
  std::string item;
  std::stringstream ss(line);
  while (std::getline(ss, item, sep)) {
    const auto b = item.find_first_not_of(" \t\r"), e = item.find_last_not_of(" \t\r");
    out.push_back(b == std::string::npos ? std::string() : item.substr(b, e - b + 1));
  }
  if (!line.empty() && line.back() == sep) out.emplace_back();
  return out;
}

}  // namespace

std::vector<double> EpochResult::values() const {
  return {static_cast<double>(epoch), time, box_loss, cls_loss, dfl_loss, precision, recall, map50, map50_95,
          val_box_loss, val_cls_loss, val_dfl_loss, lr_pg0, lr_pg1, lr_pg2};
}

EpochResult EpochResult::from_values(const std::vector<double>& v) {
  if (v.size() != ResultsCsv::columns().size())
    throw std::runtime_error("EpochResult::from_values: " + std::to_string(v.size()) + " values, expected " +
                             std::to_string(ResultsCsv::columns().size()));
  EpochResult r;
  r.epoch = static_cast<int64_t>(std::llround(v[0]));
  r.time = v[1];
  r.box_loss = v[2], r.cls_loss = v[3], r.dfl_loss = v[4];
  r.precision = v[5], r.recall = v[6], r.map50 = v[7], r.map50_95 = v[8];
  r.val_box_loss = v[9], r.val_cls_loss = v[10], r.val_dfl_loss = v[11];
  r.lr_pg0 = v[12], r.lr_pg1 = v[13], r.lr_pg2 = v[14];
  return r;
}

const std::vector<std::string>& ResultsCsv::columns() {
  static const std::vector<std::string> c = {
      "epoch", "time", "train/box_loss", "train/cls_loss", "train/dfl_loss", "metrics/precision(B)",
      "metrics/recall(B)", "metrics/mAP50(B)", "metrics/mAP50-95(B)", "val/box_loss", "val/cls_loss",
      "val/dfl_loss", "lr/pg0", "lr/pg1", "lr/pg2"};
  return c;
}

ResultsCsv::ResultsCsv(std::string path) : path_(std::move(path)) {}

ResultsCsv ResultsCsv::read(const std::string& path) { return parse(io::read_file(path), path); }

ResultsCsv ResultsCsv::parse(const std::string& text, const std::string& path) {
  ResultsCsv r(path);
  std::stringstream ss(text);
  std::string line;
  int lineno = 0;
  const auto& cols = columns();
  while (std::getline(ss, line)) {
    ++lineno;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    const auto f = split(line, ',');
    if (lineno == 1) {
      if (f != cols)
        throw std::runtime_error("results.csv: '" + path + "':1 has header '" + line + "', expected the " +
                                 std::to_string(cols.size()) + " Ultralytics columns starting 'epoch,time,train/box_loss'");
      continue;
    }
    if (f.size() != cols.size())
      throw std::runtime_error("results.csv: '" + path + "':" + std::to_string(lineno) + " has " +
                               std::to_string(f.size()) + " fields, expected " + std::to_string(cols.size()));
    std::vector<double> row;
    for (size_t i = 0; i < f.size(); ++i) {
      size_t pos = 0;
      double v = 0;
      try {
        v = std::stod(f[i], &pos);
      } catch (...) {
        pos = 0;
      }
      if (pos == 0 || pos != f[i].size())
        throw std::runtime_error("results.csv: '" + path + "':" + std::to_string(lineno) + " column '" + cols[i] +
                                 "' is not a number: '" + f[i] + "'");
      row.push_back(v);
    }
    r.rows_.push_back(std::move(row));
  }
  return r;
}

std::string ResultsCsv::text() const {
  std::string s;
  const auto& cols = columns();
  for (size_t i = 0; i < cols.size(); ++i) s += (i ? "," : "") + cols[i];
  s += "\n";
  for (const auto& row : rows_) {
    for (size_t i = 0; i < row.size(); ++i) s += (i ? "," : "") + fmt6g(row[i]);
    s += "\n";
  }
  return s;
}

void ResultsCsv::append(const EpochResult& r) {
  rows_.push_back(r.values());
  io::write_file_atomic(path_, text());
}

void ResultsCsv::truncate(int64_t last_epoch) {
  rows_.erase(std::remove_if(rows_.begin(), rows_.end(),
                             [&](const std::vector<double>& row) { return row[0] > static_cast<double>(last_epoch); }),
              rows_.end());
  io::write_file_atomic(path_, text());
}

std::vector<EpochResult> ResultsCsv::results() const {
  std::vector<EpochResult> out;
  for (const auto& row : rows_) out.push_back(EpochResult::from_values(row));
  return out;
}

std::vector<double> ResultsCsv::column(const std::string& name) const {
  const auto& cols = columns();
  const auto it = std::find(cols.begin(), cols.end(), name);
  if (it == cols.end()) throw std::runtime_error("results.csv: no column '" + name + "'");
  const size_t i = static_cast<size_t>(it - cols.begin());
  std::vector<double> v;
  for (const auto& row : rows_) v.push_back(row[i]);
  return v;
}

// ---- results.png ------------------------------------------------------------------------------------------------

namespace {

constexpr int kW = 400, kH = 300;  // one chart

/// Moving average over ~10 % of the points (at least 3), NaN where a window holds no finite value: the "smooth" line
/// (Ultralytics draws a Gaussian-filtered copy).
std::vector<double> smooth(const std::vector<double>& y) {
  const long half = std::max<long>(1, static_cast<long>(y.size() / 20));
  std::vector<double> out(y.size(), std::nan(""));
  for (size_t i = 0; i < y.size(); ++i) {
    double s = 0;
    int n = 0;
    for (long k = -half; k <= half; ++k) {
      const long j = static_cast<long>(i) + k;
      if (j >= 0 && j < static_cast<long>(y.size()) && std::isfinite(y[static_cast<size_t>(j)]))
        s += y[static_cast<size_t>(j)], ++n;
    }
    if (n) out[i] = s / n;
  }
  return out;
}

}  // namespace

void plot_results(const std::string& csv, const std::string& png) {
  const ResultsCsv r = ResultsCsv::read(csv);
  const std::vector<std::string> charts = {
      "train/box_loss", "train/cls_loss", "train/dfl_loss", "metrics/precision(B)", "metrics/recall(B)",
      "val/box_loss",   "val/cls_loss",   "val/dfl_loss",   "metrics/mAP50(B)",     "metrics/mAP50-95(B)",
      "lr/pg0",         "lr/pg1",         "lr/pg2",         "time"};
  constexpr int cols = 5, rows = 3;
  cv::Mat canvas(rows * kH, cols * kW, CV_8UC3, cv::Scalar(255, 255, 255));
  const auto x = r.column("epoch");
  for (size_t i = 0; i < charts.size(); ++i) {
    const cv::Rect cell(static_cast<int>(i % cols) * kW, static_cast<int>(i / cols) * kH, kW, kH);
    const auto y = r.column(charts[i]);
    plot::ChartOptions o;
    o.title = charts[i];
    o.xlabel = "epoch";
    if (charts[i] == "time") o.ylabel = "s";
    o.integer_x = true;
    o.grid = true;
    o.font_scale = 0.4;
    o.max_ticks = 6;
    if (x.empty()) o.xlim = std::array<double, 2>{0.0, 1.0};
    // Every chart says which line is which: the data with dots, and its moving average once there are 5 epochs.
    std::vector<plot::Series> s{{x, y, plot::palette(0), 2, "results", 3}};
    if (y.size() >= 5) s.push_back({x, smooth(y), plot::palette(1), 1, "smooth"});
    o.legend = plot::Legend::kInsideBest;
    plot::draw_chart(canvas, cell, s, o);
  }
  std::vector<uchar> buf;
  if (!cv::imencode(".png", canvas, buf)) throw std::runtime_error("plot_results: PNG encoding failed for '" + png + "'");
  io::write_file_atomic(png, std::string_view(reinterpret_cast<const char*>(buf.data()), buf.size()));
}

}  // namespace yolo11::engine
