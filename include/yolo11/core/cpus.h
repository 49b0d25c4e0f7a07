#pragma once
// core/cpus: how many CPU cores this process may really use. A process sees every online core, but taskset, a cgroup
// cpuset or a launcher's pinning (sched_getaffinity) and a cgroup CPU quota (v2 `cpu.max`, v1 `cpu.cfs_quota_us` /
// `cpu.cfs_period_us`, as containers and Kubernetes set them) give it fewer. The trainer sizes its intra-op threads,
// the diagnosis judges contention and the advice quotes core counts from usable_cores(), nowhere else.
#include <optional>
#include <string>

namespace yolo11::core {

/// A cgroup CPU limit: `cores` = quota / period (0.5 = half a core), from `file`.
struct CpuQuota {
  double cores = 0;
  std::string file;  ///< the file that set it, e.g. "/sys/fs/cgroup/cpu/job/cpu.cfs_quota_us"
};

/// cgroup v2 `cpu.max` content ("max 100000" → nullopt, "50000 100000" → 0.5 cores). Throws std::runtime_error
/// naming `where` when the text is neither.
std::optional<double> parse_cpu_max(const std::string& text, const std::string& where);

/// The tightest CPU quota along this process's cgroup path (a limit on a parent cgroup binds its children too).
/// `proc_cgroup`: the text of /proc/self/cgroup ("0::/a/b" for v2, "N:cpu,cpuacct:/a/b" for v1); `root`: where the
/// hierarchies are mounted. Unreadable or absent files mean no limit there. nullopt: no quota anywhere.
std::optional<CpuQuota> cpu_quota(const std::string& proc_cgroup, const std::string& root = "/sys/fs/cgroup");

/// This process's cores.
struct CpuBudget {
  int online = 1;    ///< std::thread::hardware_concurrency()
  int affinity = 1;  ///< cores sched_getaffinity allows (≤ online)
  std::optional<CpuQuota> quota;
  /// min(affinity, quota rounded down, at least 1): what intra-op threads, workers and the diagnosis count with.
  int usable = 1;
  /// "2 cores" or "1 usable core: cgroup CPU quota 1.0 core (/sys/fs/cgroup/cpu/x/cpu.cfs_quota_us) of 2 cores
  /// this process may run on (2 online)" — the start-up line and the diagnosis quote it.
  std::string describe() const;
};

/// Reads /proc/self/cgroup, /sys/fs/cgroup and the affinity mask of this process.
CpuBudget usable_cores();

}  // namespace yolo11::core
