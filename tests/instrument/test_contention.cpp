// Contention: the usable core count from affinity and cgroup quota (core/cpus.h), the /proc counters
// (instrument/contention.h) and the "compute slowed" verdict that names its cause with its evidence
// (instrument/diagnosis.h). The process-level tests make each cause happen for real: child processes that burn the
// cores, more spinning threads than cores, a cgroup CPU quota (where this test may create one).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include <torch/torch.h>

#include "golden.h"
#include "process.h"
#include "yolo11/core/cpus.h"
#include "yolo11/instrument/analyze.h"
#include "yolo11/instrument/contention.h"
#include "yolo11/instrument/diagnosis.h"
#include "yolo11/instrument/profiler.h"
#include "yolo11/instrument/stats.h"
#include "yolo11/io/file.h"

namespace yolo11 {
namespace {

namespace fs = std::filesystem;
using instrument::AdviceContext;
using instrument::Bottleneck;
using instrument::ContentionRates;
using instrument::WindowSummary;

TEST(CpuQuota, CpuMaxIsQuotaOverPeriodAndMaxIsNoLimit) {
  EXPECT_DOUBLE_EQ(*core::parse_cpu_max("50000 100000\n", "cpu.max"), 0.5);
  EXPECT_DOUBLE_EQ(*core::parse_cpu_max("200000 100000", "cpu.max"), 2.0);
  EXPECT_FALSE(core::parse_cpu_max("max 100000\n", "cpu.max").has_value());
  for (const char* bad : {"", "abc 100000", "50000 0", "-5 100000", "50000 x"}) {
    try {
      core::parse_cpu_max(bad, "/sys/fs/cgroup/a/cpu.max");
      ADD_FAILURE() << "expected a throw for '" << bad << "'";
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find("/sys/fs/cgroup/a/cpu.max"), std::string::npos) << e.what();
    }
  }
}

TEST(CpuQuota, TheTightestLimitAlongTheCgroupPathBindsInV1AndV2) {
  const fs::path root = test::scratch_dir("cpu_quota_tree");
  // v2: unified hierarchy at the root; the parent limits to 1.5 cores, the process's own cgroup has no limit.
  fs::create_directories(root / "v2/job/task");
  io::write_file_atomic((root / "v2/cgroup.controllers").string(), "cpu memory\n");
  io::write_file_atomic((root / "v2/job/cpu.max").string(), "150000 100000\n");
  io::write_file_atomic((root / "v2/job/task/cpu.max").string(), "max 100000\n");
  auto q = core::cpu_quota("0::/job/task\n", (root / "v2").string());
  ASSERT_TRUE(q.has_value());
  EXPECT_DOUBLE_EQ(q->cores, 1.5);
  EXPECT_EQ(q->file, (root / "v2/job/cpu.max").string());
  EXPECT_FALSE(core::cpu_quota("0::/\n", (root / "v2").string()).has_value());  // the root has no cpu.max
  // v1: the cpu controller mounted as "cpu,cpuacct"; the inner cgroup is tighter (0.5 core); -1 = unlimited.
  fs::create_directories(root / "v1/cpu,cpuacct/a/b");
  io::write_file_atomic((root / "v1/cpu,cpuacct/a/cpu.cfs_quota_us").string(), "-1\n");
  io::write_file_atomic((root / "v1/cpu,cpuacct/a/cpu.cfs_period_us").string(), "100000\n");
  io::write_file_atomic((root / "v1/cpu,cpuacct/a/b/cpu.cfs_quota_us").string(), "50000\n");
  io::write_file_atomic((root / "v1/cpu,cpuacct/a/b/cpu.cfs_period_us").string(), "100000\n");
  q = core::cpu_quota("12:memory:/x\n4:cpu,cpuacct:/a/b\n0::/\n", (root / "v1").string());
  ASSERT_TRUE(q.has_value());
  EXPECT_DOUBLE_EQ(q->cores, 0.5);
  EXPECT_EQ(q->file, (root / "v1/cpu,cpuacct/a/b/cpu.cfs_quota_us").string());
  EXPECT_FALSE(core::cpu_quota("4:cpu,cpuacct:/a\n", (root / "v1").string()).has_value());
  EXPECT_FALSE(core::cpu_quota("garbage\n", (root / "v1").string()).has_value());
}

TEST(CpuQuota, UsableCoresOfThisProcessAreAtLeastOneAndAtMostTheAffinity) {
  const core::CpuBudget b = core::usable_cores();
  EXPECT_GE(b.usable, 1);
  EXPECT_LE(b.usable, b.affinity);
  EXPECT_LE(b.affinity, b.online);
  EXPECT_NE(b.describe().find(std::to_string(b.usable)), std::string::npos) << b.describe();
}

TEST(Contention, RatesAreDifferencesOverTheSpan) {
  instrument::ContentionCounters a, b;
  a.own_run_s = 10, a.own_wait_s = 2, a.machine_busy_s = 100, a.steal_s = 0, a.psi_cpu_s = 5, a.psi_memory_s = 0;
  a.psi_io_s = 1, a.major_faults = 10, a.load1 = 1.0, a.quota_periods = 100, a.quota_throttled_periods = 50;
  b = a;
  b.own_run_s = 12, b.own_wait_s = 4, b.machine_busy_s = 104, b.psi_cpu_s = 6, b.psi_io_s = 1.5, b.major_faults = 410;
  b.load1 = 3.0, b.quota_periods = 120, b.quota_throttled_periods = 65;
  a.voluntary_switches = 1000, b.voluntary_switches = 1600;
  const ContentionRates r = instrument::contention_rates(a, b, 2.0, 2.0);  // 2 s; this process used 2 s of CPU
  EXPECT_DOUBLE_EQ(r.runq_wait, 0.5);     // waited 2 s, ran 2 s
  EXPECT_DOUBLE_EQ(r.others_cpu, 1.0);    // (4 − 2) s of others' CPU over 2 s
  EXPECT_DOUBLE_EQ(r.cpu_pressure, 0.5);
  EXPECT_DOUBLE_EQ(r.memory_pressure, 0.0);
  EXPECT_DOUBLE_EQ(r.io_pressure, 0.25);
  EXPECT_DOUBLE_EQ(r.major_faults_per_s, 200.0);
  EXPECT_DOUBLE_EQ(r.load1, 2.0);
  EXPECT_DOUBLE_EQ(r.quota_throttled, 0.75);
  EXPECT_DOUBLE_EQ(r.voluntary_switches_per_s, 300.0);
  instrument::ContentionCounters none;
  const ContentionRates n = instrument::contention_rates(none, none, 2.0, 1.0);
  EXPECT_LT(n.runq_wait, 0);
  EXPECT_LT(n.others_cpu, 0);
  EXPECT_LT(n.quota_throttled, 0);
}

TEST(Contention, TheReaderSeesThisProcessesThreadsAndTheMachine) {
  instrument::ContentionReader reader;
  (void)reader.read();
  std::atomic<bool> stop{false};
  std::thread spin([&] {  // born after the first reading: all its time counts in the next interval
    volatile double x = 0;
    while (!stop.load()) x = x + 1;
  });
  const auto a = reader.read();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const auto b = reader.read();
  stop = true;
  spin.join();
  if (a.own_run_s < 0) GTEST_SKIP() << "no /proc/self/task/*/schedstat on this kernel";
  EXPECT_GT(b.own_run_s - a.own_run_s, 0.1);  // the spinning thread ran most of the 300 ms
  EXPECT_GE(b.machine_busy_s, a.machine_busy_s);
  EXPECT_GE(b.load1, 0);
}

// --- the verdict on synthetic windows -------------------------------------------------------------------------

WindowSummary compute_window(double runq_wait, double others_cpu, double loader_cpu_s = 0) {
  WindowSummary w;
  w.steps = 10, w.images = 80;
  w.step.name = "step", w.step.count = 10, w.step.total = 5.0, w.step.mean = w.step.p50 = w.step.p95 = 0.5;
  w.images_per_s = 16;
  for (const auto& [name, share] : std::vector<std::pair<const char*, double>>{
           {"dataloader", 0.02}, {"forward", 0.30}, {"loss", 0.05}, {"backward", 0.58}, {"optimizer", 0.05}}) {
    instrument::StageSummary s;
    s.name = name, s.count = 10, s.share = share, s.total = share * 5.0;
    s.mean = s.p50 = s.p95 = s.max = s.total / 10;
    w.stages.push_back(s);
  }
  w.contention.runq_wait = runq_wait, w.contention.others_cpu = others_cpu, w.contention.cpu_pressure = 0.6;
  w.contention.load1 = 3.2, w.contention.major_faults_per_s = 0, w.contention.memory_pressure = 0;
  w.loader_cpu_s = loader_cpu_s;
  return w;
}

AdviceContext cpu_ctx(int cores, int threads) {
  AdviceContext c;
  c.device = "cpu", c.cores = cores, c.threads = threads, c.workers = 2, c.batch = 16, c.imgsz = 320;
  c.affinity_cores = cores;
  return c;
}

TEST(SlowedCompute, AQuietMachineStaysComputeBound) {
  const auto d = instrument::diagnose(compute_window(0.04, 0.05), cpu_ctx(2, 2));
  EXPECT_EQ(d.bottleneck, Bottleneck::compute) << d.to_string();
}

// Heavy contention can stretch every stage so that none reaches its threshold (CI: data wait 22%, compute 57%, compute
// at 0.02x its calibration, run-queue wait 48%): the verdict names the contention instead of "balanced", whose
// advice is empty. Without the contention the same shares stay balanced.
TEST(SlowedCompute, ContentionBelowEveryThresholdIsNamedNotBalanced) {
  auto w = compute_window(0.48, 1.0);
  w.stages[0].share = 0.22;                            // dataloader
  w.stages[1].share = 0.20, w.stages[3].share = 0.32;  // forward, backward: compute 57 %
  w.compute_speed = 0.02;
  const auto d = instrument::diagnose(w, cpu_ctx(2, 2));
  EXPECT_EQ(d.bottleneck, Bottleneck::compute_slowed) << d.to_string();
  const std::string s = d.to_string();
  for (const char* want :
       {"no stage dominates (data wait 22%, forward+loss+backward 57%", "at 0.02x its calibrated speed",
        "run-queue wait 48%", "CPU contention by other processes", "try threads=1"})
    EXPECT_NE(s.find(want), std::string::npos) << want << " | " << s;
  auto quiet = compute_window(0.02, 0.0);
  quiet.stages = w.stages;
  EXPECT_EQ(instrument::diagnose(quiet, cpu_ctx(2, 2)).bottleneck, Bottleneck::balanced);
  // The largest share is the data wait: contention there is the loader's matter, not compute's.
  w.stages[0].share = 0.45, w.stages[1].share = 0.10, w.stages[3].share = 0.20;
  EXPECT_NE(instrument::diagnose(w, cpu_ctx(2, 2)).bottleneck, Bottleneck::compute_slowed);
}

TEST(SlowedCompute, OtherProcessesAreNamedWithTheirEvidenceAndAThreadsAdvice) {
  const auto d = instrument::diagnose(compute_window(0.58, 1.0), cpu_ctx(2, 2));
  EXPECT_EQ(d.bottleneck, Bottleneck::compute_slowed) << d.to_string();
  const std::string s = d.to_string();
  for (const char* want : {"compute slowed", "run-queue wait 58% of the trainer threads' time", "CPU pressure 60%",
                           "other processes 1.0 cores", "load 3.2 on 2 usable cores",
                           "CPU contention by other processes", "try threads=1"})
    EXPECT_NE(s.find(want), std::string::npos) << want << " | " << s;
  EXPECT_EQ(s.find("CUDA"), std::string::npos) << s;  // not "buy a GPU"
}

TEST(SlowedCompute, MoreThreadsThanCoresIsTheRunsOwnOversubscription) {
  const auto d = instrument::diagnose(compute_window(0.49, 0.0), cpu_ctx(2, 4));
  EXPECT_EQ(d.bottleneck, Bottleneck::compute_slowed);
  EXPECT_NE(d.advice.find("the run's own oversubscription: threads=4"), std::string::npos) << d.to_string();
  EXPECT_NE(d.advice.find("try threads=2"), std::string::npos) << d.to_string();
  // Busy loader workers count too: 2 threads + 1.5 cores of workers on 2 cores.
  const auto e = instrument::diagnose(compute_window(0.35, 0.0, /*loader_cpu_s=*/7.5), cpu_ctx(2, 2));
  EXPECT_NE(e.advice.find("1.5 cores of loader workers"), std::string::npos) << e.to_string();
}

TEST(SlowedCompute, AQuotaBelowTheVisibleCoresIsNamedWithItsFile) {
  AdviceContext c = cpu_ctx(1, 2);
  c.affinity_cores = 2, c.quota_cores = 1.0, c.quota_file = "/sys/fs/cgroup/job/cpu.max";
  auto w = compute_window(0.10, 0.0);
  w.contention.quota_throttled = 0.9;  // throttled in 90 % of the periods, hardly any run-queue wait
  const auto d = instrument::diagnose(w, c);
  EXPECT_EQ(d.bottleneck, Bottleneck::compute_slowed) << d.to_string();
  EXPECT_NE(d.to_string().find("a CPU quota of 1 core (/sys/fs/cgroup/job/cpu.max) below the 2 cores"),
            std::string::npos) << d.to_string();
  EXPECT_NE(d.to_string().find("throttled by the CPU quota in 90% of its periods"), std::string::npos);
  EXPECT_NE(d.advice.find("try threads=1"), std::string::npos) << d.to_string();
}

TEST(SlowedCompute, MemoryPressureIsNamed) {
  auto w = compute_window(0.30, 0.0);
  w.contention.major_faults_per_s = 850, w.contention.memory_pressure = 0.35;
  AdviceContext c = cpu_ctx(2, 2);
  c.cache = yolo11::core::CacheMode::ram;
  const auto d = instrument::diagnose(w, c);
  EXPECT_NE(d.advice.find("memory pressure (850 major page faults/s, memory pressure 35%)"), std::string::npos)
      << d.to_string();
  EXPECT_NE(d.advice.find("try cache=disk, batch=8"), std::string::npos) << d.to_string();
}

TEST(SlowedCompute, SleepingIntraOpThreadsAreNamedWithTheLoaderAdvice) {
  auto w = compute_window(0.05, 0.0);  // no run-queue wait, no other processes, no calibration
  w.contention.voluntary_switches_per_s = 5800;
  const auto d = instrument::diagnose(w, cpu_ctx(2, 2));
  EXPECT_EQ(d.bottleneck, Bottleneck::compute_slowed) << d.to_string();
  EXPECT_NE(d.reason.find("5800 voluntary context switches/s"), std::string::npos) << d.reason;
  EXPECT_NE(d.advice.find("the intra-op threads sleep between operations (5800 voluntary context switches/s)"),
            std::string::npos)
      << d.advice;
  EXPECT_NE(d.advice.find("try workers=0 (the loader then runs on the trainer thread) or threads=1 (now workers=2, "
                          "threads=2)"),
            std::string::npos)
      << d.advice;
  AdviceContext inline_loader = cpu_ctx(2, 2);
  inline_loader.workers = 0;
  EXPECT_NE(instrument::diagnose(w, inline_loader).advice.find("find the thread that runs LibTorch operators"),
            std::string::npos);
  // A quiet run's tens a second, and any rate on a GPU run (its host thread waits for the device), stay compute-bound.
  w.contention.voluntary_switches_per_s = 35;
  EXPECT_EQ(instrument::diagnose(w, cpu_ctx(2, 2)).bottleneck, Bottleneck::compute);
  w.contention.voluntary_switches_per_s = 5800;
  AdviceContext gpu = cpu_ctx(2, 2);
  gpu.device = "cuda:0";
  EXPECT_NE(instrument::diagnose(w, gpu).bottleneck, Bottleneck::compute_slowed);
}

TEST(SlowedCompute, ADataBoundRunSaysWhenTheLoaderIsShortOfCpuOrDisk) {
  auto w = compute_window(0.4, 1.2);
  w.stages[0].share = 0.6;  // dataloader
  w.contention.io_pressure = 0.3;
  const auto d = instrument::diagnose(w, cpu_ctx(2, 2));
  EXPECT_EQ(d.bottleneck, Bottleneck::data);
  EXPECT_NE(d.reason.find("loader short of CPU: other processes 1.2 of 2 cores"), std::string::npos) << d.reason;
  EXPECT_NE(d.reason.find("I/O pressure 30%"), std::string::npos) << d.reason;
}

TEST(SlowedCompute, ADataBoundRunNamesReadsWorkersOrDecodingFromTheWorkersCpuTime) {
  // 10 steps of 0.5 s; the loader's CPU time over those 5 s says how many cores its workers kept busy.
  auto data_window = [](double loader_cores) {
    auto w = compute_window(0.02, 0.05, 5.0 * loader_cores);
    w.stages[0].share = 0.6;  // dataloader
    return w;
  };
  AdviceContext four = cpu_ctx(4, 2);
  auto d = instrument::diagnose(data_window(2.0), four);  // 2 workers on their cores, 2 of 4 cores idle
  EXPECT_EQ(d.bottleneck, Bottleneck::data);
  EXPECT_NE(d.reason.find("loader short of workers: 2 workers kept 2.0 cores busy, 1.9 of 4 cores idle"),
            std::string::npos)
      << d.reason;
  EXPECT_EQ(d.advice, "workers=2 leave cores idle → try workers=4");

  d = instrument::diagnose(data_window(1.9), cpu_ctx(2, 2));  // every usable core decodes
  EXPECT_NE(d.reason.find("loader short of CPU for decoding and augmenting: 2 workers kept 1.9 of 2 cores busy, 119 ms "
                          "of CPU per image"),
            std::string::npos)
      << d.reason;
  EXPECT_NE(d.advice.find("cache=ram (decode each image once)"), std::string::npos) << d.advice;

  AdviceContext eight = cpu_ctx(2, 2);
  eight.workers = 8;
  d = instrument::diagnose(data_window(0.3), eight);  // 8 workers on a core 4% of their time: they wait for reads
  EXPECT_NE(d.reason.find("loader short of reads: its 8 workers were on a core 4% of the time (0.3 cores)"),
            std::string::npos)
      << d.reason;
  EXPECT_NE(d.advice.find("workers=16 (more reads in flight)"), std::string::npos) << d.advice;
  // Another process on a core changes nothing while the workers sleep and no thread of ours waits for a core (as in a
  // 2-at-a-time test suite); when our threads do wait for cores, the contention comes first.
  auto shared = data_window(0.3);
  shared.contention.others_cpu = 1.0;
  EXPECT_NE(instrument::diagnose(shared, eight).reason.find("loader short of reads"), std::string::npos);
  shared.contention.runq_wait = 0.4;
  EXPECT_NE(instrument::diagnose(shared, eight).reason.find("loader short of CPU: other processes 1.0 of 2 cores"),
            std::string::npos);
  // With the process's CPU known, its threads' wait in cores bounds the workers': 1.5 cores at 40% wait is 1.0 core
  // waiting, too little for 8 workers off their cores 96% of the time, so they were blocked (reads).
  shared.cpu_percent = 150;
  EXPECT_NE(instrument::diagnose(shared, eight).reason.find("loader short of reads"), std::string::npos);
  // A slow reader beside another test of a parallel ctest (ASan tree): 1 worker asleep in its reader, the process at
  // 58% CPU with 25% run-queue wait (0.19 cores waiting, the trainer threads'): reads, not the other test's CPU.
  AdviceContext one = cpu_ctx(2, 2);
  one.workers = 1;
  auto ci = data_window(0.01);
  ci.contention.others_cpu = 1.0, ci.contention.runq_wait = 0.25, ci.cpu_percent = 58;
  EXPECT_NE(instrument::diagnose(ci, one).reason.find("loader short of reads: its 1 worker was on a core"),
            std::string::npos)
      << instrument::diagnose(ci, one).reason;
  // The same worker crowded out: the process waits 1.0 core (100% CPU at 50% wait), enough for the worker's time.
  ci.contention.runq_wait = 0.5, ci.cpu_percent = 100;
  EXPECT_NE(instrument::diagnose(ci, one).reason.find("loader short of CPU: other processes 1.0 of 2 cores"),
            std::string::npos)
      << instrument::diagnose(ci, one).reason;
}

TEST(CalibratedCompute, SpeedIsTheCalibratedOverTheMeasuredComputePerStep) {
  auto w = compute_window(0.0, 0.0);  // forward + loss + backward 0.93 × 5 s over 10 steps = 0.465 s a step
  w.set_compute_expected(0.2325);
  EXPECT_DOUBLE_EQ(w.compute_expected_s, 0.2325);
  EXPECT_NEAR(w.compute_speed, 0.5, 1e-9);
  EXPECT_NE(instrument::format_window_line(w).find("compute 0.50x calibrated"), std::string::npos)
      << instrument::format_window_line(w);
  EXPECT_NE(instrument::format_table(w, 1).find("compute 0.50x calibrated (0.233 s expected)"), std::string::npos);
  WindowSummary none = compute_window(0.0, 0.0);
  none.set_compute_expected(0);  // no calibration: nothing shown, nothing judged
  EXPECT_LT(none.compute_speed, 0);
  EXPECT_EQ(instrument::format_window_line(none).find("calibrated"), std::string::npos);
}

TEST(CalibratedCompute, FarBelowItsCalibrationIsSlowedEvenWithoutRunQueueWait) {
  auto w = compute_window(0.05, 0.0);
  w.set_compute_expected(0.2325);  // 0.50x
  const auto d = instrument::diagnose(w, cpu_ctx(2, 2));
  EXPECT_EQ(d.bottleneck, Bottleneck::compute_slowed) << d.to_string();
  EXPECT_NE(d.reason.find("at 0.50x its calibrated speed"), std::string::npos) << d.reason;
  EXPECT_EQ(d.to_string().find("CUDA"), std::string::npos) << d.to_string();
  // Near its calibration: compute-bound, and the figure is in the reason.
  auto q = compute_window(0.05, 0.0);
  q.set_compute_expected(0.44);  // 0.95x
  const auto e = instrument::diagnose(q, cpu_ctx(2, 2));
  EXPECT_EQ(e.bottleneck, Bottleneck::compute) << e.to_string();
  EXPECT_NE(e.reason.find("at 0.95x its calibrated speed"), std::string::npos) << e.reason;
}

// --- causes made to happen for real -----------------------------------------------------------------------------

/// Child processes that each spin one core until killed.
struct Burners {
  std::vector<pid_t> pids;
  explicit Burners(int n) {
    for (int i = 0; i < n; ++i) {
      const pid_t p = fork();
      if (p == 0) {
        volatile unsigned long x = 0;
        for (;;) x = x + 1;
      }
      if (p > 0) pids.push_back(p);
    }
  }
  ~Burners() {
    for (pid_t p : pids) kill(p, SIGKILL);
    for (pid_t p : pids) waitpid(p, nullptr, 0);
  }
};

/// A profiled run whose "forward" stage spins `threads` threads for `ms` per step; returns the run's window and
/// its diagnosis (Profiler + sampler as in training, the advice context given).
std::pair<WindowSummary, instrument::Diagnosis> spin_run(const std::string& name, int threads, int steps, int ms) {
  instrument::ProfilerOptions o;
  o.log_every = steps;
  o.log_lines = false;
  o.run_dir = test::scratch_dir(name);
  o.setting.device = "cpu";
  o.setting.threads = threads;
  o.setting.workers = 0;
  o.sample_hz = 20;
  {
    instrument::Profiler p(o);
    p.begin_epoch(0);
    for (int i = 0; i < steps; ++i) {
      p.begin_step(i);
      { auto s = p.stage("dataloader"); }
      {
        auto s = p.stage("forward");
        std::atomic<bool> stop{false};
        std::vector<std::thread> pool;
        for (int t = 0; t < threads; ++t)
          pool.emplace_back([&] {
            volatile double x = 0;
            while (!stop.load(std::memory_order_relaxed)) x = x + 1;
          });
        std::this_thread::sleep_for(std::chrono::milliseconds(ms));
        stop = true;
        for (auto& t : pool) t.join();
      }
      p.end_step(8);
    }
    p.end_epoch();
    p.finish();
  }
  const auto run = instrument::read_summary_run(o.run_dir + "/summary.json");
  EXPECT_TRUE(run.has_value());
  instrument::Diagnosis d;
  std::string src;
  const AdviceContext ctx = instrument::load_context(o.run_dir, src);
  if (run) d = instrument::diagnose(*run, ctx);
  return {run.value_or(WindowSummary{}), d};
}

TEST(SlowedComputeProcess, ChildrenBurningTheCoresAreOtherProcesses) {
  const int cores = core::usable_cores().usable;
  Burners burn(cores);
  const auto [w, d] = spin_run("contention_burners", cores, 8, 150);
  if (w.contention.runq_wait < 0) GTEST_SKIP() << "no schedstat on this kernel";
  EXPECT_GE(w.contention.runq_wait, 0.2) << d.to_string();
  EXPECT_GE(w.contention.others_cpu, 0.25 * cores) << d.to_string();
  EXPECT_EQ(d.bottleneck, Bottleneck::compute_slowed) << d.to_string();
  EXPECT_NE(d.advice.find("CPU contention by other processes"), std::string::npos) << d.to_string();
}

TEST(SlowedComputeProcess, TwiceAsManyThreadsAsCoresIsOwnOversubscription) {
  const int cores = core::usable_cores().usable;
  const auto [w, d] = spin_run("contention_oversubscribed", 2 * cores, 8, 150);
  if (w.contention.runq_wait < 0) GTEST_SKIP() << "no schedstat on this kernel";
  EXPECT_GE(w.contention.runq_wait, 0.3) << d.to_string();
  EXPECT_EQ(d.bottleneck, Bottleneck::compute_slowed) << d.to_string();
  EXPECT_NE(d.advice.find("the run's own oversubscription: threads=" + std::to_string(2 * cores)), std::string::npos)
      << d.to_string();
}

// The trainer's thread runs parallel LibTorch operators (an OpenMP team of `cores` threads) while, with `side_team`,
// another thread of the process has started its own team and waits: libgomp now manages more threads than cores and
// stops spinning between regions, so the intra-op threads sleep and wake per operator. That is what a loader worker
// running a parallel operator did (docs/instrument.md); here it is made to happen directly.
std::pair<WindowSummary, instrument::Diagnosis> omp_run(const std::string& name, bool side_team) {
  const int cores = core::usable_cores().usable;
  const int threads = at::get_num_threads();
  at::set_num_threads(cores);
  std::promise<void> done;
  std::promise<void> started;
  std::thread side;
  if (side_team) {
    side = std::thread([&, f = done.get_future()]() mutable {
      (void)torch::ones({1 << 20}).add_(1).sum().item<float>();  // starts this thread's team, which stays
      started.set_value();
      f.wait();
    });
    started.get_future().wait();
  }
  instrument::ProfilerOptions o;
  o.log_every = 6;
  o.log_lines = false;
  o.run_dir = test::scratch_dir(name);
  o.setting.device = "cpu";
  o.setting.threads = cores;
  o.setting.workers = 1;
  o.sample_hz = 20;
  at::Tensor x = torch::zeros({1 << 17});
  {
    instrument::Profiler p(o);
    p.begin_epoch(0);
    for (int i = 0; i < 6; ++i) {
      p.begin_step(i);
      { auto s = p.stage("dataloader"); }
      {
        auto s = p.stage("forward");
        const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(150);
        while (std::chrono::steady_clock::now() < until) x.add_(1);  // one parallel region each
      }
      p.end_step(8);
    }
    p.end_epoch();
    p.finish();
  }
  done.set_value();
  if (side.joinable()) side.join();
  at::set_num_threads(threads);
  const auto run = instrument::read_summary_run(o.run_dir + "/summary.json");
  EXPECT_TRUE(run.has_value());
  instrument::Diagnosis d;
  std::string src;
  const AdviceContext ctx = instrument::load_context(o.run_dir, src);
  if (run) d = instrument::diagnose(*run, ctx);
  return {run.value_or(WindowSummary{}), d};
}

TEST(SlowedComputeProcess, AnotherThreadsOpenMpTeamMakesTheIntraOpThreadsSleep) {
  if (core::usable_cores().usable < 2) GTEST_SKIP() << "one usable core: no intra-op team to put to sleep";
  const auto [quiet, dq] = omp_run("contention_omp_alone", false);
  const auto [w, d] = omp_run("contention_omp_side_team", true);
  if (w.contention.voluntary_switches_per_s < 0) GTEST_SKIP() << "no getrusage context switch counts";
  EXPECT_GE(w.contention.voluntary_switches_per_s, 1000) << d.to_string();
  EXPECT_GT(w.contention.voluntary_switches_per_s, 4 * quiet.contention.voluntary_switches_per_s)
      << "alone: " << dq.to_string() << "\nwith a second team: " << d.to_string();
  EXPECT_EQ(d.bottleneck, Bottleneck::compute_slowed) << d.to_string();
  EXPECT_NE(d.advice.find("the intra-op threads sleep between operations"), std::string::npos) << d.to_string();
  EXPECT_NE(d.advice.find("try workers=0"), std::string::npos) << d.to_string();
}

// A child process moved into a new cgroup v1 "cpu" group with a quota of one core: its usable cores, its profiler
// options and its verdict name the quota. Needs a writable cgroup v1 cpu hierarchy (root in a container that
// mounts one, as on the CI machine); skipped with the reason elsewhere.
TEST(SlowedComputeProcess, ACgroupQuotaOfOneCoreIsTheUsableCountAndTheCause) {
  const core::CpuBudget here = core::usable_cores();
  if (here.affinity < 2) GTEST_SKIP() << "needs at least 2 cores to put a 1-core quota below them";
  const fs::path mount = "/sys/fs/cgroup/cpu";
  const fs::path cg = mount / ("yolo11_test_" + std::to_string(getpid()));
  std::error_code ec;
  if (!fs::exists(mount / "cpu.cfs_quota_us") || !fs::create_directory(cg, ec) || ec)
    GTEST_SKIP() << "cannot create a cgroup v1 cpu group under " << mount << " (not root, or no v1 cpu hierarchy)";
  {
    std::ofstream(cg / "cpu.cfs_period_us") << 100000;
    std::ofstream(cg / "cpu.cfs_quota_us") << 100000;
  }
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  const pid_t child = fork();
  if (child == 0) {
    close(fds[0]);
    std::ofstream(cg / "cgroup.procs") << getpid() << std::flush;
    const core::CpuBudget b = core::usable_cores();
    std::string out = std::to_string(b.usable) + "\n" + (b.quota ? b.quota->file : std::string("none")) + "\n";
    const auto [w, d] = spin_run("contention_quota", 2, 8, 150);
    out += d.to_string() + "\n";
    (void)!write(fds[1], out.data(), out.size());
    close(fds[1]);
    _exit(0);
  }
  close(fds[1]);
  std::string got;
  char buf[4096];
  for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) > 0;) got.append(buf, static_cast<size_t>(n));
  close(fds[0]);
  int status = 0;
  waitpid(child, &status, 0);
  fs::remove(cg, ec);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << got;
  EXPECT_EQ(got.substr(0, got.find('\n')), "1") << got;
  EXPECT_NE(got.find((cg / "cpu.cfs_quota_us").string()), std::string::npos) << got;
  EXPECT_NE(got.find("compute slowed"), std::string::npos) << got;
  EXPECT_NE(got.find("a CPU quota of 1 core"), std::string::npos) << got;
}

}  // namespace
// A loader throttled by a slow reader, for real: yolo11-train whose one worker sleeps 400 ms per sample
// (YOLO11_TEST_LOADER_DELAY_MS, a slow disk or network file system) waits for data most of each step, and its
// workers are on a core a small share of the time: the verdict names reads, not decoding or workers. The delay is
// about 3x the step of the ASan build (120 ms at batch 1 and 64 px), so the loader cannot keep up there either. The
// test runs alone (tests/ctest_serial.cmake).
TEST(DataBoundProcess, ASlowReaderIsNamedAsTheLoadersShortage) {
  const std::string project = test::scratch_dir("data_bound_reads");
  auto args = test::coco8_train_args(project, "run", 2, /*batch=*/1);
  for (const char* a : {"instrument=basic", "instrument_warmup=1", "log_every=3", "val=false", "calibrate=false"})
    args.push_back(a);
  setenv("YOLO11_TEST_LOADER_DELAY_MS", "400", 1);
  const int rc = test::run(test::exe("yolo11-train"), args, project + "/run.log");
  unsetenv("YOLO11_TEST_LOADER_DELAY_MS");
  ASSERT_EQ(rc, 0) << test::read_text(project + "/run.log");
  const std::string log = test::read_text(project + "/run/train.log");
  EXPECT_NE(log.find("data-bound: data wait"), std::string::npos) << log;
  EXPECT_NE(log.find("loader short of reads: its 1 worker was on a core"), std::string::npos) << log;
  EXPECT_NE(log.find("→ try cache=ram (each image read once), workers=2 (more reads in flight)"), std::string::npos)
      << log;
}

}  // namespace yolo11
