// NVTX ranges without a GPU: the test injection library records every push/pop/start/end, and the stage
// names must come out in exactly the nesting a training step produces.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>

#include <string>
#include <thread>
#include <vector>

#include "nvtx_recording.h"
#include "yolo11/instrument/profiler.h"
#include "yolo11/instrument/range.h"
#include "yolo11_test_config.h"

YOLO11_NVTX_INJECT_AT_STARTUP();

namespace yolo11::instrument {
namespace {

using test::nvtx_recording;
using test::nvtx_sequence;

void require_injection() {
#ifndef YOLO11_HAS_NVTX
  GTEST_SKIP() << "NVTX3 headers were not found at configure time: ranges are compiled out";
#endif
  // NVTX loads the injection at its first call in the process.
  { ScopedRange warmup("warmup"); }
  ASSERT_NE(test::nvtx_injection_handle(), nullptr)
      << "NVTX did not load the injection library from NVTX_INJECTION64_PATH; was it built "
         "(target yolo11_nvtx_inject) and is the variable set before the first NVTX call?";
}

void two_training_steps(Profiler& prof) {
  prof.begin_epoch(0);
  for (int64_t step = 0; step < 2; ++step) {
    prof.begin_step(step);
    for (const char* name : kStepStages) {
      auto s = prof.stage(name);
    }
    prof.end_step(4);
  }
  { auto s = prof.stage("val"); }
  {
    auto s = prof.stage("log");  // as the trainer does: the epoch table is taken inside the "log" stage
    prof.end_epoch();
  }
  { auto s = prof.stage("checkpoint"); }
  prof.finish();  // closes the "epoch 0" range
}

TEST(Nvtx, TwoTrainingStepsGiveTheExpectedNestedSequence) {
  require_injection();
  if (testing::Test::IsSkipped() || testing::Test::HasFatalFailure()) return;
  ProfilerOptions o;
  o.level = Level::basic;
  o.log_every = 1;
  o.log_lines = false;
  Profiler prof(o);
  test::nvtx_clear_recording();
  two_training_steps(prof);
  const auto records = nvtx_recording();

  const auto expected = test::expected_epoch_sequence(0, 0, 2);
  EXPECT_EQ(nvtx_sequence(records, test::this_thread_tid()), expected);
  // Everything is in domain "yolo11" (nothing leaked into the default domain).
  for (const auto& r : records) {
    if (r.kind != "name_thread") {
      EXPECT_EQ(r.domain, "yolo11") << r.kind << " " << r.message;
    }
  }
}

TEST(Nvtx, LoaderThreadRangesNestOnTheirOwnThread) {
  require_injection();
  if (testing::Test::IsSkipped() || testing::Test::HasFatalFailure()) return;
  set_ranges_enabled(true);
  test::nvtx_clear_recording();
  uint64_t worker_tid = 0;
  std::thread worker([&] {
    worker_tid = test::this_thread_tid();
    name_this_thread("loader 0");
    {
      ScopedRange load("load");
      { ScopedRange mosaic("mosaic"); }
      { ScopedRange augment("augment"); }
    }
    { ScopedRange collate("collate"); }
  });
  worker.join();
  const auto records = nvtx_recording();
  const std::vector<std::string> expected = {"+load",     "+mosaic",  "-mosaic",  "+augment",
                                             "-augment",  "-load",    "+collate", "-collate"};
  EXPECT_EQ(nvtx_sequence(records, worker_tid), expected);
  EXPECT_TRUE(nvtx_sequence(records, test::this_thread_tid()).empty());
  bool named = false;
  for (const auto& r : records) named |= r.kind == "name_thread" && r.message == "loader 0" && r.tid == worker_tid;
  EXPECT_TRUE(named) << "nvtxNameOsThread(\"loader 0\") not recorded for the worker thread";
}

TEST(Nvtx, NvtxOpsNestOperatorRangesInsideTheStageRanges) {
  require_injection();
  if (testing::Test::IsSkipped() || testing::Test::HasFatalFailure()) return;
  ProfilerOptions o;
  o.level = Level::basic;
  o.log_every = 10;
  o.log_lines = false;
  o.nvtx_ops = true;
  Profiler prof(o);
  test::nvtx_clear_recording();
  prof.begin_step(0);
  {
    auto s = prof.stage("forward");
    auto y = torch::relu(torch::ones({4}));
  }
  prof.end_step(1);
  prof.finish();  // removes the observer: no operator range after this
  (void)torch::relu(torch::ones({4}));
  const auto seq = nvtx_sequence(nvtx_recording(), test::this_thread_tid());
  // +step 0, +forward, then operator ranges (aten::ones ... aten::relu ...), -forward, -step 0
  ASSERT_GE(seq.size(), 6u);
  EXPECT_EQ(seq[0], "+step 0");
  EXPECT_EQ(seq[1], "+forward");
  EXPECT_EQ(seq[seq.size() - 2], "-forward");
  EXPECT_EQ(seq.back(), "-step 0");
  const std::vector<std::string> inner(seq.begin() + 2, seq.end() - 2);
  EXPECT_NE(std::find(inner.begin(), inner.end(), "+aten::relu"), inner.end()) << ::testing::PrintToString(seq);
  EXPECT_NE(std::find(inner.begin(), inner.end(), "+aten::ones"), inner.end()) << ::testing::PrintToString(seq);
  int depth = 0;  // operator ranges balance inside forward
  for (const auto& s : inner) {
    depth += s[0] == '+' ? 1 : -1;
    EXPECT_GE(depth, 0);
  }
  EXPECT_EQ(depth, 0);
}

TEST(Nvtx, LevelOffEmitsNoRanges) {
  require_injection();
  if (testing::Test::IsSkipped() || testing::Test::HasFatalFailure()) return;
  ProfilerOptions o;
  o.level = Level::off;
  Profiler prof(o);
  test::nvtx_clear_recording();
  two_training_steps(prof);
  { ScopedRange r("load"); }
  EXPECT_TRUE(nvtx_recording().empty());
  set_ranges_enabled(true);
}

}  // namespace
}  // namespace yolo11::instrument
