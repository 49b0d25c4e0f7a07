#pragma once
// Run diff (yolo11-analyze RUN_A RUN_B): per stage and for img/s, the change from A to B over the two runs' window
// samples (breakdown.csv or the log's window lines; one sample per window: the stage's mean per step), with Welch's
// t-test and the Mann-Whitney U test (two-sided p-values), Hedges' g as effect size, the settings that differ between
// the two args.yaml, and a verdict line built from the table's rows ("loss 505% slower (p < 0.001); img/s 80% lower
// (p < 0.001); everything else unchanged"). Torch-free.
#include <string>
#include <utility>
#include <vector>

#include "yolo11/instrument/stats.h"

namespace yolo11::instrument {

/// Welch's two-sample t-test, two-sided: p-value (1 when either sample has < 2 values or both have zero variance
/// and equal means; 0 when both have zero variance and different means).
double welch_p(const std::vector<double>& a, const std::vector<double>& b);
/// Mann-Whitney U test, two-sided, normal approximation with tie correction and continuity correction.
double mann_whitney_p(const std::vector<double>& a, const std::vector<double>& b);
/// Hedges' g = (mean(b) − mean(a)) / pooled sd, small-sample corrected; ±1e9 when the pooled sd is 0 and means differ.
double hedges_g(const std::vector<double>& a, const std::vector<double>& b);

struct CompareOptions {
  double alpha = 0.01;        ///< a change is significant when Welch's p < alpha
  double min_rel = 0.05;      ///< ... and |Δ| ≥ min_rel × A's mean (the stage itself moved by 5 %)
  double min_step_share = 0.01;  ///< ... and |Δ| ≥ this × A's mean step (changes under 1 % of a step do not matter)
};

struct CompareRow {
  std::string name;          ///< stage name, "step" or "img/s"
  int64_t n_a = 0, n_b = 0;  ///< windows
  double mean_a = 0, mean_b = 0;  ///< s per step (img/s for "img/s"): mean of the window samples
  double change = 0;         ///< (mean_b − mean_a) / mean_a
  double p_welch = 1, p_mw = 1, g = 0;
  bool material = false;     ///< the change is large enough to matter (CompareOptions' min_rel, min_step_share)
  bool significant = false;  ///< p < alpha and material
};

struct CompareResult {
  std::string a, b;                 ///< the sources read
  std::vector<CompareRow> rows;     ///< step stages in log order, then others, then "step", then "img/s"
  std::vector<std::string> flagged; ///< stage names (not step / img/s) with a significant change
  std::vector<std::pair<std::string, std::pair<std::string, std::string>>> settings;  ///< key → (A, B), differing only
  std::string verdict;              ///< one line
  std::string report;               ///< settings, table, verdict
};

/// The verdict line of `rows`, each row in one group: the significant changes ("loss 505% slower (p < 0.001)",
/// "img/s 80% lower (p < 0.001)"), the significant differences too small to matter, the large differences that are
/// not significant, and the rest as unchanged ("everything else unchanged" only when the rest is all of them).
std::string verdict_of(const std::vector<CompareRow>& rows, const CompareOptions& o = {});
/// Compares the windows of two runs (lists as from analyze_run().windows).
CompareResult compare_windows(const std::vector<WindowSummary>& a, const std::vector<WindowSummary>& b,
                              const CompareOptions& o = {});
/// `key: value` pairs of an args.yaml that differ between the two files (name, project, exist_ok and resume left out;
/// a key present in one file only shows "-" for the other). Missing files → empty.
std::vector<std::pair<std::string, std::pair<std::string, std::string>>> diff_args(const std::string& args_a,
                                                                                  const std::string& args_b);
/// analyze_run on both paths, compare_windows, diff_args of the run directories' args.yaml, report.
/// Throws std::runtime_error when either run cannot be read.
CompareResult compare_runs(const std::string& path_a, const std::string& path_b, const CompareOptions& o = {});

}  // namespace yolo11::instrument
