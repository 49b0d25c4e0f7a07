#pragma once
// Background utilisation sampler (default 10 Hz): process CPU % and RSS from /proc/self, GPU utilisation,
// memory used, SM clock and power through NVML (libnvidia-ml.so.1 loaded with dlopen at run time: no link
// dependency, "n/a" when absent), allocator peak device memory (CUDA builds). While a trace is recording it
// also emits counter events (GPU %, CPU %, RSS MiB, queue depth).
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "yolo11/instrument/contention.h"

namespace yolo11::instrument {

/// One reading; −1 means n/a.
struct Sample {
  int64_t t_ns = 0;             ///< now_ns() at the reading
  double cpu_percent = -1;      ///< process CPU since the previous reading, 100 = one core busy
  double cpu_s = -1;            ///< cumulative process CPU time (user + system), s
  double rss_mb = -1;           ///< resident set, MiB
  double gpu_util = -1;         ///< NVML GPU utilisation, %
  double gpu_mem_mb = -1;       ///< NVML memory used on the device (all processes), MiB
  double sm_clock_mhz = -1;     ///< NVML SM clock, MHz
  double power_w = -1;          ///< NVML board power, W
  double peak_alloc_mb = -1;    ///< caching-allocator peak of this process, MiB (CUDA builds)
  double queue_depth = -1;      ///< last value given to set_queue_depth
  /// NVML GPM (Hopper and later), % over the time since the previous reading: SMs with a warp resident, warps
  /// resident vs the SMs' maximum, SMs issuing tensor-core instructions, DRAM bandwidth vs its peak.
  double sm_active = -1, sm_occupancy = -1, tensor_active = -1, dram_bw = -1;
  ContentionCounters contention;  ///< cumulative /proc counters (instrument/contention.h)
};

/// Means/maxima of the samples in a time span; −1 where n/a.
struct SampleAggregate {
  int64_t n = 0;
  /// cpu: CPU time over wall time between the first and last reading (time-weighted); gpu util/clock/power:
  /// mean; memory: max.
  double cpu_percent = -1, rss_mb = -1, gpu_util = -1, gpu_mem_mb = -1, sm_clock_mhz = -1, power_w = -1,
         peak_alloc_mb = -1;
  double sm_active = -1, sm_occupancy = -1, tensor_active = -1, dram_bw = -1;  ///< GPM means, %
  ContentionRates contention;  ///< between the first and last reading of the span (instrument/contention.h)
};

/// Process CPU time (user + system) from /proc/self/stat, seconds; −1 when unreadable.
double process_cpu_seconds();
/// Bytes this process has caused to be fetched from storage (read_bytes of /proc/self/io; page-cache hits do not
/// count); −1 when unreadable.
int64_t process_read_bytes();
/// Resident set from /proc/self/statm, MiB; −1 when unreadable.
double process_rss_mb();

/// The process's memory at one moment: what the kernel has resident, and how glibc's heap splits it (mallinfo2,
/// all arenas). Heap "in use" growing is a leak or a cache; heap "free" growing with in-use flat is the allocator
/// keeping freed memory (retention). −1 where n/a (no /proc, another libc).
struct ProcessMemory {
  double rss_mb = -1;          ///< resident set, MiB
  double rss_anon_mb = -1;     ///< of it, anonymous memory (heap, stacks, tensors): the process's own, MiB
  double rss_file_mb = -1;     ///< of it, pages of mapped files (library code, mmapped data; the kernel can drop them), MiB
  double heap_in_use_mb = -1;  ///< allocated and not freed: arenas' in-use chunks + mmapped chunks, MiB
  double heap_free_mb = -1;    ///< free chunks the arenas keep (not returned to the kernel), MiB
  double heap_mmap_mb = -1;    ///< of in-use, in chunks mmapped on their own (≥ the mmap threshold), MiB
  int64_t arenas = -1;         ///< malloc arenas (one per thread that allocated concurrently, up to 8 × cores)
  int64_t fds = -1;            ///< open file descriptors (/proc/self/fd)
  int64_t threads = -1;        ///< threads of the process (/proc/self/status)
};
/// Reads ProcessMemory. Walks every arena under its lock (milliseconds): call it per epoch, not per step.
ProcessMemory process_memory();
/// Gives the kernel back what glibc's arenas hold free (malloc_trim(0): every whole free page inside free chunks, in
/// every arena). Without it a training process's RSS climbs epoch after epoch while its heap in use stays flat:
/// freed activations of one step leave holes that the next step's differently-sized requests only partly reuse
/// (docs/benchmarks.md "Memory over a long run"). Returns the RSS drop in MiB (≥ 0; 0 where n/a); takes
/// milliseconds: call it per epoch.
double release_free_heap();

/// NVML through dlopen (libnvidia-ml.so.1, or $YOLO11_NVML_LIBRARY when set). open() returns nullptr (and logs why at debug level) when the library or the device
/// is unavailable. The CUDA ordinal is mapped to the NVML device by PCI bus id when libcuda is loadable.
class Nvml {
 public:
  static std::unique_ptr<Nvml> open(int cuda_device);
  ~Nvml();
  /// Fills the gpu_* / sm_clock / power fields of `s`; false when every query failed.
  bool read(Sample& s) const;
  const std::string& device_name() const { return name_; }
  /// GPM metrics available (the device supports them: Hopper and later, driver ≥ 520); read() then fills sm_active,
  /// sm_occupancy, tensor_active, dram_bw from its second call on.
  bool has_gpm() const;

 private:
  Nvml() = default;
  struct Api;
  std::unique_ptr<Api> api_;
  void* device_ = nullptr;
  std::string name_;
};

class Sampler {
 public:
  /// `gpu`: try NVML and allocator stats for `cuda_device`. Does not start the thread.
  Sampler(double hz, bool gpu, int cuda_device);
  ~Sampler();  ///< stops the thread
  void start();
  void stop();
  /// Takes one reading now on the calling thread (also used by the thread).
  Sample sample_now();
  /// Aggregate over readings with t in [t0_ns, t1_ns]; when none fall inside, the latest reading before t1.
  SampleAggregate aggregate(int64_t t0_ns, int64_t t1_ns) const;
  Sample latest() const;
  void set_queue_depth(double depth) { queue_depth_.store(depth, std::memory_order_relaxed); }
  bool has_nvml() const { return nvml_ != nullptr; }
  std::string gpu_name() const { return nvml_ ? nvml_->device_name() : std::string(); }

 private:
  void loop();
  double hz_;
  bool gpu_;
  int cuda_device_;
  std::unique_ptr<Nvml> nvml_;
  std::atomic<double> queue_depth_{-1};
  mutable std::mutex mutex_;
  std::deque<Sample> samples_;  // last kKeepSeconds of readings
  std::mutex contention_mutex_;  // sample_now runs on the sampler thread and, at finish, on the trainer's
  ContentionReader contention_;
  double last_cpu_s_ = -1;
  int64_t last_cpu_t_ = 0;
  std::thread thread_;
  std::condition_variable cv_;
  std::mutex cv_mutex_;
  bool stop_ = false;
};

}  // namespace yolo11::instrument
