// DDP straggler report (report_ranks), the loader and run reports (report_loader, report_run) and the stage-delay
// test hook (test_delay); see run.h.
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <torch/torch.h>

#include <chrono>
#include <fstream>
#include <cstdlib>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "yolo11/dist/dist.h"
#include "yolo11/engine/run.h"
#include "yolo11/instrument/profiler.h"
#include "yolo11/instrument/stats.h"
#include "yolo11/instrument/straggler.h"
#include "yolo11/io/run_dir.h"

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

namespace {
// read_bytes of /proc/self/io (bytes this process caused to be read from storage); −1 where unavailable.
int64_t proc_read_bytes() {
  std::ifstream in("/proc/self/io");
  std::string key;
  int64_t v = 0;
  while (in >> key >> v)
    if (key == "read_bytes:") return v;
  return -1;
}
}  // namespace

void report_loader(Run& r) {
  static int64_t last_bytes = proc_read_bytes();
  const data::LoaderReport rep = r.loader_report ? std::move(*r.loader_report) : r.train_loader->take_stats();
  r.loader_report.reset();
  const int64_t bytes = proc_read_bytes();
  const double mb_s = bytes >= 0 && last_bytes >= 0 && rep.wall_s > 0
                          ? static_cast<double>(bytes - last_bytes) / 1e6 / rep.wall_s : -1;
  last_bytes = bytes;
  if (!r.main_rank || rep.batches == 0) return;
  const std::string disk = mb_s >= 0 ? fmt::format("disk read {:.1f} MB/s", mb_s) : "disk read n/a";
  std::string text = rep.table() + "; " + disk;
  if (!r.prof->enabled()) return;  // instrument=off: no per-part loader table either
  io::file_log()->info("{}", text);  // the console has the latest one at the end (report_run)
  r.loader_table = fmt::format("data loader, epoch {}/{}:\n{}", r.epoch + 1, r.cfg.epochs, text);
  std::vector<instrument::LoaderPartRow> rows;
  for (const auto& p : rep.parts) rows.push_back({p.name, p.count, p.total_s, p.p50_ms / 1e3, p.p95_ms / 1e3, p.share});
  r.prof->record_loader(r.epoch, rows, rep.busy_s, text.substr(text.rfind('\n') + 1));
}

void report_run(Run& r) {
  if (!r.main_rank || !r.prof->enabled()) return;
  const instrument::WindowSummary run = r.prof->run_summary();
  std::string table = instrument::format_table(run);
  while (!table.empty() && table.back() == '\n') table.pop_back();
  if (run.steps > 0) spdlog::info("{}", table);  // no table of 0 steps: the diagnosis says why
  if (!r.loader_table.empty()) spdlog::info("{}", r.loader_table);
}

namespace {
struct Delay {
  instrument::StepStage stage;
  int rank = 0;
  int ms = 0;
};
std::vector<Delay> parse_delays() {
  std::vector<Delay> out;
  const char* env = std::getenv("YOLO11_TEST_DELAY");
  if (!env || !*env) return out;
  std::stringstream all(env);
  std::string item;
  while (std::getline(all, item, ',')) {
    const auto a = item.find(':'), b = item.rfind(':');
    if (a == std::string::npos || a == b) {
      spdlog::warn("YOLO11_TEST_DELAY: '{}' ignored; expected stage:rank:ms", item);
      continue;
    }
    const auto stage = instrument::parse_step_stage(item.substr(0, a));
    if (!stage) {
      spdlog::warn("YOLO11_TEST_DELAY: '{}' ignored; '{}' is not a stage", item, item.substr(0, a));
      continue;
    }
    out.push_back({*stage, std::atoi(item.substr(a + 1, b - a - 1).c_str()), std::atoi(item.c_str() + b + 1)});
  }
  return out;
}
}  // namespace

void test_delay(const Run& r, instrument::StepStage stage) {
  static const std::vector<Delay> delays = parse_delays();
  for (const auto& d : delays)
    if (d.rank == r.denv.rank && d.stage == stage && d.ms > 0)
      std::this_thread::sleep_for(std::chrono::milliseconds(d.ms));
}

}  // namespace yolo11::engine
