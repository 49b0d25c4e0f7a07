// Bottleneck diagnosis: relative thresholds on stage shares, the data-wait tail and GPU utilisation.
#include "yolo11/instrument/diagnosis.h"

#include <spdlog/fmt/fmt.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "yolo11/instrument/sampler.h"
#include "yolo11/instrument/stats.h"
#include "yolo11/core/strings.h"

namespace yolo11::instrument {

const char* to_string(Bottleneck b) {
  switch (b) {
    case Bottleneck::data: return "data-bound";
    case Bottleneck::compute: return "compute-bound";
    case Bottleneck::optimizer_sync: return "optimizer/sync-bound";
    case Bottleneck::none: return "no diagnosis";
    case Bottleneck::compute_slowed: return "compute slowed";
    case Bottleneck::balanced: break;
  }
  return "balanced";
}

std::string Diagnosis::to_string() const {
  std::string s = instrument::to_string(bottleneck);
  if (!reason.empty()) s += ": " + reason;
  if (!advice.empty()) s += ": " + advice;
  return s;
}

namespace {

constexpr double kTailFloorS = 1e-3;  // p50 below 1 ms counts as 1 ms, so near-zero waits give no huge tail

using core::join;

bool on_gpu(const AdviceContext& c) {
  return c.device != "cpu" && c.device != "mps" && !c.device.empty();
}

/// The next smaller image size worth suggesting: 3/4 of imgsz rounded down to the stride, never below 320 px
/// (under that, detection quality falls faster than time is saved); returns imgsz itself when nothing smaller is.
int64_t smaller_imgsz(int64_t imgsz) {
  constexpr int64_t kMinAdvisedImgsz = 320;
  const int64_t s = (imgsz * 3 / 4) / 32 * 32;
  return s >= kMinAdvisedImgsz ? s : (imgsz > kMinAdvisedImgsz ? kMinAdvisedImgsz : imgsz);
}

std::string data_advice(const Diagnosis& d, const AdviceContext& c, const DiagnosisThresholds& t) {
  std::vector<std::string> changes;
  const int cores = std::max(1, c.cores);
  const int more_workers = std::min(cores, std::max(2 * std::max(1, c.workers), 8));
  std::string head;
  if (more_workers > c.workers) {
    head = fmt::format("workers={} on {} cores", c.workers, cores);
    changes.push_back(fmt::format("workers={}", more_workers));
  } else {
    head = fmt::format("workers={} already uses the {} cores", c.workers, cores);
  }
  if (c.cache != core::CacheMode::ram) {
    head += fmt::format(", cache={}", core::to_string(c.cache));
    changes.push_back("cache=ram");
  }
  const int64_t smaller = smaller_imgsz(c.imgsz);
  if ((changes.empty() || d.data_tail >= t.data_tail) && smaller < c.imgsz) {
    // More workers/caching are exhausted (or waits are bursty): make each sample cheaper.
    changes.push_back(fmt::format("imgsz={} → {} (fewer pixels to decode/augment)", c.imgsz, smaller));
  }
  return head + " → try " + join(changes, ", ");
}

std::string compute_advice(const Diagnosis& d, const AdviceContext& c, const DiagnosisThresholds& t) {
  std::vector<std::string> changes;
  const bool gpu = on_gpu(c);
  const int64_t smaller = smaller_imgsz(c.imgsz);
  if (gpu && d.gpu_util >= 0 && d.gpu_util < t.gpu_busy) {
    // Compute stages dominate but the GPU idles between kernels: launches are too small.
    changes.push_back(fmt::format("batch={} → {} (fills the GPU, fewer launches per image)", c.batch, 2 * c.batch));
    if (!c.amp) changes.push_back("amp=False → amp=True");
    return fmt::format("GPU only {:.0f}% busy → try ", d.gpu_util) + join(changes, ", ");
  }
  if (gpu && !c.amp) changes.push_back("amp=False → amp=True (tensor cores, about 2x)");
  if (smaller < c.imgsz)
    changes.push_back(fmt::format("imgsz={} → {} (about {:.0f}% fewer FLOPs, costs some mAP)", c.imgsz, smaller,
                                  100.0 * (1.0 - static_cast<double>(smaller * smaller) /
                                                     static_cast<double>(c.imgsz * c.imgsz))));
  if (!gpu) {
    if (!c.cuda_built) {
      changes.push_back("a CUDA device (this build has no CUDA: build against a CUDA LibTorch, docs/gpu.md, then "
                        "device=0)");
    } else if (c.cuda_devices == 0) {
      changes.push_back("a machine with a CUDA GPU (this build has CUDA, but no GPU is visible here; there: device=0)");
    } else {
      changes.push_back("a CUDA device (device=0)");
    }
    return fmt::format("device={} at batch={} is compute-limited → try ", c.device, c.batch) + join(changes, ", ");
  }
  changes.push_back(fmt::format("keep batch={} (larger batches do not raise img/s on a busy GPU)", c.batch));
  return "the model saturates the GPU → try " + join(changes, ", ");
}

std::string optimizer_advice(const Diagnosis& d, const WindowSummary& w, const AdviceContext& c) {
  std::vector<std::string> changes;
  if (c.sync) changes.push_back("sync=True → sync=False (a device sync per stage inflates these stages)");
  if (w.share(StepStage::h2d) >= 0.10)
    changes.push_back("pinned, non_blocking host→device copies (h2d " +
                      fmt::format("{:.0f}%", 100.0 * w.share(StepStage::h2d)) + ")");
  changes.push_back(fmt::format("batch={} → {} (amortises the per-step optimizer/EMA cost over more images)", c.batch,
                                2 * c.batch));
  return "try " + join(changes, ", ");
}

/// ", run-queue wait 58% of the trainer threads' time, CPU pressure 61%, other processes 0.9 cores, load 3.2 on 2
/// usable cores": the contention figures that are known.
std::string contention_evidence(const WindowSummary& w, const AdviceContext& c) {
  const ContentionRates& r = w.contention;
  std::string s;
  if (r.runq_wait >= 0) s += fmt::format(", run-queue wait {:.0f}% of the trainer threads' time", 100.0 * r.runq_wait);
  if (r.cpu_pressure >= 0) s += fmt::format(", CPU pressure {:.0f}%", 100.0 * r.cpu_pressure);
  if (r.others_cpu >= 0) s += fmt::format(", other processes {:.1f} cores", r.others_cpu);
  if (r.steal >= 0.05) s += fmt::format(", steal {:.1f} cores", r.steal);
  if (r.load1 >= 0) s += fmt::format(", load {:.1f}", r.load1);
  s += fmt::format(" on {} usable core{}", std::max(1, c.cores), c.cores == 1 ? "" : "s");
  if (r.quota_throttled >= 0)
    s += fmt::format(", throttled by the CPU quota in {:.0f}% of its periods", 100.0 * r.quota_throttled);
  if (r.voluntary_switches_per_s >= 100)  // a quiet run makes tens a second (contention.h)
    s += fmt::format(", {:.0f} voluntary context switches/s", r.voluntary_switches_per_s);
  return s;
}

bool is_cpu(const std::string& device) { return device.rfind("cpu", 0) == 0; }

/// Cores the loader workers kept busy during the window's steps (their CPU time over the step time); 0 when unknown.
double loader_cores(const WindowSummary& w) {
  return w.loader_cpu_s > 0 && w.step.total > 0 ? w.loader_cpu_s / w.step.total : 0.0;
}

/// "the intra-op threads sleep between operations (N voluntary context switches/s): … → try …" when the process's
/// threads switch out voluntarily at least `t.voluntary_switches_per_s` times a second, else "".
std::string sleeping_team(const WindowSummary& w, const AdviceContext& c, const DiagnosisThresholds& t) {
  const ContentionRates& r = w.contention;
  if (!(r.voluntary_switches_per_s >= 0 && r.voluntary_switches_per_s >= t.voluntary_switches_per_s)) return {};
  // libgomp spins between parallel regions only while the process's OpenMP threads fit the cores; a second team,
  // started by any other thread that runs a parallel operator, makes every team sleep and wake per region.
  const int cores = std::max(1, c.cores);
  std::string s = fmt::format(
      "the intra-op threads sleep between operations ({:.0f} voluntary context switches/s): "
      "OpenMP stops spinning when this process's OpenMP threads outnumber the {} usable "
      "core{}, as when a thread other than the trainer's (a loader worker, a callback) runs "
      "parallel LibTorch operators",
      r.voluntary_switches_per_s, cores, cores == 1 ? "" : "s");
  if (c.workers > 0)
    return s + fmt::format(
                   " → try workers=0 (the loader then runs on the trainer thread) or threads=1 (now "
                   "workers={}, threads={})",
                   c.workers, std::max(1, c.threads));
  return s +
         " → find the thread that runs LibTorch operators beside the trainer (gdb -p PID, thread apply all bt), "
         "or try threads=1";
}

/// What a data-bound window's loader is short of, appended to d.reason with its evidence; the advice is replaced where
/// the cause has its own remedy. In order: reads (the workers spend under half their time on a core while the
/// process's threads do not wait for cores: they wait for the disk or file system), other processes' CPU
/// (contended), workers (they keep their cores busy and cores are idle), CPU for decoding and augmenting (they keep
/// every usable core busy). Needs the workers' CPU clock (loader_cpu_s); the synchronous loader (workers=0) keeps
/// the generic advice, after the contended case.
void loader_shortage(const WindowSummary& w, const AdviceContext& c, const DiagnosisThresholds& t, Diagnosis& d) {
  const ContentionRates& r = w.contention;
  const int cores = std::max(1, c.cores);
  const std::string io = r.io_pressure >= 0.10
                             ? fmt::format(", I/O pressure {:.0f}% (the disk is busy)", 100.0 * r.io_pressure)
                             : std::string();
  const std::string faults = r.major_faults_per_s >= t.major_faults_per_s
                                 ? fmt::format(", {:.0f} major page faults/s", r.major_faults_per_s)
                                 : std::string();
  const double loader = loader_cores(w);
  const bool measured = c.workers > 0 && w.loader_cpu_s >= 0 && w.step.total > 0;
  const double others = std::max(0.0, r.others_cpu);
  const double on_cpu = measured ? loader / static_cast<double>(c.workers) : 0.0;  // the workers' time on a core
  // Workers off the CPU most of the time while the process's threads did not wait for cores: they were blocked, not
  // crowded out, whatever else ran on the machine. With the process's CPU known, the run-queue wait of all its
  // threads (workers included) in cores, cpu × wait / (1 − wait), bounds the workers' wait: when even all of it
  // leaves them runnable under half their time, they were blocked, whoever else waited (the trainer threads beside
  // another process). Without it, any run-queue wait at the threshold counts as crowding.
  bool not_crowded = r.runq_wait < 0 || r.runq_wait < t.runq_wait;
  if (measured && r.runq_wait >= 0 && r.runq_wait < 1 && w.cpu_percent >= 0) {
    const double waiting = w.cpu_percent / 100.0 * r.runq_wait / (1.0 - r.runq_wait);
    not_crowded = loader + waiting < 0.5 * static_cast<double>(c.workers);
  }
  const bool blocked = measured && on_cpu < 0.5 && loader < 0.75 * cores && not_crowded;
  if (!blocked && r.others_cpu >= 0 && r.others_cpu >= t.others_cpu_share * cores) {
    d.reason += fmt::format(", loader short of CPU: other processes {:.1f} of {} cores, run-queue wait {:.0f}%{}{}",
                            r.others_cpu, cores, 100.0 * std::max(0.0, r.runq_wait), io, faults);
    d.advice = fmt::format(
                   "other processes take {:.1f} of the {} cores the loader needs → stop them, or train where "
                   "the cores are free; then ",
                   r.others_cpu, cores) +
               d.advice;
    return;
  }
  if (!measured) {
    d.reason += io + faults;
    return;
  }
  const double idle = static_cast<double>(cores) - loader - others;
  const double ms_per_image = w.images > 0 ? 1e3 * w.loader_cpu_s / static_cast<double>(w.images) : 0.0;
  if (blocked) {
    d.reason += fmt::format(
        ", loader short of reads: its {} {} on a core {:.0f}% of the time ({:.1f} cores) and "
        "waited for the disk or file system the rest{}{}",
        c.workers, c.workers == 1 ? "worker was" : "workers were", 100.0 * on_cpu, loader, io, faults);
    std::vector<std::string> changes;
    if (c.cache != core::CacheMode::ram) changes.push_back("cache=ram (each image read once)");
    changes.push_back(fmt::format("workers={} (more reads in flight)", 2 * c.workers));
    d.advice = "the images come in slower than the workers could decode them → try " + join(changes, ", ") +
               ", or put the dataset on local storage";
  } else if (idle >= 1.0 && c.workers < cores) {
    d.reason += fmt::format(", loader short of workers: {} workers kept {:.1f} cores busy, {:.1f} of {} cores idle{}{}",
                            c.workers, loader, idle, cores, io, faults);
    d.advice = fmt::format("workers={} leave cores idle → try workers={}", c.workers,
                           std::min(cores, c.workers + static_cast<int>(std::floor(idle + 0.25))));
  } else {
    d.reason += fmt::format(
        ", loader short of CPU for decoding and augmenting: {} workers kept {:.1f} of {} cores busy, "
        "{:.0f} ms of CPU per image{}{}",
        c.workers, loader, cores, ms_per_image, io, faults);
    std::vector<std::string> changes;
    if (c.cache != core::CacheMode::ram) changes.push_back("cache=ram (decode each image once)");
    const int64_t smaller = smaller_imgsz(c.imgsz);
    if (smaller < c.imgsz)
      changes.push_back(fmt::format("imgsz={} → {} (fewer pixels to decode/augment)", c.imgsz, smaller));
    if (changes.empty()) changes.push_back("a machine with more cores (every core already decodes)");
    d.advice = fmt::format("every usable core decodes and augments ({} per image) → try ",
                           fmt::format("{:.0f} ms", ms_per_image)) +
               join(changes, ", ");
  }
}

/// The first cause of slowed compute found, in the order quota, own oversubscription, other processes, memory,
/// sleeping intra-op threads, and what to change.
std::string first_slowed_cause(const WindowSummary& w, const AdviceContext& c, const DiagnosisThresholds& t) {
  const ContentionRates& r = w.contention;
  const int cores = std::max(1, c.cores);
  const double loader = loader_cores(w);
  const int own_threads = std::max(1, c.threads);
  const int fit = std::max(1, cores - static_cast<int>(std::lround(loader)));  // threads that leave the loader room
  const bool quota_binds = c.quota_cores > 0 && c.affinity_cores > 0 && c.quota_cores < c.affinity_cores;
  if (quota_binds && (own_threads > cores || r.quota_throttled >= t.quota_throttled)) {
    if (own_threads <= cores)
      return fmt::format("a CPU quota of {:.2g} core{} ({}) below the {} cores this process sees, throttled in {:.0f}% "
                         "of its periods: the run gets no more CPU here; ask for a larger quota (or fewer loader "
                         "workers beside the compute)",
                         c.quota_cores, c.quota_cores == 1.0 ? "" : "s", c.quota_file.empty() ? "cgroup" : c.quota_file,
                         c.affinity_cores, 100.0 * r.quota_throttled);
    return fmt::format("a CPU quota of {:.2g} core{} ({}) below the {} cores this process sees: threads={} time-share "
                       "it → try threads={}",
                       c.quota_cores, c.quota_cores == 1.0 ? "" : "s", c.quota_file.empty() ? "cgroup" : c.quota_file,
                       c.affinity_cores, own_threads, fit);
  }
  if (own_threads + loader > cores + 0.5) {
    return fmt::format("the run's own oversubscription: threads={} + {:.1f} cores of loader workers on {} usable "
                       "core{} → try threads={}",
                       own_threads, loader, cores, cores == 1 ? "" : "s", fit < own_threads ? fit : std::max(1, own_threads - 1));
  }
  const bool others = (r.others_cpu >= 0 && r.others_cpu >= t.others_cpu_share * cores) ||
                      (r.steal >= 0 && r.steal >= t.others_cpu_share * cores);
  if (others) {
    const int left = std::max(1, cores - static_cast<int>(std::ceil(std::max(0.0, r.others_cpu) - 0.25)));
    std::string s = fmt::format("CPU contention by other processes ({:.1f} of {} cores{})", std::max(0.0, r.others_cpu),
                                cores, r.steal >= 0.05 ? fmt::format(", {:.1f} stolen by the hypervisor", r.steal) : "");
    if (left < own_threads)
      return s + fmt::format(": stop them, or leave them their cores → try threads={} (now {})", left, own_threads);
    return s + ": stop the other work on this machine, or train where the cores are free";
  }
  if ((r.major_faults_per_s >= 0 && r.major_faults_per_s >= t.major_faults_per_s) ||
      (r.memory_pressure >= 0 && r.memory_pressure >= t.memory_pressure)) {
    std::string s = fmt::format("memory pressure ({:.0f} major page faults/s, memory pressure {:.0f}%)",
                                std::max(0.0, r.major_faults_per_s), 100.0 * std::max(0.0, r.memory_pressure));
    std::vector<std::string> changes;
    if (c.cache == core::CacheMode::ram) changes.push_back("cache=disk");
    if (c.batch > 1) changes.push_back(fmt::format("batch={}", std::max<int64_t>(1, c.batch / 2)));
    return s + ": free memory on this machine" + (changes.empty() ? "" : " → try " + join(changes, ", "));
  }
  if (std::string s = sleeping_team(w, c, t); !s.empty()) return s;
  return "no cause found among other processes, oversubscription, quota, memory or sleeping intra-op threads: look "
         "at what else runs here (top, pidstat)";
}

/// The cause of slowed compute and what to change; sleeping intra-op threads are added when another cause comes
/// first (both slow the compute, and their remedies differ).
std::string slowed_cause(const WindowSummary& w, const AdviceContext& c, const DiagnosisThresholds& t) {
  std::string first = first_slowed_cause(w, c, t);
  const std::string sleeping = sleeping_team(w, c, t);
  if (!sleeping.empty() && first.rfind(sleeping, 0) != 0) first += "; also " + sleeping;
  return first;
}

}  // namespace

Diagnosis diagnose(const WindowSummary& w, const AdviceContext& ctx, const DiagnosisThresholds& t) {
  Diagnosis d;
  if (w.steps <= 0 && w.step.total <= 0) {  // e.g. every step fell in the warm-up: zeros would read "balanced"
    d.bottleneck = Bottleneck::none;
    d.reason = "no step was measured outside the instrument warm-up (instrument_warmup)";
    d.advice = "run more steps (or lower instrument_warmup) for a verdict; yolo11 analyze RUN shows the warm-up steps";
    return d;
  }
  d.gpu_util = w.gpu_util;
  d.data_share = w.share(StepStage::dataloader);
  if (const StageSummary* dl = w.find(StepStage::dataloader)) d.data_tail = dl->p95 / std::max(dl->p50, kTailFloorS);
  d.compute_share = w.compute_share();
  d.optimizer_share = w.share(StepStage::h2d) + w.share(StepStage::optimizer) + w.share(StepStage::ema);

  std::string gpu = d.gpu_util >= 0 ? fmt::format(", GPU {:.0f}%", d.gpu_util) : std::string();
  // Compute ran below its calibrated speed, or its threads waited for cores, were throttled or slept.
  const bool slowed = w.contention.runq_wait >= t.runq_wait || w.contention.quota_throttled >= t.quota_throttled ||
                      (w.compute_speed >= 0 && w.compute_speed < t.compute_speed_low) ||
                      (is_cpu(ctx.device) && w.contention.voluntary_switches_per_s >= t.voluntary_switches_per_s);
  if (d.data_share >= t.data_share || (d.data_share >= t.data_tail_share && d.data_tail >= t.data_tail)) {
    d.bottleneck = Bottleneck::data;
    d.reason = fmt::format("data wait {:.0f}% of step, p95/p50 {:.1f}{}", 100.0 * d.data_share, d.data_tail, gpu);
    d.advice = data_advice(d, ctx, t);
    loader_shortage(w, ctx, t, d);
  } else if (d.optimizer_share >= t.optimizer_share) {
    d.bottleneck = Bottleneck::optimizer_sync;
    d.reason = fmt::format("h2d+optimizer+ema {:.0f}% of step{}", 100.0 * d.optimizer_share, gpu);
    d.advice = optimizer_advice(d, w, ctx);
  } else if (d.compute_share >= t.compute_share && slowed) {
    // Compute dominates, but it ran below its calibrated speed or its threads waited for cores: faster hardware
    // would not be the remedy.
    d.bottleneck = Bottleneck::compute_slowed;
    d.reason = fmt::format("forward+loss+backward {:.0f}% of step{}{}{}", 100.0 * d.compute_share,
                           w.compute_speed >= 0 ? fmt::format(" at {:.2f}x its calibrated speed", w.compute_speed) : "",
                           gpu, contention_evidence(w, ctx));
    d.advice = slowed_cause(w, ctx, t);
  } else if (d.compute_share >= t.compute_share) {
    d.bottleneck = Bottleneck::compute;
    d.reason = fmt::format("forward+loss+backward {:.0f}% of step{}{}", 100.0 * d.compute_share,
                           w.compute_speed >= 0 ? fmt::format(" at {:.2f}x its calibrated speed", w.compute_speed) : "",
                           gpu);
    d.advice = compute_advice(d, ctx, t);
    if (d.gpu_util >= t.gpu_busy && w.sm_active >= 0 && w.sm_active < t.sm_active_low) {
      // nvidia-smi's util counts time with any kernel resident; GPM's SM activity says how many SMs worked.
      d.reason += fmt::format(", but SM active only {:.0f}%", w.sm_active);
      d.advice = fmt::format("GPU util {:.0f}% but SMs active {:.0f}%: launch-bound (many tiny kernels) → try batch={} "
                             "→ {} (more work per kernel){}",
                             d.gpu_util, w.sm_active, ctx.batch, 2 * ctx.batch, ctx.amp ? "" : ", amp=False → amp=True");
    }
  } else if (slowed && d.compute_share >= d.data_share && d.compute_share >= d.optimizer_share) {
    // No stage dominates, but the largest, compute, ran slowed: contention stretches every stage, so "balanced"
    // (no change to make) would hide the one cause there is.
    d.bottleneck = Bottleneck::compute_slowed;
    d.reason = fmt::format(
        "no stage dominates (data wait {:.0f}%, forward+loss+backward {:.0f}%, optimizer/sync {:.0f}% "
        "of step), and compute ran{}{}{}",
        100.0 * d.data_share, 100.0 * d.compute_share, 100.0 * d.optimizer_share,
        w.compute_speed >= 0 ? fmt::format(" at {:.2f}x its calibrated speed", w.compute_speed)
                             : std::string(" slowed"),
        gpu, contention_evidence(w, ctx));
    d.advice = slowed_cause(w, ctx, t);
  } else {
    d.bottleneck = Bottleneck::balanced;
    d.reason = fmt::format("data wait {:.0f}%, compute {:.0f}%, optimizer/sync {:.0f}% of step{}",
                           100.0 * d.data_share, 100.0 * d.compute_share, 100.0 * d.optimizer_share, gpu);
  }
  return d;
}

std::string memory_trend(const std::vector<ProcessMemory>& m, int64_t first_epoch) {
  const size_t n = m.size();
  if (n < 6) return {};
  const ProcessMemory& ref = m[2];
  const ProcessMemory& last = m[n - 1];
  if (ref.rss_mb <= 0 || last.rss_mb < 1.05 * ref.rss_mb) return {};
  for (size_t i = n - 3; i < n; ++i)
    if (m[i].rss_mb <= m[i - 1].rss_mb) return {};
  const double grew = last.rss_mb - ref.rss_mb;
  std::string s = fmt::format("RSS keeps rising: {:.0f} MiB after epoch {}, {:.0f} MiB after epoch {} (+{:.0f} %, {:.0f} "
                              "MiB per epoch)", ref.rss_mb, first_epoch + 2, last.rss_mb, first_epoch + static_cast<int64_t>(n) - 1, 100.0 * grew / ref.rss_mb,
                              grew / static_cast<double>(n - 3));
  if (ref.rss_file_mb >= 0 && last.rss_file_mb >= 0)
    s += fmt::format("; anonymous {:+.0f} MiB, file-backed {:+.0f} MiB", last.rss_anon_mb - ref.rss_anon_mb,
                     last.rss_file_mb - ref.rss_file_mb);
  if (ref.heap_in_use_mb < 0 || last.heap_in_use_mb < 0) return s;
  const double in_use = last.heap_in_use_mb - ref.heap_in_use_mb, free = last.heap_free_mb - ref.heap_free_mb;
  s += fmt::format("; heap in use {:+.0f} MiB, allocator's free chunks {:+.0f} MiB", in_use, free);
  if (in_use >= 0.5 * grew)
    s += ": memory still referenced grows (a leak or a growing cache): report it with this run's summary.json";
  else
    s += ": the allocator keeps freed memory (retention, not a leak)";
  if (ref.fds >= 0 && last.fds > ref.fds) s += fmt::format("; open files {} → {}", ref.fds, last.fds);
  if (ref.threads >= 0 && last.threads > ref.threads) s += fmt::format("; threads {} → {}", ref.threads, last.threads);
  return s;
}

}  // namespace yolo11::instrument
