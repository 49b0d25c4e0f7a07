// The loader's per-part table of each epoch (report_loader) and the end-of-run tables (report_run); see
// run_reports.h.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <string>

#include "run_reports.h"
#include "yolo11/instrument/profiler.h"
#include "yolo11/instrument/sampler.h"
#include "yolo11/instrument/stats.h"
#include "yolo11/io/run_dir.h"

namespace yolo11::engine {

void report_loader(Run& r) {
  const data::LoaderReport rep = r.loader_report ? std::move(*r.loader_report) : r.train_loader->take_stats();
  r.loader_report.reset();
  const int64_t bytes = instrument::process_read_bytes();
  const double mb_s = bytes >= 0 && r.loader_read_bytes >= 0 && rep.wall_s > 0
                          ? static_cast<double>(bytes - r.loader_read_bytes) / 1e6 / rep.wall_s
                          : -1;
  r.loader_read_bytes = bytes;
  if (!r.main_rank || rep.batches == 0) return;
  const std::string disk = mb_s >= 0 ? fmt::format("disk read {:.1f} MB/s", mb_s) : "disk read n/a";
  std::string text = rep.table() + "; " + disk;
  if (!r.prof->enabled()) return;    // instrument=off: no per-part loader table either
  io::file_log()->info("{}", text);  // the console has the latest one at the end (report_run)
  r.loader_table = fmt::format("data loader, epoch {}/{}:\n{}", r.epoch + 1, r.cfg.epochs, text);
  r.prof->record_loader(r.epoch, rep.parts, text.substr(text.rfind('\n') + 1));
}

void report_run(Run& r) {
  if (!r.main_rank || !r.prof->enabled()) return;
  const instrument::WindowSummary run = r.prof->run_summary();
  std::string table = instrument::format_table(run);
  while (!table.empty() && table.back() == '\n') table.pop_back();
  if (run.steps > 0) spdlog::info("{}", table);  // no table of 0 steps: the diagnosis says why
  if (!r.loader_table.empty()) spdlog::info("{}", r.loader_table);
}

}  // namespace yolo11::engine
