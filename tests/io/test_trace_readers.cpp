// A real reader of the traces a run writes (test-only; tools/readers.sh): Holistic Trace Analysis, the trace analysis
// library for PyTorch profiler traces, loads trace.json (instrument=full, trace_steps) and ops_trace.json
// (profile_ops) of a coco8 run with its own parser and finds each traced step's stages and the operators.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "golden.h"
#include "process.h"
#include "yolo11/config/train_config.h"
#include "yolo11/engine/trainer.h"
#include "yolo11_test_config.h"

namespace fs = std::filesystem;
using namespace yolo11;

namespace {

/// HTA's view of the one trace in a folder of its own (it loads every trace file of trace_dir as one rank each).
nlohmann::json hta_read(const std::string& py, const std::string& trace, const std::string& scratch) {
  const std::string dir = scratch + "/" + fs::path(trace).stem().string();
  fs::create_directories(dir);
  fs::copy_file(trace, dir + "/" + fs::path(trace).filename().string());
  const std::string out = dir + ".json", log = dir + ".log";
  const std::string script = std::string(YOLO11_TEST_SOURCE_DIR) + "/tests/io/read_with_hta.py";
  const int rc = test::run(py, {script, dir, out}, log);
  if (rc != 0) ADD_FAILURE() << "HTA on " << trace << ": exit " << rc << "\n" << test::read_text(log);
  return rc == 0 ? nlohmann::json::parse(test::read_text(out)) : nlohmann::json::object();
}

}  // namespace

TEST(TraceReaders, HolisticTraceAnalysisLoadsTraceAndOpsTrace) {
  std::string why;
  const std::string py = test::readers_python("hta.trace_analysis", why);
  if (py.empty()) GTEST_SKIP() << why;
  const std::string project = test::scratch_dir("hta");
  auto args = test::coco8_train_args(project, "run", 1, 1);  // 4 steps; nbs=1: an optimizer step (and EMA) each step
  for (const char* a : {"nbs=1", "instrument=full", "log_every=1", "instrument_warmup=0", "trace_steps=0:3",
                        "profile_ops=2:3"})
    args.emplace_back(a);
  const auto summary = engine::Trainer(config::TrainConfig::load("", args)).train();
  ASSERT_EQ(summary.epochs_done, 1);

  const auto t = hta_read(py, summary.run_dir + "/trace.json", project);
  ASSERT_TRUE(t.contains("names")) << t;
  EXPECT_EQ(t["ranks"], nlohmann::json::array({0}));
  const auto& names = t["names"];
  // trace_steps=0:3 writes steps 0, 1 and 2; HTA leaves out a trace's last profiler step by default (it is often
  // cut short in PyTorch's traces), so it keeps steps 0 and 1, each with every stage once.
  for (int s = 0; s <= 1; ++s)
    EXPECT_EQ(names.value("ProfilerStep#" + std::to_string(s), 0), 1) << "step " << s << " in " << names;
  for (const char* stage : {"dataloader", "h2d", "forward", "loss", "backward", "optimizer", "ema"})
    EXPECT_EQ(names.value(stage, 0), 2) << stage << " in " << names;
  EXPECT_GE(t["min_dur"].get<double>(), 0.0);

  const auto o = hta_read(py, summary.run_dir + "/ops_trace.json", project);
  ASSERT_TRUE(o.contains("names")) << o;
  EXPECT_GT(o["events"].get<int>(), 100);
  EXPECT_GT(o["names"].value("aten::convolution", 0), 0) << o["names"];
  EXPECT_GT(o["names"].value("autograd::engine::evaluate_function: ConvolutionBackward0", 0), 0);
}
