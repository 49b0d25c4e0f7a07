// yolo11-sweep's child processes: posix_spawn in a process group, output to a log, timeout, classification
// (include/yolo11/bench/sweep.h).
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <spdlog/fmt/fmt.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>

#include "yolo11/bench/sweep.h"

extern char** environ;

namespace yolo11::bench {

std::string default_train_exe() {
  std::error_code ec;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const auto p = self.parent_path() / "yolo11-train";
    if (std::filesystem::exists(p)) return p.string();
  }
  return "yolo11-train";
}

ChildOutcome run_child(const std::string& exe, const std::vector<std::string>& args, const std::string& log_path,
                       double timeout_s) {
  ChildOutcome o;
  std::vector<std::string> argv_s;
  argv_s.push_back(exe);
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  {  // the command line first, so the log says what ran
    std::ofstream l(log_path, std::ios::app);
    l << "#";
    for (const auto& a : argv_s) l << " " << a;
    l << "\n";
  }

  posix_spawn_file_actions_t fa;
  posix_spawnattr_t attr;
  posix_spawn_file_actions_init(&fa);
  posix_spawnattr_init(&attr);
  posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  posix_spawn_file_actions_adddup2(&fa, STDOUT_FILENO, STDERR_FILENO);
  posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawnattr_setpgroup(&attr, 0);  // its own group: a timeout kills it and anything it started
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &all);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  pid_t pid = -1;
  const auto t0 = std::chrono::steady_clock::now();
  const int rc = exe.find('/') == std::string::npos
                     ? posix_spawnp(&pid, exe.c_str(), &fa, &attr, argv.data(), environ)
                     : posix_spawn(&pid, exe.c_str(), &fa, &attr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) {
    o.error = fmt::format("cannot start {}: {}", exe, std::strerror(rc));
    return o;
  }
  o.started = true;
  int status = 0;
  struct rusage ru {};
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
  while (true) {
    const pid_t w = wait4(pid, &status, WNOHANG, &ru);
    if (w == pid) break;
    if (w < 0 && errno != EINTR) {
      o.error = fmt::format("wait4: {}", std::strerror(errno));
      break;
    }
    if (timeout_s > 0 && !o.timed_out && elapsed() > timeout_s) {
      o.timed_out = true;
      kill(-pid, SIGKILL);
      kill(pid, SIGKILL);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(elapsed() < 2 ? 10 : 100));
  }
  o.wall_s = elapsed();
  o.max_rss_mb = static_cast<double>(ru.ru_maxrss) / 1024.0;  // KiB on Linux
  if (WIFEXITED(status)) {
    o.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    o.signal = WTERMSIG(status);
    o.exit_code = 128 + o.signal;
  }
  return o;
}

std::pair<Status, std::string> classify(const ChildOutcome& c, const std::string& log_tail, double timeout_s) {
  if (!c.started) return {Status::error, c.error};
  if (c.timed_out) return {Status::timeout, fmt::format("no result after {:.0f} s (point_timeout={}): killed", c.wall_s, timeout_s)};
  auto has = [&](const char* s) {
    std::string l = log_tail;
    std::transform(l.begin(), l.end(), l.begin(), [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
    return l.find(s) != std::string::npos;
  };
  const bool oom_text = has("out of memory") || has("bad_alloc") || has("can't allocate memory") ||
                        has("cannot allocate memory");
  if (c.signal == SIGKILL)
    return {Status::oom, fmt::format("killed by SIGKILL (the kernel's OOM killer?), peak RSS {:.0f} MiB", c.max_rss_mb)};
  if (c.signal != 0)
    return {oom_text ? Status::oom : Status::crash,
            fmt::format("{} (signal {}){}", strsignal(c.signal), c.signal, oom_text ? ", after an out-of-memory error" : "")};
  if (c.exit_code == 0) return {Status::ok, ""};
  // the last error line of the log; else its last line (yolo11 prints its error, plain, last: src/io/console.cpp)
  std::string last, last_line;
  size_t b = 0;
  while (b < log_tail.size()) {
    size_t e = log_tail.find('\n', b);
    if (e == std::string::npos) e = log_tail.size();
    const std::string line = log_tail.substr(b, e - b);
    if (line.find("error") != std::string::npos || line.find("what()") != std::string::npos) last = line;
    if (!line.empty()) last_line = line;
    b = e + 1;
  }
  if (last.empty()) last = last_line;
  if (last.size() > 300) last = last.substr(0, 300) + "…";
  const std::string why = fmt::format("exit {}{}", c.exit_code, last.empty() ? std::string() : ": " + last);
  return {oom_text ? Status::oom : Status::error, why};
}

}  // namespace yolo11::bench
