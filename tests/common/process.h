#pragma once
// Driving the real executables from tests, as a user would: fork/exec with output to a log file, wait, signal.
#include <sys/types.h>

#include <filesystem>
#include <string>
#include <vector>

namespace yolo11::test {

/// <build dir>/<name>, e.g. exe("yolo11-train").
std::string exe(const std::string& name);
/// Starts `binary args...` with stdout and stderr appended to `log`; returns the child's pid.
pid_t spawn(const std::string& binary, const std::vector<std::string>& args, const std::string& log);
/// Waits for `pid`: its exit code, or −signal when a signal ended it.
int wait_exit(pid_t pid);
/// spawn + wait_exit.
int run(const std::string& binary, const std::vector<std::string>& args, const std::string& log);
/// Whole file as a string ("" when missing).
std::string read_text(const std::string& path);
/// Data rows of a CSV file (header excluded; 0 when missing).
size_t count_rows(const std::filesystem::path& csv);
/// yolo11-train overrides for a small, reproducible coco8 run: yolo11n at imgsz 64, `batch`, one loader worker, one
/// intra-op thread, seed 0, no plots, instrument off, close_mosaic 0, into <project>/<name>.
std::vector<std::string> coco8_train_args(const std::string& project, const std::string& name, int epochs, int batch = 4);

/// The python of the test-only readers (tools/readers.sh: TensorBoard's and the safetensors package's own readers):
/// YOLO11_READERS_PYTHON, else ${XDG_CACHE_HOME:-~/.cache}/yolo11-cpp/readers-venv/bin/python, when it imports
/// `module`; else "" with `why` saying what is missing and how to install it (the test then skips with it).
std::string readers_python(const std::string& module, std::string& why);

/// The python of the reference (Ultralytics 8.4.50, test-only, as tools/reference/val_crosscheck.sh installs it):
/// YOLO11_REFERENCE_PYTHON, else ${XDG_CACHE_HOME:-~/.cache}/yolo11-cpp/reference-venv/bin/python, when it imports
/// ultralytics and safetensors; else "" with `why` saying what is missing (the test then skips with it).
std::string reference_python(std::string& why);

/// Start stress (issue 10): runs yolo11-train `starts` times back to back, each a 1-epoch coco8 run at imgsz 64 with
/// batch 1 (4 steps) into <project>/s<i>, `workers` cycling through the given values and intra-op threads through
/// 1, 2. Returns one line per start that ended by a signal or a non-zero exit (with its log's tail); empty = all
/// clean. Progress goes to stdout.
std::vector<std::string> start_stress(const std::string& project, int starts, const std::vector<int>& workers);

}  // namespace yolo11::test
