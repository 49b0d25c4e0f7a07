// engine::tune_malloc (fp_env.h): freed large blocks are reused without faulting their pages in again, and the
// environment switches leave glibc's behaviour alone. Each ctest case runs in its own process.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "yolo11/engine/fp_env.h"

namespace {
long minor_faults() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_minflt;
}
volatile char sink;

// malloc + write every page + free, as a LibTorch CPU tensor of `bytes` is used; returns the faults it took.
long touch_block(size_t bytes) {
  const long f0 = minor_faults();
  char* p = static_cast<char*>(std::malloc(bytes));
  if (!p) return -1;
  std::memset(p, 1, bytes);
  asm volatile("" : : "r"(p) : "memory");  // the block is used: the compiler may not drop malloc/memset/free
  sink = p[bytes / 2];
  std::free(p);
  return minor_faults() - f0;
}
}  // namespace

TEST(TuneMalloc, AFreedLargeBlockIsReusedWithoutFaultingItsPagesAgain) {
  unsetenv("YOLO11_MALLOC_DEFAULTS");
  unsetenv("GLIBC_TUNABLES");
  const std::string line = yolo11::engine::tune_malloc();
  if (line.find("kept for reuse") == std::string::npos) GTEST_SKIP() << line;  // not glibc, or a sanitizer's malloc
  const size_t bytes = size_t{64} << 20;  // 16,384 pages of 4 KiB
  const long first = touch_block(bytes);
  const long second = touch_block(bytes);
  EXPECT_GT(first, 8000) << "the first use faults its pages in";
  EXPECT_LT(second, 500) << "the second use should find the block in the heap; glibc's defaults would mmap it anew "
                            "and fault ~16k pages";
}

TEST(TuneMalloc, EnvironmentSwitchesKeepGlibcDefaults) {
  setenv("YOLO11_MALLOC_DEFAULTS", "1", 1);
  EXPECT_NE(yolo11::engine::tune_malloc().find("defaults kept"), std::string::npos);
  unsetenv("YOLO11_MALLOC_DEFAULTS");
  setenv("GLIBC_TUNABLES", "glibc.malloc.arena_max=2", 1);
  EXPECT_NE(yolo11::engine::tune_malloc().find("left as given"), std::string::npos);
  unsetenv("GLIBC_TUNABLES");
}
