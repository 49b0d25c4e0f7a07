#pragma once
// results.csv (Ultralytics columns, one row per epoch, "%.6g" numbers) and results.png (a grid of per-column
// line charts).
#include <cstdint>
#include <string>
#include <vector>

namespace yolo11::engine {

/// One row of results.csv. `epoch` is 1-based as written in the file; `time` in seconds since training start (a
/// resumed run continues from the `time` of the epoch it resumed after; the pause between the runs is not counted).
struct EpochResult {
  int64_t epoch = 0;
  double time = 0;
  double box_loss = 0, cls_loss = 0, dfl_loss = 0;              ///< train losses (mean per batch)
  double precision = 0, recall = 0, map50 = 0, map50_95 = 0;    ///< validation metrics (B)
  double val_box_loss = 0, val_cls_loss = 0, val_dfl_loss = 0;  ///< validation losses
  double lr_pg0 = 0, lr_pg1 = 0, lr_pg2 = 0;                    ///< lr per group at the end of the epoch
  std::vector<double> values() const;                           ///< in columns() order
  static EpochResult from_values(const std::vector<double>& v);
};

class ResultsCsv {
 public:
  /// epoch,time,train/box_loss,train/cls_loss,train/dfl_loss,metrics/precision(B),metrics/recall(B),
  /// metrics/mAP50(B),metrics/mAP50-95(B),val/box_loss,val/cls_loss,val/dfl_loss,lr/pg0,lr/pg1,lr/pg2
  static const std::vector<std::string>& columns();

  /// An empty table writing to `path` (nothing is written until append()).
  explicit ResultsCsv(std::string path);
  /// Reads an existing results.csv (throws std::runtime_error naming the file and line for a bad header/row).
  static ResultsCsv read(const std::string& path);
  /// Parses CSV text (e.g. from a checkpoint); `path` is where later appends write.
  static ResultsCsv parse(const std::string& text, const std::string& path);

  /// Adds a row and rewrites the whole file atomically.
  void append(const EpochResult& r);
  /// Keeps rows with epoch ≤ last_epoch (1-based) and rewrites the file (resume after a crash).
  void truncate(int64_t last_epoch);

  const std::vector<std::vector<double>>& rows() const { return rows_; }
  std::vector<EpochResult> results() const;
  std::vector<double> column(const std::string& name) const;  ///< throws for an unknown column
  std::string text() const;                                   ///< the file contents
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::vector<std::vector<double>> rows_;
};

/// Draws results.png from a results.csv: one small line chart per column (losses, P, R, mAP50, mAP50-95, lrs)
/// in a 3×5 grid of 400 × 300 px charts (plot::draw_chart): title, epoch axis with whole-number ticks, y limits from
/// the data (never below 0 for the non-negative columns) with nice ticks, the data as dots and line ("results") and,
/// from 5 epochs on, its moving average ("smooth"), with a legend in each chart's emptiest corner. Throws
/// std::runtime_error when the CSV cannot be read or the PNG cannot be written.
void plot_results(const std::string& csv, const std::string& png);

}  // namespace yolo11::engine
