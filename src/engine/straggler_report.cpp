// DDP straggler report of each closed window (report_ranks); see run_reports.h.
#include <spdlog/spdlog.h>

#include <vector>

#include "run_reports.h"
#include "yolo11/dist/dist.h"
#include "yolo11/instrument/profiler.h"
#include "yolo11/instrument/straggler.h"

namespace yolo11::engine {

void report_ranks(Run& r) {
  if (!r.pg->active() || !r.prof->enabled()) return;
  const auto& w = r.prof->last_window();
  if (w.kind != "window" || w.last_step != r.global_step) return;  // no window closed at this step (same on all ranks)
  const int world = r.pg->world();
  const auto F = static_cast<int64_t>(instrument::kRankFields.size());
  // world × F matrix, row-major; every row filled by its own rank, so the sum is the gathered matrix. Host values:
  // the group makes the tensor on its own device (CUDA under NCCL).
  std::vector<double> m(static_cast<size_t>(world * F), 0.0);
  const instrument::RankRow row = instrument::rank_row(w);
  for (int64_t k = 0; k < F; ++k) m[static_cast<size_t>(r.pg->rank() * F + k)] = row[static_cast<size_t>(k)];
  m = r.pg->all_reduce_sum(m, "all_reduce of the ranks' stage times");
  if (!r.main_rank) return;
  std::vector<instrument::RankRow> rows(static_cast<size_t>(world));
  for (int i = 0; i < world; ++i)
    for (int64_t k = 0; k < F; ++k)
      rows[static_cast<size_t>(i)][static_cast<size_t>(k)] = m[static_cast<size_t>(i * F + k)];
  instrument::RankReport rep = instrument::analyze_ranks(std::move(rows));
  rep.epoch = w.epoch;
  rep.first_step = w.first_step;
  rep.last_step = w.last_step;
  r.prof->record_ranks(rep);
  spdlog::info("{}", instrument::format_rank_report(rep));
}

}  // namespace yolo11::engine
