#pragma once
// A run's directory and its console/file logging (Ultralytics' save_dir, LOGGER and the tqdm progress line).
#include <spdlog/logger.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace yolo11::io {

/// Creates and returns the run directory `<project>/<name>` (project "" → "runs/train", name "" → "train"),
/// with a `weights/` subfolder when `weights_dir` (training runs). Without exist_ok an existing name is
/// incremented like Ultralytics: train, train2, train3, ...; the name is claimed atomically (mkdir(2)), so runs
/// starting at the same moment never share a directory. Throws std::runtime_error when the directory cannot
/// be created.
std::string make_run_dir(const std::string& project, const std::string& name, bool exist_ok, bool weights_dir = true);

/// Makes spdlog's default logger write to the console and `<run_dir>/train.log`, both as io::plain_sink lines
/// (include/yolo11/io/console.h), flushed at info; registers "yolo11_file", a file-only twin for what train.log
/// keeps and the console does not show (the \r progress line on a terminal, the per-epoch stage and loader tables).
/// `append`: a resumed run adds to its train.log instead of replacing it.
void setup_run_logging(const std::string& run_dir, bool append);

/// The logger of lines for train.log only: "yolo11_file" when registered (setup_run_logging, setup_rank_logging),
/// else the default logger (a profiler outside a training run logs to wherever spdlog logs).
std::shared_ptr<spdlog::logger> file_log();

/// DDP ranks other than 0: console only (io::plain_sink), warnings and errors, prefixed "[rank N] " (Ultralytics
/// silences them too); "yolo11_file" is registered without sinks (rank 0's train.log is the run's log).
void setup_rank_logging(int rank);

/// The column header of the progress line: Epoch GPU_mem box_loss cls_loss dfl_loss Instances Size.
std::string progress_header();

/// Ultralytics-style progress line: "  1/100  0G  3.123  5.123  4.123  45  640: 38% ####---- 3/8 1.2it/s 2.1s<4.3s".
/// `epoch` is 0-based, `i` the number of steps done of `nb`, `elapsed` seconds since the epoch began; `tloss` holds
/// the 3 mean losses (box, cls, dfl).
std::string progress_line(int64_t epoch, int64_t epochs, const std::string& mem, const std::vector<double>& tloss,
                          int64_t instances, int64_t size, int64_t i, int64_t nb, double elapsed);

/// The GPU_mem column: allocated CUDA memory of device 0 as "1.23G" ("n/a" when unknown); "0G" on the CPU.
std::string memory_string(bool cuda);

}  // namespace yolo11::io
