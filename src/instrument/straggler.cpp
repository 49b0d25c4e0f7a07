// Straggler report over the ranks of a data-parallel run (see straggler.h).
#include "yolo11/instrument/straggler.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace yolo11::instrument {

namespace {
constexpr size_t kReadyFields = 5;  // dataloader, h2d, forward, loss, backward: the work before the all-reduce

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}
}  // namespace

RankRow rank_row(const WindowSummary& w) {
  RankRow row{};
  const double steps = static_cast<double>(std::max<int64_t>(w.steps, 1));
  for (size_t k = 0; k < kRankFields.size(); ++k) {
    const std::string name = kRankFields[k];
    if (name == "step") {
      row[k] = w.step.total / steps;
      continue;
    }
    for (const auto& s : w.stages)
      if (s.name == name) row[k] = s.total / steps;
  }
  return row;
}

RankReport analyze_ranks(std::vector<RankRow> rows, double balanced_below) {
  if (rows.empty()) throw std::invalid_argument("analyze_ranks: no ranks");
  RankReport r;
  r.rows = std::move(rows);
  const size_t world = r.rows.size();
  for (size_t k = 0; k < kRankFields.size(); ++k) {
    RankFieldStats f;
    f.field = kRankFields[k];
    std::vector<double> v(world);
    for (size_t i = 0; i < world; ++i) v[i] = r.rows[i][k];
    f.min = *std::min_element(v.begin(), v.end());
    const auto it = std::max_element(v.begin(), v.end());
    f.max = *it;
    f.max_rank = static_cast<int>(it - v.begin());
    f.median = median_of(v);
    r.fields.push_back(f);
  }
  r.ready_s.resize(world);
  for (size_t i = 0; i < world; ++i)
    for (size_t k = 0; k < kReadyFields; ++k) r.ready_s[i] += r.rows[i][k];
  const double med = median_of(r.ready_s);
  const auto it = std::max_element(r.ready_s.begin(), r.ready_s.end());
  r.imbalance = med > 0 ? (*it - med) / med : 0;
  if (world < 2 || r.imbalance < balanced_below) {
    r.verdict = fmt::format("balanced: time to ready within {:.0f} % of the median on every rank", r.imbalance * 100);
    return r;
  }
  r.straggler = static_cast<int>(it - r.ready_s.begin());
  // Its cause: the field furthest above the other ranks' median (with two ranks, the other rank's value).
  const auto others_median = [&](size_t k) {
    std::vector<double> v;
    for (size_t i = 0; i < world; ++i)
      if (static_cast<int>(i) != r.straggler) v.push_back(r.rows[i][k]);
    return median_of(v);
  };
  size_t worst = 0;
  double excess = -INFINITY, m = 0;
  for (size_t k = 0; k < kReadyFields; ++k) {
    const double om = others_median(k), e = r.rows[static_cast<size_t>(r.straggler)][k] - om;
    if (e > excess) excess = e, worst = k, m = om;
  }
  r.cause = kRankFields[worst];
  const double v = r.rows[static_cast<size_t>(r.straggler)][worst];
  r.cause_ratio = m > 0 ? v / m : INFINITY;
  const bool data = worst < 2;
  const std::string ratio = std::isfinite(r.cause_ratio)
                                ? fmt::format("{:.1f}× the other ranks' median", r.cause_ratio)
                                : fmt::format("{:.3f} s where the other ranks take 0", v);
  // The others' all-reduce time includes their wait for the straggler.
  double others_wait = 0;
  for (size_t i = 0; i < world; ++i)
    if (static_cast<int>(i) != r.straggler) others_wait += r.rows[i][5];
  others_wait /= static_cast<double>(world - 1);
  r.verdict = fmt::format(
      "straggler rank {}: {} {} ({:.3f} s/step) → {} on rank {}; time to ready {:.0f} % above the median, the other "
      "ranks wait {:.3f} s/step in allreduce",
      r.straggler, r.cause, ratio, v, data ? "data-bound" : "compute-bound (" + r.cause + ")", r.straggler,
      r.imbalance * 100, others_wait);
  return r;
}

std::string format_rank_report(const RankReport& r) {
  std::string s = fmt::format("ranks (steps {}-{}, {} ranks), s/step min / median / max (rank of max):",
                              r.first_step, r.last_step, r.rows.size());
  for (const auto& f : r.fields)
    s += fmt::format(" {} {:.4f}/{:.4f}/{:.4f} (r{});", f.field, f.min, f.median, f.max, f.max_rank);
  s += "\n  " + r.verdict;
  return s;
}

}  // namespace yolo11::instrument
