#include "process.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "golden.h"
#include "yolo11_test_config.h"

namespace yolo11::test {

std::string exe(const std::string& name) { return std::string(YOLO11_TEST_BINARY_DIR) + "/" + name; }

pid_t spawn(const std::string& binary, const std::vector<std::string>& args, const std::string& log) {
  const pid_t pid = fork();
  if (pid == 0) {
    const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd >= 0) {
      dup2(fd, 1);
      dup2(fd, 2);
    }
    std::vector<char*> argv;
    argv.push_back(const_cast<char*>(binary.c_str()));
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(binary.c_str(), argv.data());
    _exit(127);
  }
  return pid;
}

int wait_exit(pid_t pid) {
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
}

int run(const std::string& binary, const std::vector<std::string>& args, const std::string& log) {
  return wait_exit(spawn(binary, args, log));
}

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

size_t count_rows(const std::filesystem::path& csv) {
  std::ifstream in(csv);
  size_t n = 0;
  std::string line;
  while (std::getline(in, line))
    if (!line.empty()) ++n;
  return n > 0 ? n - 1 : 0;
}

std::string readers_python(const std::string& module, std::string& why) {
  std::string py;
  if (const char* e = std::getenv("YOLO11_READERS_PYTHON"); e && *e) {
    py = e;
  } else {
    const char* xdg = std::getenv("XDG_CACHE_HOME");
    const char* home = std::getenv("HOME");
    const std::string cache = xdg && *xdg ? std::string(xdg) : std::string(home ? home : "") + "/.cache";
    py = cache + "/yolo11-cpp/readers-venv/bin/python";
  }
  if (::access(py.c_str(), X_OK) != 0) {
    why = "no readers python at " + py + " (tools/readers.sh installs it, or set YOLO11_READERS_PYTHON)";
    return "";
  }
  const std::string log = scratch_dir("readers_python") + "/import_" + module + ".log";
  if (run(py, {"-c", "import " + module}, log) != 0) {
    why = py + " cannot import " + module + " (tools/readers.sh installs it): " + read_text(log);
    return "";
  }
  return py;
}

std::string reference_python(std::string& why) {
  std::string py;
  if (const char* e = std::getenv("YOLO11_REFERENCE_PYTHON"); e && *e) {
    py = e;
  } else {
    const char* xdg = std::getenv("XDG_CACHE_HOME");
    const char* home = std::getenv("HOME");
    const std::string cache = xdg && *xdg ? std::string(xdg) : std::string(home ? home : "") + "/.cache";
    py = cache + "/yolo11-cpp/reference-venv/bin/python";
  }
  if (::access(py.c_str(), X_OK) != 0) {
    why = "no reference python at " + py +
          " (tools/reference/val_crosscheck.sh installs ultralytics==8.4.50 there, or set YOLO11_REFERENCE_PYTHON)";
    return "";
  }
  const std::string log = scratch_dir("reference_python") + "/import.log";
  if (run(py, {"-c", "import ultralytics, safetensors"}, log) != 0) {
    why = py + " cannot import ultralytics and safetensors: " + read_text(log);
    return "";
  }
  return py;
}

std::vector<std::string> coco8_train_args(const std::string& project, const std::string& name, int epochs, int batch) {
  const std::string src = YOLO11_TEST_SOURCE_DIR;
  const std::string datasets = std::filesystem::path(dataset_dir("coco8")).parent_path().string();
  return {"model=" + src + "/configs/models/yolo11.yaml",
          "data=" + src + "/configs/datasets/coco8.yaml",
          "datasets_dir=" + datasets,
          "epochs=" + std::to_string(epochs),
          "imgsz=64",
          "batch=" + std::to_string(batch),
          "workers=1",
          "threads=1",
          "seed=0",
          "plots=false",
          "instrument=off",
          "close_mosaic=0",
          "project=" + project,
          "name=" + name};
}

std::vector<std::string> start_stress(const std::string& project, int starts, const std::vector<int>& workers) {
  std::vector<std::string> bad;
  for (int i = 0; i < starts; ++i) {
    const int w = workers[static_cast<size_t>(i) % workers.size()];
    const std::string name = "s" + std::to_string(i);
    auto args = coco8_train_args(project, name, 1, /*batch=*/1);
    args.push_back("workers=" + std::to_string(w));  // the last value of a key wins
    args.push_back("threads=" + std::to_string(1 + i % 2));
    const std::string log = project + "/" + name + ".log";
    const auto t0 = std::chrono::steady_clock::now();
    const int rc = run(exe("yolo11-train"), args, log);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("start %d/%d workers=%d: exit %d, %.1f s\n", i + 1, starts, w, rc, s);
    std::fflush(stdout);
    if (rc != 0) {
      const std::string text = read_text(log);
      bad.push_back("start " + std::to_string(i) + " (workers=" + std::to_string(w) + "): " +
                    (rc < 0 ? "signal " + std::to_string(-rc) : "exit " + std::to_string(rc)) + "; log tail:\n" +
                    text.substr(text.size() > 1500 ? text.size() - 1500 : 0));
    }
  }
  return bad;
}

}  // namespace yolo11::test
