// Utilisation sampler: /proc for the process, NVML (dlopen) for the GPU, allocator stats for peak memory.
#include "yolo11/instrument/sampler.h"

#include <dlfcn.h>
#include <malloc.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "yolo11/core/compat.h"
#include "yolo11/instrument/range.h"
#include "yolo11/instrument/trace.h"

namespace yolo11::instrument {

namespace {
constexpr double kKeepSeconds = 7200;  // readings kept for window/epoch aggregates (72k at 10 Hz)
constexpr double kMiB = 1024.0 * 1024.0;
}  // namespace

double process_cpu_seconds() {
  std::ifstream f("/proc/self/stat");
  std::string line;
  if (!std::getline(f, line)) return -1;
  // Fields after "(comm)": state(3) ... utime(14) stime(15); comm may contain spaces, so split after ')'.
  const auto close = line.rfind(')');
  if (close == std::string::npos) return -1;
  std::istringstream rest(line.substr(close + 1));
  std::vector<std::string> tok;
  std::string t;
  while (rest >> t && tok.size() < 13) tok.push_back(t);
  if (tok.size() < 13) return -1;
  const double ticks = static_cast<double>(sysconf(_SC_CLK_TCK));
  return (std::stod(tok[11]) + std::stod(tok[12])) / ticks;
}

int64_t process_read_bytes() {
  std::ifstream in("/proc/self/io");
  std::string key;
  int64_t v = 0;
  while (in >> key >> v)
    if (key == "read_bytes:") return v;
  return -1;
}

double process_rss_mb() {
  std::ifstream f("/proc/self/statm");
  long long size = 0, resident = 0;
  if (!(f >> size >> resident)) return -1;
  return static_cast<double>(resident) * static_cast<double>(sysconf(_SC_PAGESIZE)) / kMiB;
}

ProcessMemory process_memory() {
  ProcessMemory m;
  m.rss_mb = process_rss_mb();
#if defined(__GLIBC__)
  const struct mallinfo2 mi = ::mallinfo2();
  m.heap_in_use_mb = static_cast<double>(mi.uordblks + mi.hblkhd) / kMiB;
  m.heap_free_mb = static_cast<double>(mi.fordblks) / kMiB;
  m.heap_mmap_mb = static_cast<double>(mi.hblkhd) / kMiB;
  // The arena count is only in malloc_info's XML: one <heap nr="N"> element per arena.
  char* buf = nullptr;
  size_t len = 0;
  if (FILE* f = ::open_memstream(&buf, &len)) {
    const bool ok = ::malloc_info(0, f) == 0;
    std::fclose(f);
    if (ok && buf != nullptr) {
      m.arenas = 0;
      for (const char* p = buf; (p = std::strstr(p, "<heap nr=")) != nullptr; ++p) ++m.arenas;
    }
    std::free(buf);
  }
#endif
  std::error_code ec;
  int64_t fds = 0;
  for (auto it = std::filesystem::directory_iterator("/proc/self/fd", ec); !ec && it != std::filesystem::directory_iterator();
       it.increment(ec))
    ++fds;
  if (!ec) m.fds = fds - 1;  // the iterator's own descriptor
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("Threads:", 0) == 0) m.threads = std::stoll(line.substr(8));
    if (line.rfind("RssAnon:", 0) == 0) m.rss_anon_mb = std::stod(line.substr(8)) / 1024.0;  // kB
    if (line.rfind("RssFile:", 0) == 0) m.rss_file_mb = std::stod(line.substr(8)) / 1024.0;
  }
  return m;
}

double release_free_heap() {
#if defined(__GLIBC__)
  const double before = process_rss_mb();
  ::malloc_trim(0);
  return std::max(0.0, before - process_rss_mb());
#else
  return 0;
#endif
}

// ---- NVML through dlopen ------------------------------------------------------------------------------------
// Only the few entry points used, declared with NVML's C ABI (nvmlReturn_t is an int enum, 0 = success).
struct Nvml::Api {
  using Device = void*;
  struct Utilization {
    unsigned int gpu, memory;
  };
  struct Memory {
    unsigned long long total, free, used;
  };
  void* lib = nullptr;
  int (*init)() = nullptr;
  int (*shutdown)() = nullptr;
  int (*by_index)(unsigned int, Device*) = nullptr;
  int (*by_pci)(const char*, Device*) = nullptr;
  int (*name)(Device, char*, unsigned int) = nullptr;
  int (*utilization)(Device, Utilization*) = nullptr;
  int (*memory)(Device, Memory*) = nullptr;
  int (*clock)(Device, int, unsigned int*) = nullptr;
  int (*power)(Device, unsigned int*) = nullptr;
  // GPM (GPU Performance Monitoring, Hopper and later; nvml.h ≥ 11.8): metrics between two device samples.
  using GpmSample = void*;
  struct GpmSupport {
    unsigned int version, supported;  // NVML_GPM_SUPPORT_VERSION = 1
  };
  struct GpmMetric {
    unsigned int id;
    int ret;
    double value;
    struct {
      char *short_name, *long_name, *unit;
    } info;
  };
  struct GpmMetricsGet {
    unsigned int version, num;  // NVML_GPM_METRICS_GET_VERSION = 1
    GpmSample sample1, sample2;
    GpmMetric metrics[98];      // NVML_GPM_METRIC_MAX; only `num` are read and written
  };
  int (*gpm_support)(Device, GpmSupport*) = nullptr;
  int (*gpm_alloc)(GpmSample*) = nullptr;
  int (*gpm_free)(GpmSample) = nullptr;
  int (*gpm_get)(Device, GpmSample) = nullptr;
  int (*gpm_metrics)(GpmMetricsGet*) = nullptr;
  GpmSample gpm[2] = {nullptr, nullptr};
  int gpm_cur = 0;
  bool gpm_on = false, gpm_primed = false;
  ~Api() {
    for (GpmSample s : gpm)
      if (s != nullptr && gpm_free != nullptr) gpm_free(s);
    if (shutdown != nullptr) shutdown();
    if (lib != nullptr) dlclose(lib);
  }
};

namespace {
template <typename F>
bool load_symbol(void* lib, const char* name, F& out) {
  out = reinterpret_cast<F>(dlsym(lib, name));
  return out != nullptr;
}

// PCI bus id of a CUDA ordinal (respecting CUDA_VISIBLE_DEVICES) through the driver API; empty when unknown.
std::string cuda_pci_bus_id(int ordinal) {
  void* cuda = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
  if (cuda == nullptr) return {};
  int (*cu_init)(unsigned int) = nullptr;
  int (*cu_device_get)(int*, int) = nullptr;
  int (*cu_pci)(char*, int, int) = nullptr;
  std::string id;
  if (load_symbol(cuda, "cuInit", cu_init) && load_symbol(cuda, "cuDeviceGet", cu_device_get) &&
      load_symbol(cuda, "cuDeviceGetPCIBusId", cu_pci) && cu_init(0) == 0) {
    int dev = 0;
    char buf[64] = {0};
    if (cu_device_get(&dev, ordinal) == 0 && cu_pci(buf, sizeof(buf), dev) == 0) id = buf;
  }
  dlclose(cuda);
  return id;
}
}  // namespace

std::unique_ptr<Nvml> Nvml::open(int cuda_device) {
  auto api = std::make_unique<Api>();
  // YOLO11_NVML_LIBRARY: another NVML (tests load a fake one; unusual installs a full path).
  const char* lib_env = std::getenv("YOLO11_NVML_LIBRARY");
  api->lib = dlopen(lib_env != nullptr && *lib_env ? lib_env : "libnvidia-ml.so.1", RTLD_LAZY | RTLD_LOCAL);
  if (api->lib == nullptr) {
    spdlog::debug("instrument: NVML not loaded ({}); GPU utilisation n/a", dlerror());
    return nullptr;
  }
  if (!load_symbol(api->lib, "nvmlInit_v2", api->init) || !load_symbol(api->lib, "nvmlShutdown", api->shutdown) ||
      !load_symbol(api->lib, "nvmlDeviceGetHandleByIndex_v2", api->by_index)) {
    spdlog::debug("instrument: NVML lacks nvmlInit_v2/nvmlDeviceGetHandleByIndex_v2; GPU utilisation n/a");
    api->shutdown = nullptr;
    return nullptr;
  }
  load_symbol(api->lib, "nvmlDeviceGetHandleByPciBusId_v2", api->by_pci);
  load_symbol(api->lib, "nvmlDeviceGetName", api->name);
  load_symbol(api->lib, "nvmlDeviceGetUtilizationRates", api->utilization);
  load_symbol(api->lib, "nvmlDeviceGetMemoryInfo", api->memory);
  load_symbol(api->lib, "nvmlDeviceGetClockInfo", api->clock);
  load_symbol(api->lib, "nvmlDeviceGetPowerUsage", api->power);
  if (api->init() != 0) {
    spdlog::debug("instrument: nvmlInit failed; GPU utilisation n/a");
    api->shutdown = nullptr;
    return nullptr;
  }
  Api::Device dev = nullptr;
  const std::string pci = cuda_pci_bus_id(cuda_device);
  if (pci.empty() || api->by_pci == nullptr || api->by_pci(pci.c_str(), &dev) != 0) {
    if (api->by_index(static_cast<unsigned int>(cuda_device), &dev) != 0) {
      spdlog::debug("instrument: NVML has no device {}; GPU utilisation n/a", cuda_device);
      return nullptr;
    }
  }
  if (load_symbol(api->lib, "nvmlGpmQueryDeviceSupport", api->gpm_support) &&
      load_symbol(api->lib, "nvmlGpmSampleAlloc", api->gpm_alloc) && load_symbol(api->lib, "nvmlGpmSampleFree", api->gpm_free) &&
      load_symbol(api->lib, "nvmlGpmSampleGet", api->gpm_get) && load_symbol(api->lib, "nvmlGpmMetricsGet", api->gpm_metrics)) {
    Api::GpmSupport sup{1, 0};
    if (api->gpm_support(dev, &sup) == 0 && sup.supported != 0 && api->gpm_alloc(&api->gpm[0]) == 0 &&
        api->gpm_alloc(&api->gpm[1]) == 0) {
      api->gpm_on = true;
    } else {
      spdlog::debug("instrument: NVML GPM not supported on this device (Hopper and later); SM activity n/a");
    }
  }
  std::unique_ptr<Nvml> n(new Nvml());
  n->device_ = dev;
  if (api->name != nullptr) {
    char buf[96] = {0};
    if (api->name(dev, buf, sizeof(buf)) == 0) n->name_ = buf;
  }
  n->api_ = std::move(api);
  return n;
}

Nvml::~Nvml() = default;

bool Nvml::has_gpm() const { return api_->gpm_on; }

bool Nvml::read(Sample& s) const {
  bool any = false;
  if (api_->utilization != nullptr) {
    Api::Utilization u{};
    if (api_->utilization(device_, &u) == 0) s.gpu_util = u.gpu, any = true;
  }
  if (api_->memory != nullptr) {
    Api::Memory m{};
    if (api_->memory(device_, &m) == 0) s.gpu_mem_mb = static_cast<double>(m.used) / kMiB, any = true;
  }
  if (api_->clock != nullptr) {
    unsigned int mhz = 0;
    constexpr int kClockSm = 1;  // NVML_CLOCK_SM
    if (api_->clock(device_, kClockSm, &mhz) == 0) s.sm_clock_mhz = mhz, any = true;
  }
  if (api_->power != nullptr) {
    unsigned int mw = 0;
    if (api_->power(device_, &mw) == 0) s.power_w = mw / 1000.0, any = true;
  }
  if (api_->gpm_on && api_->gpm_get(device_, api_->gpm[api_->gpm_cur]) == 0) {  // metrics since the previous reading
    if (api_->gpm_primed) {
      Api::GpmMetricsGet g{};
      g.version = 1;
      g.num = 4;
      g.sample1 = api_->gpm[1 - api_->gpm_cur];
      g.sample2 = api_->gpm[api_->gpm_cur];
      // NVML_GPM_METRIC_SM_UTIL 2, SM_OCCUPANCY 3, ANY_TENSOR_UTIL 5, DRAM_BW_UTIL 10 (all 0-100 %)
      const unsigned int ids[4] = {2, 3, 5, 10};
      double* out[4] = {&s.sm_active, &s.sm_occupancy, &s.tensor_active, &s.dram_bw};
      for (unsigned int i = 0; i < 4; ++i) g.metrics[i].id = ids[i];
      if (api_->gpm_metrics(&g) == 0) {
        for (unsigned int i = 0; i < 4; ++i)
          if (g.metrics[i].ret == 0) *out[i] = g.metrics[i].value, any = true;
      }
    }
    api_->gpm_primed = true;
    api_->gpm_cur = 1 - api_->gpm_cur;
  }
  return any;
}

// ---- Sampler ---------------------------------------------------------------------------------------------------
Sampler::Sampler(double hz, bool gpu, int cuda_device) : hz_(hz > 0 ? hz : 10.0), gpu_(gpu), cuda_device_(cuda_device) {
  if (gpu_) nvml_ = Nvml::open(cuda_device_);
}

Sampler::~Sampler() { stop(); }

void Sampler::start() {
  if (thread_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(cv_mutex_);
    stop_ = false;
  }
  sample_now();  // CPU-time baseline, so the first threaded reading has a rate
  prepare_threads();
  thread_ = std::thread([this] { loop(); });
}

void Sampler::stop() {
  {
    std::lock_guard<std::mutex> lock(cv_mutex_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

Sample Sampler::sample_now() {
  Sample s;
  s.t_ns = now_ns();
  const double cpu = process_cpu_seconds();
  s.cpu_s = cpu;
  s.rss_mb = process_rss_mb();
  {
    std::lock_guard<std::mutex> lock(contention_mutex_);
    s.contention = contention_.read();
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (cpu >= 0 && last_cpu_s_ >= 0 && s.t_ns > last_cpu_t_) {
      s.cpu_percent = 100.0 * (cpu - last_cpu_s_) / (static_cast<double>(s.t_ns - last_cpu_t_) * 1e-9);
    }
    last_cpu_s_ = cpu;
    last_cpu_t_ = s.t_ns;
  }
  if (nvml_) nvml_->read(s);
  if (gpu_) {
    const int64_t peak = compat::peak_memory_allocated(cuda_device_);
    if (peak >= 0) s.peak_alloc_mb = static_cast<double>(peak) / kMiB;
  }
  s.queue_depth = queue_depth_.load(std::memory_order_relaxed);
  if (trace::recording()) {
    if (s.cpu_percent >= 0) trace::counter("CPU %", s.cpu_percent, s.t_ns);
    if (s.rss_mb >= 0) trace::counter("RSS MiB", s.rss_mb, s.t_ns);
    if (s.gpu_util >= 0) trace::counter("GPU %", s.gpu_util, s.t_ns);
    if (s.gpu_mem_mb >= 0) trace::counter("GPU memory MiB", s.gpu_mem_mb, s.t_ns);
    if (s.sm_active >= 0) trace::counter("SM active %", s.sm_active, s.t_ns);
    if (s.tensor_active >= 0) trace::counter("tensor active %", s.tensor_active, s.t_ns);
    if (s.queue_depth >= 0) trace::counter("queue depth", s.queue_depth, s.t_ns);
  }
  std::lock_guard<std::mutex> lock(mutex_);
  samples_.push_back(s);
  const int64_t keep_ns = static_cast<int64_t>(kKeepSeconds * 1e9);
  while (!samples_.empty() && samples_.front().t_ns < s.t_ns - keep_ns) samples_.pop_front();
  return s;
}

void Sampler::loop() {
  name_this_thread("sampler");
  const auto period = std::chrono::nanoseconds(static_cast<int64_t>(1e9 / hz_));
  auto next = std::chrono::steady_clock::now() + period;
  std::unique_lock<std::mutex> lock(cv_mutex_);
  while (!cv_.wait_until(lock, next, [this] { return stop_; })) {
    lock.unlock();
    sample_now();
    lock.lock();
    next += period;
    const auto now = std::chrono::steady_clock::now();
    if (next < now) next = now + period;  // fell behind (suspended process): do not burst
  }
}

SampleAggregate Sampler::aggregate(int64_t t0_ns, int64_t t1_ns) const {
  SampleAggregate a;
  std::lock_guard<std::mutex> lock(mutex_);
  // Readings are in time order: binary-search the span instead of scanning up to kKeepSeconds of them.
  auto by_time = [](const Sample& s, int64_t t) { return s.t_ns < t; };
  const auto lo = std::lower_bound(samples_.begin(), samples_.end(), t0_ns, by_time);
  const auto hi = std::lower_bound(lo, samples_.end(), t1_ns + 1, by_time);
  std::vector<const Sample*> in;
  for (auto it = lo; it != hi; ++it) in.push_back(&*it);
  if (in.empty() && hi != samples_.begin()) in.push_back(&*std::prev(hi));  // latest reading before t1
  a.n = static_cast<int64_t>(in.size());
  auto mean = [&](double Sample::*f) {
    double sum = 0;
    int n = 0;
    for (const Sample* s : in) {
      if (s->*f >= 0) sum += s->*f, ++n;
    }
    return n > 0 ? sum / n : -1.0;
  };
  auto max = [&](double Sample::*f) {
    double m = -1;
    for (const Sample* s : in) m = std::max(m, s->*f);
    return m;
  };
  a.cpu_percent = mean(&Sample::cpu_percent);
  if (in.size() >= 2 && in.front()->cpu_s >= 0 && in.back()->cpu_s >= 0 && in.back()->t_ns > in.front()->t_ns) {
    const double dt = static_cast<double>(in.back()->t_ns - in.front()->t_ns) * 1e-9;
    a.cpu_percent = 100.0 * (in.back()->cpu_s - in.front()->cpu_s) / dt;
    a.contention = contention_rates(in.front()->contention, in.back()->contention, dt,
                                    in.back()->cpu_s - in.front()->cpu_s);
  }
  a.gpu_util = mean(&Sample::gpu_util);
  a.sm_active = mean(&Sample::sm_active);
  a.sm_occupancy = mean(&Sample::sm_occupancy);
  a.tensor_active = mean(&Sample::tensor_active);
  a.dram_bw = mean(&Sample::dram_bw);
  a.sm_clock_mhz = mean(&Sample::sm_clock_mhz);
  a.power_w = mean(&Sample::power_w);
  a.rss_mb = max(&Sample::rss_mb);
  a.gpu_mem_mb = max(&Sample::gpu_mem_mb);
  a.peak_alloc_mb = max(&Sample::peak_alloc_mb);
  return a;
}

Sample Sampler::latest() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return samples_.empty() ? Sample{} : samples_.back();
}

}  // namespace yolo11::instrument
