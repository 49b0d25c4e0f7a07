#pragma once
// Who else wants the CPU: cumulative counters read from /proc at each sampler reading (instrument/sampler.h), whose
// differences over a window say whether the trainer's compute ran slow because it waited for cores.
//   - run-queue wait of this process's own threads (/proc/self/task/*/schedstat: time on a core, time runnable but
//     waiting for one), summed over the threads alive at consecutive readings;
//   - the machine's busy and steal time (/proc/stat), from which CPU used by other processes follows;
//   - pressure stall information (/proc/pressure/{cpu,memory,io}, "some" line: time at least one task stalled);
//   - this process's major page faults (/proc/self/stat) and the 1-minute load (/proc/loadavg);
//   - this process's voluntary context switches (getrusage, all threads): a thread that sleeps and wakes, e.g. an
//     OpenMP intra-op thread that stopped spinning between parallel regions.
// Linux only; anything unreadable stays −1 (n/a), never an error.
#include <cstdint>
#include <map>
#include <string>

namespace yolo11::instrument {

/// One reading of the cumulative counters, seconds unless said; −1 = n/a.
struct ContentionCounters {
  double own_run_s = -1;       ///< CPU time of this process's threads since the reader started
  double own_wait_s = -1;      ///< time those threads were runnable and waited for a core
  double machine_busy_s = -1;  ///< all cores: user + nice + system + irq + softirq
  double steal_s = -1;         ///< all cores: time a hypervisor gave to other guests
  double psi_cpu_s = -1, psi_memory_s = -1, psi_io_s = -1;  ///< "some" stall time, whole machine (or cgroup)
  double major_faults = -1;    ///< this process's major page faults (count)
  double load1 = -1;           ///< 1-minute load average (runnable + uninterruptible tasks)
  double voluntary_switches = -1;  ///< this process's voluntary context switches, all threads (count)
  /// The cgroup CPU quota's enforcement (cpu.stat of the cgroup that sets it, core/cpus.h): quota periods, periods in
  /// which the cgroup ran out of quota, time throttled (s); −1 without a quota.
  double quota_periods = -1, quota_throttled_periods = -1, quota_throttled_s = -1;
};

/// Reads the counters; keeps the per-thread schedstat values between readings. Not thread-safe (one reader).
class ContentionReader {
 public:
  /// Finds this process's cgroup CPU quota (core/cpus.h), whose cpu.stat read() then follows.
  ContentionReader();
  ContentionCounters read();

 private:
  std::string quota_stat_;  // cpu.stat beside the quota file; empty without a quota
  std::map<long, std::pair<uint64_t, uint64_t>> last_;  // tid → (run ns, wait ns) at the previous reading
  double run_s_ = 0, wait_s_ = 0;
  bool schedstat_ok_ = true;
  bool first_ = true;  // no reading yet: the threads' earlier time is not counted
};

/// Rates over a span between two readings `a` (earlier) and `b`, wall time `dt_s`; −1 where n/a.
struct ContentionRates {
  double runq_wait = -1;     ///< own threads: wait / (wait + run), 0..1
  double others_cpu = -1;    ///< cores busy with other processes (machine busy − this process's CPU), ≥ 0
  double steal = -1;         ///< cores lost to steal
  double cpu_pressure = -1;  ///< share of the span with a task stalled for CPU, 0..1
  double memory_pressure = -1, io_pressure = -1;
  double major_faults_per_s = -1;
  double load1 = -1;         ///< mean of the two readings
  double quota_throttled = -1;  ///< share of the cgroup quota's periods in which it ran out (0..1); −1 = no quota
  /// Voluntary context switches of this process's threads per second: tens on a quiet run (condition waits of the
  /// loader and sampler), thousands when the intra-op threads sleep between parallel regions.
  double voluntary_switches_per_s = -1;
};
/// `own_cpu_s`: this process's CPU time over the span (the sampler's process clock), subtracted from the machine's.
ContentionRates contention_rates(const ContentionCounters& a, const ContentionCounters& b, double dt_s,
                                 double own_cpu_s);

}  // namespace yolo11::instrument
