#pragma once
// Straggler report for data-parallel runs (issue 17, docs/dist.md "Straggler report"): every window, each rank's
// stage times per step are gathered (one small all-reduce of a world × kRankFields matrix, by the trainer) and
// compared. A collective hides a slow rank inside the *fast* ranks' wait, so ranks are compared by their time to
// ready — what a rank spends before it can enter the gradient all-reduce (dataloader + h2d + forward + loss +
// backward) — and the all-reduce time is reported apart as that rank's wait. No torch dependency.
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "yolo11/instrument/stats.h"

namespace yolo11::instrument {

/// Columns of one rank's row: mean seconds per step over the window (a stage that ran on some steps only, e.g.
/// allreduce under gradient accumulation, is averaged over all the window's steps).
inline constexpr std::array<const char*, 7> kRankFields = {stage_name(StepStage::dataloader),
                                                           stage_name(StepStage::h2d),
                                                           stage_name(StepStage::forward),
                                                           stage_name(StepStage::loss),
                                                           stage_name(StepStage::backward),
                                                           stage_name(StepStage::allreduce),
                                                           "step"};
using RankRow = std::array<double, kRankFields.size()>;

/// Row of this process for window `w` (WindowSummary stage totals / steps; 0 for a stage that did not run).
RankRow rank_row(const WindowSummary& w);

struct RankFieldStats {
  std::string field;
  double min = 0, median = 0, max = 0;  ///< s per step over ranks (median: mean of the middle two for even world)
  int max_rank = 0;                     ///< lowest rank holding the max
};

struct RankReport {
  int64_t epoch = -1, first_step = -1, last_step = -1;  ///< the window
  std::vector<RankRow> rows;            ///< [rank]
  std::vector<RankFieldStats> fields;   ///< per kRankFields entry
  std::vector<double> ready_s;          ///< [rank] time to ready: dataloader + h2d + forward + loss + backward
  double imbalance = 0;                 ///< (max − median) / median of ready_s; 0 when the median is 0
  int straggler = -1;                   ///< rank with the largest ready time; −1 when imbalance < the threshold
  std::string cause;                    ///< its field furthest above the other ranks' median of it (in seconds)
  double cause_ratio = 0;               ///< that field / the other ranks' median of it (inf when that median is 0)
  std::string verdict;  ///< one sentence: "straggler rank 1: dataloader 3.1× the other ranks' median … → data-bound on rank 1"
};

/// Compares the ranks of one window. `balanced_below`: imbalance under which no straggler is named. The cause is
/// "data" for dataloader/h2d and "compute" for forward/loss/backward. Throws std::invalid_argument for no rows.
RankReport analyze_ranks(std::vector<RankRow> rows, double balanced_below = 0.05);

/// Lines for the log: per field "min / median / max (rank of the max)", the imbalance and the verdict.
std::string format_rank_report(const RankReport& r);

}  // namespace yolo11::instrument
