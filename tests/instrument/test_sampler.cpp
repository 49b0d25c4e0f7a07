// Sampler: process CPU time and RSS from /proc, NVML absent → n/a, the background thread's aggregates.
#include <gtest/gtest.h>
#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <unistd.h>
#include <thread>

#include "yolo11/instrument/sampler.h"
#include "yolo11/instrument/trace.h"

namespace yolo11::instrument {
namespace {

TEST(Sampler, ProcessCpuSecondsGrowWithBusyWork) {
  const double t0 = process_cpu_seconds();
  ASSERT_GE(t0, 0.0);
  volatile double x = 0;
  const int64_t until = now_ns() + 150'000'000;
  while (now_ns() < until) x = x + 1.0;
  EXPECT_GT(process_cpu_seconds(), t0 + 0.02);
  EXPECT_GT(process_rss_mb(), 1.0);
}

TEST(Sampler, ProcessMemorySeesHeapFilesAndThreads) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "ASan and TSan replace glibc's allocator: mallinfo2 reads 0 under them";
#endif
  const ProcessMemory before = process_memory();
  ASSERT_GT(before.rss_mb, 1.0);
  ASSERT_GE(before.heap_in_use_mb, 0.0);
  EXPECT_GE(before.arenas, 1);
  EXPECT_GE(before.fds, 3);
  EXPECT_GE(before.threads, 1);
  // 64 MiB allocated and touched: in use (mmapped, above the threshold); a new descriptor and thread are counted.
  char* block = static_cast<char*>(std::malloc(64 << 20));
  ASSERT_NE(block, nullptr);
  std::memset(block, 1, 64 << 20);
  const int fd = ::open("/proc/self/stat", O_RDONLY);
  ProcessMemory during;
  std::thread t([&] { during = process_memory(); });
  t.join();
  EXPECT_GE(during.heap_in_use_mb, before.heap_in_use_mb + 63);
  EXPECT_GE(during.rss_mb, before.rss_mb + 60);
  EXPECT_EQ(during.fds, before.fds + 1);
  EXPECT_EQ(during.threads, before.threads + 1);
  ::close(fd);
  std::free(block);
  EXPECT_LT(process_memory().heap_in_use_mb, during.heap_in_use_mb - 63);
}

TEST(Sampler, NvmlIsNaWhenTheLibraryIsAbsent) {
  void* lib = dlopen("libnvidia-ml.so.1", RTLD_LAZY | RTLD_LOCAL);
  if (lib != nullptr) {
    dlclose(lib);
    GTEST_SKIP() << "libnvidia-ml.so.1 is present on this machine; the n/a path cannot be exercised";
  }
  EXPECT_EQ(Nvml::open(0), nullptr);
  Sampler s(10, /*gpu=*/true, 0);
  EXPECT_FALSE(s.has_nvml());
  const Sample r = s.sample_now();
  EXPECT_LT(r.gpu_util, 0);
  EXPECT_LT(r.peak_alloc_mb, 0);  // CPU build or no device
}

TEST(Sampler, ThreadSamplesAtItsRateAndAggregates) {
  Sampler s(100, /*gpu=*/false, 0);
  s.set_queue_depth(3);
  const int64_t t0 = now_ns();
  const double cpu0 = process_cpu_seconds();
  s.start();
  volatile double x = 0;
  while (now_ns() < t0 + 200'000'000) x = x + 1.0;  // keep one thread busy for 0.2 s
  s.stop();
  const int64_t t1 = now_ns();
  // What this process really got (a loaded machine may give the busy thread well under one core).
  const double ref = 100.0 * (process_cpu_seconds() - cpu0) / (static_cast<double>(t1 - t0) * 1e-9);
  const SampleAggregate a = s.aggregate(t0, t1);
  EXPECT_GE(a.n, 8);   // ~20 expected at 100 Hz; loose for a loaded machine
  EXPECT_LE(a.n, 40);
  EXPECT_GT(a.cpu_percent, 0.0);
  EXPECT_NEAR(a.cpu_percent, ref, std::max(15.0, 0.5 * ref));  // 10 ms /proc tick granularity
  EXPECT_GT(a.rss_mb, 1.0);
  EXPECT_LT(a.gpu_util, 0);
  EXPECT_DOUBLE_EQ(s.latest().queue_depth, 3.0);
  // A span with no reading falls back to the latest one before it.
  EXPECT_EQ(s.aggregate(now_ns() + 1, now_ns() + 2).n, 1);
}

}  // namespace
}  // namespace yolo11::instrument
