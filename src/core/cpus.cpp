// core/cpus: online cores, affinity and cgroup CPU quota → the cores this process may use (core/cpus.h).
#include "yolo11/core/cpus.h"

#include <sched.h>

#include <spdlog/fmt/fmt.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <vector>

namespace yolo11::core {

namespace fs = std::filesystem;

namespace {

std::optional<std::string> read_small(const fs::path& p) {
  std::ifstream f(p);
  if (!f) return std::nullopt;
  std::string s((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  return s;
}

std::optional<long long> to_ll(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  if (s.empty()) return std::nullopt;
  try {
    size_t used = 0;
    const long long v = std::stoll(s, &used);
    if (used != s.size()) return std::nullopt;
    return v;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

/// The directories from the cgroup of the process up to the hierarchy's root, innermost first.
std::vector<fs::path> up_the_path(const fs::path& mount, const std::string& cg_path) {
  std::vector<fs::path> dirs;
  fs::path rel = fs::path(cg_path).relative_path();
  while (true) {
    dirs.push_back(rel.empty() ? mount : mount / rel);
    if (rel.empty()) break;
    rel = rel.parent_path();
  }
  return dirs;
}

void keep_tighter(std::optional<CpuQuota>& best, double cores, const fs::path& file) {
  if (!best || cores < best->cores) best = CpuQuota{cores, file.string()};
}

}  // namespace

std::optional<double> parse_cpu_max(const std::string& text, const std::string& where) {
  std::istringstream in(text);
  std::string quota, period;
  if (!(in >> quota)) throw std::runtime_error(where + ": empty; expected \"max PERIOD\" or \"QUOTA PERIOD\"");
  if (!(in >> period)) period = "100000";  // the kernel's default period when only the quota was written
  const auto p = to_ll(period);
  if (!p || *p <= 0)
    throw std::runtime_error(where + ": period '" + period + "' is not a positive number (\"QUOTA PERIOD\")");
  if (quota == "max") return std::nullopt;
  const auto q = to_ll(quota);
  if (!q || *q <= 0) throw std::runtime_error(where + ": quota '" + quota + "' is neither \"max\" nor a positive number");
  return static_cast<double>(*q) / static_cast<double>(*p);
}

std::optional<CpuQuota> cpu_quota(const std::string& proc_cgroup, const std::string& root) {
  std::optional<CpuQuota> best;
  std::istringstream in(proc_cgroup);
  std::string line;
  while (std::getline(in, line)) {
    // "hierarchy-ID:controller-list:cgroup-path"; the path may itself contain ':'.
    const auto a = line.find(':');
    const auto b = a == std::string::npos ? a : line.find(':', a + 1);
    if (b == std::string::npos) continue;
    const std::string controllers = line.substr(a + 1, b - a - 1), path = line.substr(b + 1);
    if (line.compare(0, a, "0") == 0 && controllers.empty()) {  // cgroup v2, unified hierarchy
      const fs::path mount = fs::exists(fs::path(root) / "cgroup.controllers") ? fs::path(root) : fs::path(root) / "unified";
      for (const auto& dir : up_the_path(mount, path)) {
        const auto text = read_small(dir / "cpu.max");
        if (!text) continue;
        try {
          if (const auto c = parse_cpu_max(*text, (dir / "cpu.max").string())) keep_tighter(best, *c, dir / "cpu.max");
        } catch (const std::exception&) {
          // a file this kernel writes differently: no limit read from it
        }
      }
      continue;
    }
    std::vector<std::string> names;
    std::istringstream cs(controllers);
    for (std::string c; std::getline(cs, c, ',');) names.push_back(c);
    if (std::find(names.begin(), names.end(), "cpu") == names.end()) continue;
    // v1 mounts the cpu controller as "cpu", "cpu,cpuacct" or "cpuacct,cpu" (often with symlinks between them).
    for (const char* m : {"cpu", "cpu,cpuacct", "cpuacct,cpu"}) {
      const fs::path mount = fs::path(root) / m;
      if (!fs::is_directory(mount)) continue;
      for (const auto& dir : up_the_path(mount, path)) {
        const auto q = read_small(dir / "cpu.cfs_quota_us");
        const auto p = read_small(dir / "cpu.cfs_period_us");
        if (!q || !p) continue;
        const auto qv = to_ll(*q), pv = to_ll(*p);
        if (qv && pv && *qv > 0 && *pv > 0)
          keep_tighter(best, static_cast<double>(*qv) / static_cast<double>(*pv), dir / "cpu.cfs_quota_us");
      }
      break;
    }
  }
  return best;
}

std::string CpuBudget::describe() const {
  if (!quota && affinity >= online) return fmt::format("{} core{}", usable, usable == 1 ? "" : "s");
  std::string s = fmt::format("{} usable core{}", usable, usable == 1 ? "" : "s");
  if (quota && quota->cores < affinity)
    s += fmt::format(": cgroup CPU quota {:.2g} core{} ({}) of the {} cores this process may run on", quota->cores,
                     quota->cores == 1.0 ? "" : "s", quota->file, affinity);
  else
    s += fmt::format(": this process may run on {} of the cores (sched_getaffinity: taskset, a cgroup cpuset or the "
                     "launcher pinned it)", affinity);
  return s + fmt::format(", {} online", online);
}

CpuBudget usable_cores() {
  CpuBudget b;
  b.online = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  b.affinity = b.online;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0) b.affinity = std::min(b.online, CPU_COUNT(&set));
  if (const auto text = read_small("/proc/self/cgroup")) b.quota = cpu_quota(*text);
  b.usable = b.affinity;
  if (b.quota) b.usable = std::clamp(static_cast<int>(std::floor(b.quota->cores + 1e-9)), 1, b.affinity);
  return b;
}

}  // namespace yolo11::core
