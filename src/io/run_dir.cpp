// Run directory, run logging and the progress line (include/yolo11/io/run_dir.h), and the console of every command
// (include/yolo11/io/console.h).
#include "yolo11/io/run_dir.h"

#include <c10/util/Exception.h>
#include <spdlog/spdlog.h>
#include <torch/version.h>

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <stdexcept>
#include <utility>

#include "yolo11/core/compat.h"
#include "yolo11/io/console.h"

namespace yolo11::io {
namespace fs = std::filesystem;

// ---- the console (include/yolo11/io/console.h) ----------------------------------------------------------------

namespace {

// One lock for every plain sink and the progress line: lines of different loggers never interleave mid-line.
std::mutex& output_mutex() {
  static std::mutex m;
  return m;
}
bool progress_live = false;  // a \r progress line is on stdout, not yet ended (guarded by output_mutex)

void end_live_line() {  // caller holds output_mutex
  if (!progress_live) return;
  std::fputc('\n', stdout);
  std::fflush(stdout);
  progress_live = false;
}

class PlainSink final : public spdlog::sinks::sink {
 public:
  PlainSink(std::FILE* out, std::FILE* err, std::string prefix, bool console, bool owns)
      : out_(out), err_(err), prefix_(std::move(prefix)), console_(console), owns_(owns) {}
  ~PlainSink() override {
    if (owns_) std::fclose(out_);
  }
  void log(const spdlog::details::log_msg& msg) override {
    std::string line = prefix_;
    if (msg.level == spdlog::level::warn) line += "WARNING ";
    line.append(msg.payload.data(), msg.payload.size());
    line += '\n';
    std::lock_guard<std::mutex> lock(output_mutex());
    if (console_) end_live_line();
    std::FILE* f = msg.level >= spdlog::level::err ? err_ : out_;
    if (f != out_) std::fflush(out_);  // stdout's earlier lines first
    std::fwrite(line.data(), 1, line.size(), f);
  }
  void flush() override {
    std::lock_guard<std::mutex> lock(output_mutex());
    std::fflush(out_);
    if (err_ != out_) std::fflush(err_);
  }
  void set_pattern(const std::string&) override {}
  void set_formatter(std::unique_ptr<spdlog::formatter>) override {}

 private:
  std::FILE* out_;
  std::FILE* err_;
  std::string prefix_;
  bool console_;
  bool owns_;
};

void libtorch_warning(const std::string& message) {
  if (!is_libtorch_notice(message)) spdlog::warn("LibTorch: {}", message);
}

/// LibTorch's warnings (TORCH_WARN): the known internal notices are dropped, the rest logged as warnings (console
/// and train.log) instead of c10's stderr lines. LibTorch 2.x: a handler per thread; 1.13: one for the process
/// (where c10's stderr line went through glog, with its "Logging before InitGoogleLogging()" notice).
class NoticeFilter final : public c10::WarningHandler {
 public:
#if TORCH_VERSION_MAJOR >= 2
  void process(const c10::Warning& warning) override { libtorch_warning(warning.msg()); }
#else
  void process(const c10::SourceLocation&, const std::string& msg, const bool) override { libtorch_warning(msg); }
#endif
};

}  // namespace

bool is_libtorch_notice(const std::string& message) {
  // An API-stability notice about an operator the loss uses (src/loss/tal.cpp), printed once per process: nothing
  // for the user to act on.
  static const char* const kNotices[] = {"scatter_reduce() is in beta"};
  for (const char* n : kNotices)
    if (message.find(n) != std::string::npos) return true;
  return false;
}

std::shared_ptr<spdlog::sinks::sink> plain_sink(std::FILE* out, std::FILE* err, std::string prefix, bool console) {
  return std::make_shared<PlainSink>(out, err, std::move(prefix), console, /*owns=*/false);
}

std::shared_ptr<spdlog::sinks::sink> plain_file_sink(const std::string& path, bool append) {
  std::FILE* f = std::fopen(path.c_str(), append ? "a" : "w");
  if (f == nullptr) throw std::runtime_error("cannot open " + path + " for writing; check the run directory's permissions");
  return std::make_shared<PlainSink>(f, f, "", /*console=*/false, /*owns=*/true);
}

void setup_console() {
  static std::once_flag once;
  std::call_once(once, [] {
    static NoticeFilter filter;  // 2.x: the main thread's, the thread of the loss and the validator
#if TORCH_VERSION_MAJOR >= 2
    c10::WarningUtils::set_warning_handler(&filter);
#else
    c10::Warning::set_warning_handler(&filter);
#endif
    auto logger = std::make_shared<spdlog::logger>("yolo11", plain_sink(stdout, stderr));
    logger->flush_on(spdlog::level::info);
    spdlog::set_default_logger(logger);
  });
}

void progress_update(const std::string& line) {
  std::lock_guard<std::mutex> lock(output_mutex());
  std::fprintf(stdout, "\r%s", line.c_str());
  std::fflush(stdout);
  progress_live = true;
}

void progress_end() {
  std::lock_guard<std::mutex> lock(output_mutex());
  end_live_line();
}

// ---- the run directory and its logging ------------------------------------------------------------------------

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
  auto console = plain_sink(stdout, stderr);
  auto file = plain_file_sink(run_dir + "/train.log", append);
  auto logger = std::make_shared<spdlog::logger>("yolo11", spdlog::sinks_init_list{console, file});
  logger->flush_on(spdlog::level::info);
  spdlog::set_default_logger(logger);
  spdlog::drop("yolo11_file");
  auto file_only = std::make_shared<spdlog::logger>("yolo11_file", file);
  file_only->flush_on(spdlog::level::info);
  spdlog::register_logger(file_only);
}

std::shared_ptr<spdlog::logger> file_log() {
  auto l = spdlog::get("yolo11_file");
  return l ? l : spdlog::default_logger();
}

void setup_rank_logging(int rank) {
  auto logger = std::make_shared<spdlog::logger>("yolo11", plain_sink(stdout, stderr, fmt::format("[rank {}] ", rank)));
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
