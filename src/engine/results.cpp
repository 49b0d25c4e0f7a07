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

constexpr int kW = 320, kH = 250;                   // one chart
constexpr int kLeft = 72, kRight = 12, kTop = 30, kBottom = 34;  // plot-area margins

std::string tick(double v, int digits = 3) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.*g", digits, v);
  return buf;
}

void draw_chart(cv::Mat& canvas, const cv::Rect& cell, const std::string& title, const std::vector<double>& x,
                const std::vector<double>& y) {
  cv::Mat img = canvas(cell);
  const cv::Scalar black(0, 0, 0), grey(210, 210, 210), blue(180, 119, 31), orange(14, 127, 255);
  const int font = cv::FONT_HERSHEY_SIMPLEX;
  int base = 0;
  const auto tsz = cv::getTextSize(title, font, 0.5, 1, &base);
  cv::putText(img, title, {(kW - tsz.width) / 2, 20}, font, 0.5, black, 1, cv::LINE_AA);
  const cv::Rect area(kLeft, kTop, kW - kLeft - kRight, kH - kTop - kBottom);
  if (x.empty()) {
    cv::rectangle(img, area, black, 1);
    cv::putText(img, "no data", {area.x + area.width / 2 - 28, area.y + area.height / 2}, font, 0.45, black, 1, cv::LINE_AA);
    return;
  }
  double x0 = *std::min_element(x.begin(), x.end()), x1 = *std::max_element(x.begin(), x.end());
  double y0 = std::numeric_limits<double>::infinity(), y1 = -y0;
  for (double v : y)
    if (std::isfinite(v)) y0 = std::min(y0, v), y1 = std::max(y1, v);
  if (!std::isfinite(y0)) y0 = 0, y1 = 1;
  if (x1 == x0) x0 -= 1, x1 += 1;
  if (y1 == y0) {
    const double pad = y0 == 0 ? 1.0 : std::abs(y0) * 0.1;
    y0 -= pad, y1 += pad;
  } else {
    const double pad = (y1 - y0) * 0.05;
    y0 -= pad, y1 += pad;
  }
  auto px = [&](double v) { return area.x + static_cast<int>(std::lround((v - x0) / (x1 - x0) * area.width)); };
  auto py = [&](double v) { return area.y + area.height - static_cast<int>(std::lround((v - y0) / (y1 - y0) * area.height)); };
  // grid + axes + tick labels (y: min/mid/max, x: first/last epoch)
  for (int k = 0; k <= 4; ++k) {
    const int gy = area.y + area.height * k / 4;
    cv::line(img, {area.x, gy}, {area.x + area.width, gy}, grey, 1);
  }
  cv::rectangle(img, area, black, 1);
  int digits = 3;  // enough significant digits that min, mid and max read differently (a flat curve: 5.651/5.652)
  while (digits < 8 && (tick(y0, digits) == tick((y0 + y1) / 2, digits) || tick(y1, digits) == tick((y0 + y1) / 2, digits)))
    ++digits;
  for (double v : {y0, (y0 + y1) / 2, y1}) {
    const std::string s = tick(v, digits);
    const auto sz = cv::getTextSize(s, font, 0.38, 1, &base);
    cv::putText(img, s, {area.x - sz.width - 4, py(v) + sz.height / 2}, font, 0.38, black, 1, cv::LINE_AA);
  }
  for (double v : {x.front(), x.back()}) {
    const std::string s = tick(v);
    const auto sz = cv::getTextSize(s, font, 0.38, 1, &base);
    cv::putText(img, s, {px(v) - sz.width / 2, area.y + area.height + 16}, font, 0.38, black, 1, cv::LINE_AA);
  }
  cv::putText(img, "epoch", {area.x + area.width / 2 - 18, kH - 4}, font, 0.38, black, 1, cv::LINE_AA);
  // data line with markers, then a smoothed line (moving average over ~10 % of the points, like Ultralytics'
  // "smooth" curve)
  std::vector<cv::Point> pts;
  for (size_t i = 0; i < x.size(); ++i)
    if (std::isfinite(y[i])) pts.emplace_back(px(x[i]), py(y[i]));
  if (pts.size() > 1) cv::polylines(img, pts, false, blue, 2, cv::LINE_AA);
  for (const auto& p : pts) cv::circle(img, p, 3, blue, cv::FILLED, cv::LINE_AA);
  const int half = std::max<int>(1, static_cast<int>(y.size() / 20));
  if (y.size() >= 5) {
    std::vector<cv::Point> sm;
    for (size_t i = 0; i < y.size(); ++i) {
      double s = 0;
      int n = 0;
      for (int k = -half; k <= half; ++k) {
        const long j = static_cast<long>(i) + k;
        if (j >= 0 && j < static_cast<long>(y.size()) && std::isfinite(y[static_cast<size_t>(j)])) s += y[static_cast<size_t>(j)], ++n;
      }
      if (n) sm.emplace_back(px(x[i]), py(s / n));
    }
    cv::polylines(img, sm, false, orange, 1, cv::LINE_AA);
  }
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
    draw_chart(canvas, cell, charts[i], x, r.column(charts[i]));
  }
  std::vector<uchar> buf;
  if (!cv::imencode(".png", canvas, buf)) throw std::runtime_error("plot_results: PNG encoding failed for '" + png + "'");
  io::write_file_atomic(png, std::string_view(reinterpret_cast<const char*>(buf.data()), buf.size()));
}

}  // namespace yolo11::engine
