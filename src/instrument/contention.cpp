// /proc counters of CPU, memory and I/O contention (instrument/contention.h).
#include "yolo11/instrument/contention.h"

#include "yolo11/core/cpus.h"

#include <dirent.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace yolo11::instrument {

namespace {

/// Reads a small /proc file into buf (NUL-terminated); false when it cannot be read.
bool read_proc(const char* path, char* buf, size_t size) {
  FILE* f = std::fopen(path, "re");
  if (f == nullptr) return false;
  const size_t n = std::fread(buf, 1, size - 1, f);
  std::fclose(f);
  buf[n] = '\0';
  return n > 0;
}

/// "some avg10=… avg60=… avg300=… total=US" → seconds; −1 when absent.
double psi_some_s(const char* path) {
  char buf[512];
  if (!read_proc(path, buf, sizeof buf)) return -1;
  if (std::strncmp(buf, "some", 4) != 0) return -1;
  const char* t = std::strstr(buf, "total=");
  if (t == nullptr) return -1;
  return std::strtod(t + 6, nullptr) * 1e-6;
}

}  // namespace

ContentionReader::ContentionReader() {
  char buf[4096];
  if (!read_proc("/proc/self/cgroup", buf, sizeof buf)) return;
  if (const auto q = core::cpu_quota(buf)) {
    const auto slash = q->file.rfind('/');
    if (slash != std::string::npos) quota_stat_ = q->file.substr(0, slash) + "/cpu.stat";
  }
}

ContentionCounters ContentionReader::read() {
  ContentionCounters c;
  char buf[4096];
  if (schedstat_ok_) {
    std::map<long, std::pair<uint64_t, uint64_t>> now;
    if (DIR* d = opendir("/proc/self/task")) {
      while (const dirent* e = readdir(d)) {
        if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
        char path[320];  // "/proc/self/task/" + a name of up to 255 bytes + "/schedstat"
        std::snprintf(path, sizeof path, "/proc/self/task/%s/schedstat", e->d_name);
        char line[128];
        if (!read_proc(path, line, sizeof line)) continue;
        unsigned long long run = 0, wait = 0;
        if (std::sscanf(line, "%llu %llu", &run, &wait) != 2) continue;
        const long tid = std::strtol(e->d_name, nullptr, 10);
        now[tid] = {run, wait};
        if (const auto it = last_.find(tid); it != last_.end()) {
          run_s_ += static_cast<double>(run - std::min<uint64_t>(run, it->second.first)) * 1e-9;
          wait_s_ += static_cast<double>(wait - std::min<uint64_t>(wait, it->second.second)) * 1e-9;
        } else if (!first_) {  // a thread born since the previous reading: all of its time is in this interval
          run_s_ += static_cast<double>(run) * 1e-9;
          wait_s_ += static_cast<double>(wait) * 1e-9;
        }
      }
      closedir(d);
    }
    if (now.empty()) {
      schedstat_ok_ = false;  // kernel without CONFIG_SCHEDSTATS / schedstat files: n/a from now on
    } else {
      last_ = std::move(now);
      first_ = false;
      c.own_run_s = run_s_;
      c.own_wait_s = wait_s_;
    }
  }
  if (read_proc("/proc/stat", buf, sizeof buf) && std::strncmp(buf, "cpu ", 4) == 0) {
    unsigned long long v[8] = {};  // user nice system idle iowait irq softirq steal
    const int n = std::sscanf(buf + 4, "%llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3], &v[4],
                              &v[5], &v[6], &v[7]);
    const double tick = 1.0 / static_cast<double>(sysconf(_SC_CLK_TCK));
    if (n >= 7) c.machine_busy_s = static_cast<double>(v[0] + v[1] + v[2] + v[5] + v[6]) * tick;
    if (n >= 8) c.steal_s = static_cast<double>(v[7]) * tick;
  }
  c.psi_cpu_s = psi_some_s("/proc/pressure/cpu");
  c.psi_memory_s = psi_some_s("/proc/pressure/memory");
  c.psi_io_s = psi_some_s("/proc/pressure/io");
  if (read_proc("/proc/self/stat", buf, sizeof buf)) {
    // Fields after "(comm)": state(3) ppid ... majflt is field 12; comm may contain spaces, so start after ')'.
    if (const char* p = std::strrchr(buf, ')')) {
      char state = 0;
      long long f[9] = {};
      if (std::sscanf(p + 1, " %c %lld %lld %lld %lld %lld %lld %lld %lld %lld", &state, &f[0], &f[1], &f[2], &f[3],
                      &f[4], &f[5], &f[6], &f[7], &f[8]) == 10)
        c.major_faults = static_cast<double>(f[8]);
    }
  }
  if (read_proc("/proc/loadavg", buf, sizeof buf)) c.load1 = std::strtod(buf, nullptr);
  if (rusage u{}; getrusage(RUSAGE_SELF, &u) == 0) c.voluntary_switches = static_cast<double>(u.ru_nvcsw);
  if (!quota_stat_.empty() && read_proc(quota_stat_.c_str(), buf, sizeof buf)) {
    // v1: nr_periods, nr_throttled, throttled_time (ns); v2: nr_periods, nr_throttled, throttled_usec.
    auto field = [&](const char* key) -> double {
      const size_t n = std::strlen(key);
      for (const char* p = buf; (p = std::strstr(p, key)) != nullptr; p += n)
        if ((p == buf || p[-1] == '\n') && p[n] == ' ') return std::strtod(p + n + 1, nullptr);
      return -1;
    };
    c.quota_periods = field("nr_periods");
    c.quota_throttled_periods = field("nr_throttled");
    if (const double ns = field("throttled_time"); ns >= 0) c.quota_throttled_s = ns * 1e-9;
    else if (const double us = field("throttled_usec"); us >= 0) c.quota_throttled_s = us * 1e-6;
  }
  return c;
}

ContentionRates contention_rates(const ContentionCounters& a, const ContentionCounters& b, double dt_s,
                                 double own_cpu_s) {
  ContentionRates r;
  if (dt_s <= 0) return r;
  auto both = [](double x, double y) { return x >= 0 && y >= 0 && y >= x; };
  if (both(a.own_run_s, b.own_run_s) && both(a.own_wait_s, b.own_wait_s)) {
    const double run = b.own_run_s - a.own_run_s, wait = b.own_wait_s - a.own_wait_s;
    if (run + wait > 0) r.runq_wait = wait / (run + wait);
  }
  if (both(a.machine_busy_s, b.machine_busy_s) && own_cpu_s >= 0)
    r.others_cpu = std::max(0.0, (b.machine_busy_s - a.machine_busy_s - own_cpu_s) / dt_s);
  if (both(a.steal_s, b.steal_s)) r.steal = (b.steal_s - a.steal_s) / dt_s;
  auto share = [&](double x, double y) { return both(x, y) ? std::min(1.0, (y - x) / dt_s) : -1.0; };
  r.cpu_pressure = share(a.psi_cpu_s, b.psi_cpu_s);
  r.memory_pressure = share(a.psi_memory_s, b.psi_memory_s);
  r.io_pressure = share(a.psi_io_s, b.psi_io_s);
  if (both(a.major_faults, b.major_faults)) r.major_faults_per_s = (b.major_faults - a.major_faults) / dt_s;
  if (a.load1 >= 0 && b.load1 >= 0) r.load1 = 0.5 * (a.load1 + b.load1);
  if (both(a.voluntary_switches, b.voluntary_switches))
    r.voluntary_switches_per_s = (b.voluntary_switches - a.voluntary_switches) / dt_s;
  if (both(a.quota_periods, b.quota_periods) && both(a.quota_throttled_periods, b.quota_throttled_periods) &&
      b.quota_periods > a.quota_periods)
    r.quota_throttled = (b.quota_throttled_periods - a.quota_throttled_periods) / (b.quota_periods - a.quota_periods);
  return r;
}

}  // namespace yolo11::instrument
