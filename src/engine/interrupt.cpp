// SIGINT/SIGTERM: the first requests a graceful stop, the second exits at once (see interrupt.h).
#include "yolo11/engine/interrupt.h"

#include <nlohmann/json.hpp>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <string>

#include "yolo11/io/file.h"

namespace yolo11::engine {

namespace {

std::atomic<int> g_stop{0};
static_assert(std::atomic<int>::is_always_lock_free, "the signal handler needs a lock-free flag");

void write_stderr(const char* s) {
  size_t n = 0;
  while (s[n] != '\0') ++n;
  while (n > 0) {
    const ssize_t w = ::write(STDERR_FILENO, s, n);
    if (w <= 0) return;
    s += w;
    n -= static_cast<size_t>(w);
  }
}

extern "C" void on_stop_signal(int sig) {
  int expected = 0;
  if (!g_stop.compare_exchange_strong(expected, sig)) {
    write_stderr("\nSecond stop signal: exiting now\n");
    ::_exit(128 + sig);
  }
  write_stderr(sig == SIGINT ? "\nSIGINT: stopping after the current step (press Ctrl-C again to exit at once)\n"
                             : "\nSIGTERM: stopping after the current step (a second signal exits at once)\n");
}

}  // namespace

void install_stop_signal_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;  // blocking calls (condition waits, reads) resume; the trainer polls the flag
  ::sigaction(SIGINT, &sa, nullptr);
  ::sigaction(SIGTERM, &sa, nullptr);
}

int stop_signal() { return g_stop.load(std::memory_order_relaxed); }

void request_stop(int sig) { g_stop.store(sig, std::memory_order_relaxed); }

std::string signal_name(int sig) {
  if (sig == SIGINT) return "SIGINT";
  if (sig == SIGTERM) return "SIGTERM";
  return "signal " + std::to_string(sig);
}

void mark_summary_interrupted(const std::string& run_dir, int sig, int64_t epoch, int64_t step, int64_t epochs_done) {
  if (run_dir.empty()) return;
  const std::string path = run_dir + "/summary.json";
  const bool exists = std::filesystem::exists(path);
  if (sig == 0 && !exists) return;
  nlohmann::json j = nlohmann::json::object();
  if (exists) {
    j = nlohmann::json::parse(io::read_file(path), nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_object()) j = nlohmann::json::object();
  }
  j["interrupted"] = sig != 0;
  j["epochs_done"] = epochs_done;
  if (sig != 0) {
    j["signal"] = signal_name(sig);
    j["interrupted_at"] = {{"epoch", epoch}, {"step", step}};
  }
  io::write_file_atomic(path, j.dump(2));
}

}  // namespace yolo11::engine
