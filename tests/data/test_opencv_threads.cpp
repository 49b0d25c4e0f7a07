// disable_opencv_threads (issue 10, the SIGSEGV at start): with OpenCV's TBB arena already running, many threads
// asking at the same moment must be safe. Each trial is a fresh forked process (the arena state is process-wide).
// Before the fix the loader workers called cv::setNumThreads(0) themselves; the same trial with that call crashed
// 6-10 times in 300.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>

#include <atomic>
#include <thread>
#include <vector>

#include "yolo11/data/opencv_threads.h"

TEST(OpenCvThreads, ConcurrentFirstCallsBesideARunningArenaAreSafe) {
  constexpr int kTrials = 100, kThreads = 8;
  int crashed = 0;
  for (int trial = 0; trial < kTrials; ++trial) {
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      cv::Mat a(720, 1280, CV_8UC3, cv::Scalar(1, 2, 3)), b;
      cv::resize(a, b, cv::Size(640, 360));  // a parallel_for_: OpenCV's arena is initialized
      std::atomic<int> ready{0};
      std::vector<std::thread> ts;
      for (int i = 0; i < kThreads; ++i)
        ts.emplace_back([&] {
          ++ready;
          while (ready.load() < kThreads) std::this_thread::yield();
          yolo11::data::disable_opencv_threads();
          cv::Mat c;
          cv::resize(a, c, cv::Size(320, 180));
        });
      for (auto& t : ts) t.join();
      ::_exit(0);
    }
    int st = 0;
    ASSERT_EQ(::waitpid(pid, &st, 0), pid);
    if (WIFSIGNALED(st)) ++crashed;
    else EXPECT_EQ(WEXITSTATUS(st), 0);
  }
  EXPECT_EQ(crashed, 0) << crashed << " of " << kTrials << " trials crashed";
}
