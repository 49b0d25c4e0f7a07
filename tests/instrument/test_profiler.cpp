// Profiler: stage timing, windows every log_every steps, epoch table, breakdown.csv, summary.json, level off.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>

#include "golden.h"
#include "yolo11/instrument/profiler.h"
#include "yolo11/io/file.h"

namespace yolo11::instrument {
namespace {

using namespace std::chrono_literals;

ProfilerOptions quiet(const std::string& dir, Level level = Level::basic, int64_t log_every = 2) {
  ProfilerOptions o;
  o.level = level;
  o.log_every = log_every;
  o.log_lines = false;
  o.run_dir = dir;
  o.setting.workers = 2;
  o.setting.cores = 16;
  o.setting.cache = yolo11::core::CacheMode::off;
  o.setting.device = "cpu";
  return o;
}

// A step whose dataloader wait is `wait` and whose other stages take ~1 ms each.
void step(Profiler& p, int64_t i, std::chrono::microseconds wait) {
  p.begin_step(i);
  {
    auto s = p.stage("dataloader");
    std::this_thread::sleep_for(wait);
  }
  for (const char* n : {"h2d", "forward", "loss", "backward", "optimizer", "ema"}) {
    auto s = p.stage(n);
    std::this_thread::sleep_for(1ms);
  }
  p.end_step(16);
}

std::vector<std::string> lines_of(const std::string& path) {
  std::istringstream in(io::read_file(path));
  std::vector<std::string> out;
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

TEST(Profiler, InvalidOptionsThrow) {
  ProfilerOptions o = quiet("");
  o.log_every = 0;
  EXPECT_THROW(Profiler{o}, std::runtime_error);
  o = quiet("");
  o.trace_steps = std::make_pair<int64_t, int64_t>(5, 5);
  EXPECT_THROW(Profiler{o}, std::runtime_error);
}

TEST(Profiler, WindowLineEveryLogEverySteps) {
  Profiler p(quiet(""));
  p.begin_epoch(0);
  std::vector<bool> got;
  for (int64_t i = 0; i < 5; ++i) {
    step(p, i, 100us);
    got.push_back(p.take_window_line().has_value());
  }
  EXPECT_EQ(got, (std::vector<bool>{false, true, false, true, false}));
  p.end_epoch();  // flushes the partial third window (step 4)
  const auto line = p.take_window_line();
  ASSERT_TRUE(line.has_value());
  EXPECT_EQ(p.last_window().steps, 1);
  EXPECT_EQ(p.last_window().first_step, 4);
  EXPECT_NE(line->find("dataloader: "), std::string::npos);
  EXPECT_NE(line->find("img/s, data-wait "), std::string::npos);
  EXPECT_NE(line->find("GPU n/a"), std::string::npos);
}

// Issue 15: the first steps (primitive creation) are their own window, measured and kept out of everything else.
TEST(Profiler, WarmupStepsFormTheirOwnWindowKeptOutOfTablesSummaryAndDiagnosis) {
  const std::string dir = test::scratch_dir("instrument_warmup");
  ProfilerOptions o = quiet(dir);
  o.warmup_steps = 2;
  {
    Profiler p(o);
    p.begin_epoch(0);
    for (int64_t i = 0; i < 2; ++i) step(p, i, 40ms);  // slow, data-bound warm-up steps
    EXPECT_FALSE(p.take_window_line().has_value());
    for (int64_t i = 2; i < 6; ++i) step(p, i, 100us);
    const std::string table = p.end_epoch();
    EXPECT_NE(table.find("epoch 1 (steps 2-5)"), std::string::npos) << table;  // counted from 1
    const auto run = p.run_summary();
    EXPECT_EQ(run.steps, 4);
    EXPECT_EQ(run.first_step, 2);
    EXPECT_LT(run.step.max, 0.035);  // no warm-up step in it
    EXPECT_NE(p.diagnose().bottleneck, Bottleneck::data) << p.diagnose().to_string();
    p.finish();
  }
  const auto j = nlohmann::json::parse(io::read_file(dir + "/summary.json"));
  ASSERT_TRUE(j.contains("warmup")) << j.dump();
  EXPECT_EQ(j["warmup"]["steps"], 2);
  EXPECT_EQ(j["warmup"]["last_step"], 1);
  EXPECT_GT(j["warmup"]["ratio"].get<double>(), 3.0);  // 40 ms waits against ~7 ms steps
  EXPECT_EQ(j["run"]["steps"], 4);
  int warm_rows = 0;
  for (const auto& l : lines_of(dir + "/breakdown.csv")) warm_rows += l.rfind("warmup,0,0,1,2,", 0) == 0;
  EXPECT_GE(warm_rows, 2);  // its stages and its step row
}

TEST(Profiler, StageTimesFollowWallClockAndDiagnoseDataWait) {
  Profiler p(quiet("", Level::basic, 4));
  p.begin_epoch(0);
  for (int64_t i = 0; i < 4; ++i) step(p, i, 30ms);
  const WindowSummary& w = p.last_window();
  ASSERT_EQ(w.steps, 4);
  EXPECT_EQ(w.images, 64);
  const StageSummary* dl = w.find("dataloader");
  ASSERT_NE(dl, nullptr);
  EXPECT_GE(dl->mean, 0.030);
  EXPECT_LT(dl->mean, 0.150);  // generous: sleeps overshoot on a loaded machine
  EXPECT_GE(w.find("forward")->mean, 0.001);
  EXPECT_GE(w.step.mean, dl->mean + 6 * 0.001);
  double sum = 0;
  for (const auto& s : w.stages) sum += s.share;
  EXPECT_LE(sum, 1.0 + 1e-9);
  EXPECT_GT(sum, 0.9);  // the step is almost entirely inside stages
  EXPECT_NEAR(w.images_per_s, 64 / w.step.total, 1e-9);
  const Diagnosis d = p.diagnose();
  EXPECT_EQ(d.bottleneck, Bottleneck::data) << d.to_string();
  EXPECT_NE(d.advice.find("workers=2 on 16 cores"), std::string::npos) << d.advice;
}

TEST(Profiler, RepeatedStageInOneStepIsSummed) {
  Profiler p(quiet("", Level::basic, 1));
  p.begin_step(0);
  for (int k = 0; k < 3; ++k) {
    auto s = p.stage("forward");
    std::this_thread::sleep_for(2ms);
  }
  p.end_step(1);
  const StageSummary* f = p.last_window().find("forward");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->count, 1);
  EXPECT_GE(f->mean, 0.006);
}

TEST(Profiler, EpochTableCsvAndSummaryJson) {
  const std::string dir = test::scratch_dir("instrument_profiler_files");
  {
    Profiler p(quiet(dir));
    for (int64_t e = 0; e < 2; ++e) {
      p.begin_epoch(e);
      for (int64_t i = 0; i < 4; ++i) step(p, e * 4 + i, 500us);
      {
        auto s = p.stage("val");
        std::this_thread::sleep_for(3ms);
      }
      { auto s = p.stage("export"); }  // an unknown stage outside a step: reported per epoch
      const std::string table = p.end_epoch();
      EXPECT_NE(table.find("export"), std::string::npos) << table;
      EXPECT_NE(table.find("% of epoch"), std::string::npos) << table;
      EXPECT_EQ(table.find("checkpoint"), std::string::npos) << table;
      {
        auto s = p.stage("checkpoint");  // after the table: a "late" stage of this epoch
        std::this_thread::sleep_for(1ms);
      }
      EXPECT_NE(table.find("epoch " + std::to_string(e + 1) + " ("), std::string::npos) << table;  // from 1
      EXPECT_NE(table.find("% of step"), std::string::npos) << table;
      EXPECT_NE(table.find("val"), std::string::npos) << table;
      EXPECT_NE(table.find("diagnosis: "), std::string::npos) << table;
    }
    p.finish();
  }
  const auto csv = lines_of(dir + "/breakdown.csv");
  ASSERT_GE(csv.size(), 2u);
  EXPECT_EQ(csv[0].rfind("kind,epoch,first_step,last_step,steps,images,stage,count,mean_s,p50_s,p95_s,max_s,share", 0),
            0u);
  int window_step_rows = 0, epoch_step_rows = 0, val_rows = 0;
  for (const auto& l : csv) {
    window_step_rows += l.rfind("window,", 0) == 0 && l.find(",step,") != std::string::npos;
    epoch_step_rows += l.rfind("epoch,", 0) == 0 && l.find(",step,") != std::string::npos;
    val_rows += l.rfind("epoch,", 0) == 0 && l.find(",val,") != std::string::npos;
  }
  EXPECT_EQ(window_step_rows, 4);  // 2 epochs × 4 steps / log_every 2
  EXPECT_EQ(epoch_step_rows, 2);
  EXPECT_EQ(val_rows, 2);
  int late_rows = 0;
  for (const auto& l : csv) late_rows += l.rfind("epoch,", 0) == 0 && l.find(",checkpoint,") != std::string::npos;
  EXPECT_EQ(late_rows, 2);  // one per epoch, written when the epoch range closes

  const auto j = nlohmann::json::parse(io::read_file(dir + "/summary.json"));
  EXPECT_EQ(j["level"], "basic");
  EXPECT_EQ(j["run"]["steps"], 8);
  EXPECT_EQ(j["run"]["images"], 128);
  EXPECT_GT(j["run"]["images_per_s"].get<double>(), 0);
  EXPECT_EQ(j["epochs"].size(), 2u);
  for (const auto& e : j["epochs"]) {
    bool late = false;
    for (const auto& st : e["stages"]) late |= st["name"] == "checkpoint" && st.value("after_table", false);
    EXPECT_TRUE(late) << e.dump();
  }
  EXPECT_TRUE(j["run"]["diagnosis"].contains("bottleneck"));
  EXPECT_FALSE(j["nvml"].get<bool>() && j["run"]["gpu_util"].is_null());
  bool has_dl = false;
  for (const auto& s : j["run"]["stages"]) has_dl |= s["name"] == "dataloader";
  EXPECT_TRUE(has_dl);
}

TEST(Profiler, ResumedRunKeepsTheEarlierEpochsInSummaryJson) {
  const std::string dir = test::scratch_dir("instrument_profiler_resume");
  auto run_epochs = [&](int64_t from, int64_t to) {
    Profiler p(quiet(dir));
    for (int64_t e = from; e < to; ++e) {
      p.begin_epoch(e);
      for (int64_t i = 0; i < 2; ++i) step(p, e * 2 + i, 100us);
      p.end_epoch();
    }
    p.finish();
  };
  run_epochs(0, 2);  // the first process, killed after epoch 1 (0-based) in real life
  run_epochs(2, 3);  // the resumed process
  const auto j = nlohmann::json::parse(io::read_file(dir + "/summary.json"));
  ASSERT_EQ(j["epochs"].size(), 3u) << j["epochs"].dump();
  for (int64_t e = 0; e < 3; ++e) EXPECT_EQ(j["epochs"][e]["epoch"], e);
  EXPECT_EQ(j["resumed_at_epoch"], 2);
  EXPECT_EQ(j["run"]["steps"], 2);  // "run" is the resumed process's own summary
  // A fresh run over the same epochs replaces them instead of duplicating.
  run_epochs(0, 1);
  EXPECT_EQ(nlohmann::json::parse(io::read_file(dir + "/summary.json"))["epochs"].size(), 1u);
}

TEST(Profiler, LevelOffCostsNothingAndWritesNothing) {
  const std::string dir = test::scratch_dir("instrument_profiler_off");
  {
    Profiler p(quiet(dir, Level::off, 1));
    EXPECT_FALSE(p.enabled());
    p.begin_epoch(0);
    step(p, 0, 10us);
    EXPECT_FALSE(p.take_window_line().has_value());
    EXPECT_TRUE(p.end_epoch().empty());
    EXPECT_EQ(p.diagnose().bottleneck, Bottleneck::balanced);
    p.finish();
  }
  EXPECT_TRUE(std::filesystem::is_empty(dir));
}

}  // namespace
}  // namespace yolo11::instrument
