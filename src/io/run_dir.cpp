// Run directory, run logging and the progress line (include/yolo11/io/run_dir.h).
#include "yolo11/io/run_dir.h"

#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>

#include "yolo11/compat.h"

namespace yolo11::io {
namespace fs = std::filesystem;

std::string make_run_dir(const std::string& project, const std::string& name, bool exist_ok, bool weights_dir) {
  const fs::path root = project.empty() ? fs::path("runs") / "train" : fs::path(project);
  const std::string base = name.empty() ? "train" : name;
  auto fail = [](const fs::path& p, const std::string& why) {
    return std::runtime_error("make_run_dir: cannot create '" + p.string() + "': " + why +
                              " (check permissions or choose another project=)");
  };
  std::error_code ec;
  fs::create_directories(root, ec);
  if (ec) throw fail(root, ec.message());
  fs::path dir = root / base;
  if (exist_ok) {
    fs::create_directories(dir, ec);
    if (ec) throw fail(dir, ec.message());
  } else {
    // Claimed atomically (issue 10): mkdir fails with EEXIST when the name is taken, by an earlier run or by one
    // starting at the same moment, and the next suffix is tried (train, train2, train3, ... as Ultralytics).
    for (int n = 1;; ++n) {
      dir = n == 1 ? root / base : root / (base + std::to_string(n));
      if (::mkdir(dir.c_str(), 0777) == 0) break;
      if (errno != EEXIST) throw fail(dir, std::strerror(errno));
      if (n > 100000) throw std::runtime_error("make_run_dir: no free name for '" + (root / base).string() + "'");
    }
  }
  if (weights_dir) {
    fs::create_directories(dir / "weights", ec);
    if (ec) throw fail(dir / "weights", ec.message());
  }
  return dir.string();
}

void setup_run_logging(const std::string& run_dir, bool append) {
  auto console = std::make_shared<spdlog::sinks::stdout_color_sink_mt>();
  auto file = std::make_shared<spdlog::sinks::basic_file_sink_mt>(run_dir + "/train.log", /*truncate=*/!append);
  auto logger = std::make_shared<spdlog::logger>("yolo11", spdlog::sinks_init_list{console, file});
  logger->set_pattern("%v");
  logger->flush_on(spdlog::level::info);
  spdlog::set_default_logger(logger);
  spdlog::drop("yolo11_file");
  auto file_only = std::make_shared<spdlog::logger>("yolo11_file", file);
  file_only->set_pattern("%v");
  file_only->flush_on(spdlog::level::info);
  spdlog::register_logger(file_only);
}

void setup_rank_logging(int rank) {
  auto console = std::make_shared<spdlog::sinks::stdout_color_sink_mt>();
  auto logger = std::make_shared<spdlog::logger>("yolo11", console);
  logger->set_pattern(fmt::format("[rank {}] %v", rank));
  logger->set_level(spdlog::level::warn);
  spdlog::set_default_logger(logger);
  spdlog::drop("yolo11_file");
  auto none = std::make_shared<spdlog::logger>("yolo11_file");  // no sinks: the file twin of rank 0 only
  spdlog::register_logger(none);
}

std::string progress_header() {
  return fmt::format("{:>11}{:>11}{:>11}{:>11}{:>11}{:>11}{:>11}", "Epoch", "GPU_mem", "box_loss", "cls_loss",
                     "dfl_loss", "Instances", "Size");
}

std::string progress_line(int64_t epoch, int64_t epochs, const std::string& mem, const std::vector<double>& tloss,
                          int64_t instances, int64_t size, int64_t i, int64_t nb, double elapsed) {
  const double its = elapsed > 0 ? static_cast<double>(i) / elapsed : 0.0;
  const double eta = its > 0 ? static_cast<double>(nb - i) / its : 0.0;
  const int pct = static_cast<int>(100.0 * static_cast<double>(i) / static_cast<double>(std::max<int64_t>(nb, 1)));
  const int bar_len = 12, filled = pct * bar_len / 100;
  std::string bar(static_cast<size_t>(filled), '#');
  bar += std::string(static_cast<size_t>(bar_len - filled), '-');
  return fmt::format("{:>11}{:>11}{:>11.4g}{:>11.4g}{:>11.4g}{:>11}{:>11}: {:>3}% {} {}/{} {:.2f}it/s {:.1f}s<{:.1f}s",
                     fmt::format("{}/{}", epoch + 1, epochs), mem, tloss.at(0), tloss.at(1), tloss.at(2), instances,
                     size, pct, bar, i, nb, its, elapsed, eta);
}

std::string memory_string(bool cuda) {
  if (cuda) {
    const int64_t b = compat::memory_allocated(0);
    return b >= 0 ? fmt::format("{:.3g}G", static_cast<double>(b) / 1e9) : "n/a";
  }
  return "0G";
}

}  // namespace yolo11::io
