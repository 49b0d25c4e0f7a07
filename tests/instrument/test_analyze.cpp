// yolo11-analyze's logic: a run's breakdown.csv and its train.log window lines give the same per-stage
// picture and diagnosis, with the advice context read from summary.json.
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "golden.h"
#include "yolo11/instrument/analyze.h"
#include "yolo11/instrument/profiler.h"
#include "yolo11/io/file.h"

namespace yolo11::instrument {
namespace {

using namespace std::chrono_literals;

// A data-bound run: 8 steps, dataloader 12 ms, six 1 ms compute stages; window lines go to train.log.
std::string make_run(const std::string& name) {
  const std::string dir = test::scratch_dir(name);
  ProfilerOptions o;
  o.log_every = 4;
  o.log_lines = false;
  o.run_dir = dir;
  o.setting.workers = 2;
  o.setting.cores = 16;
  o.setting.cache = yolo11::core::CacheMode::off;
  o.setting.device = "0";
  std::string log;
  Profiler p(o);
  p.begin_epoch(0);
  for (int64_t i = 0; i < 8; ++i) {
    p.begin_step(i);
    {
      auto s = p.stage("dataloader");
      std::this_thread::sleep_for(12ms);
    }
    for (const char* n : {"h2d", "forward", "loss", "backward", "optimizer", "ema"}) {
      auto s = p.stage(n);
      std::this_thread::sleep_for(1ms);
    }
    p.end_step(16);
    if (auto l = p.take_window_line()) log += "[2026-11-30 06:00:00.000] [info] " + *l + "\n";
    log += "[2026-11-30 06:00:00.000] [info] epoch 1/1 box_loss 1.234\n";  // unrelated lines are ignored
  }
  { auto s = p.stage("val"); }
  p.end_epoch();
  p.finish();
  io::write_file_atomic(dir + "/train.log", log);
  return dir;
}

TEST(Analyze, BreakdownCsvGivesStagesAndDataBoundDiagnosis) {
  const std::string dir = make_run("instrument_analyze_csv");
  const AnalyzeResult r = analyze_run(dir);
  EXPECT_EQ(r.source, dir + "/breakdown.csv");
  ASSERT_EQ(r.windows.size(), 2u);
  EXPECT_EQ(r.windows[0].first_step, 0);
  EXPECT_EQ(r.windows[1].last_step, 7);
  EXPECT_EQ(r.overall.steps, 8);
  EXPECT_EQ(r.overall.images, 128);
  const StageSummary* dl = r.overall.find("dataloader");
  ASSERT_NE(dl, nullptr);
  EXPECT_EQ(dl->count, 8);
  EXPECT_GE(dl->mean, 0.012);
  EXPECT_GT(dl->share, 0.4);
  EXPECT_EQ(r.context.workers, 2);
  EXPECT_EQ(r.context.cores, 16);
  EXPECT_EQ(r.diagnosis.bottleneck, Bottleneck::data) << r.diagnosis.to_string();
  EXPECT_NE(r.report.find("workers=2 on 16 cores"), std::string::npos) << r.report;
  EXPECT_NE(r.report.find("val"), std::string::npos) << r.report;  // epoch-level stage from the epoch rows
}

TEST(Analyze, TrainLogAgreesWithBreakdownCsv) {
  const std::string dir = make_run("instrument_analyze_log");
  const AnalyzeResult from_csv = analyze_run(dir + "/breakdown.csv");
  const AnalyzeResult from_log = analyze_run(dir + "/train.log");
  ASSERT_EQ(from_log.windows.size(), 2u);
  EXPECT_EQ(from_log.diagnosis.bottleneck, from_csv.diagnosis.bottleneck);
  for (const char* n : kStepStages) {
    const StageSummary* a = from_csv.overall.find(n);
    const StageSummary* b = from_log.overall.find(n);
    ASSERT_TRUE(a && b) << n;
    EXPECT_NEAR(a->share, b->share, 0.01) << n;            // log times have three significant digits
    EXPECT_NEAR(a->mean, b->mean, 0.01 * a->mean) << n;
  }
  EXPECT_NEAR(from_log.overall.step.mean, from_csv.overall.step.mean, 0.001);
}

// yolo11-analyze and yolo11-sweep --verify repeat the trainer's own run diagnosis: the run's percentiles come from
// summary.json (exact per-step values) when it covers the same steps as the windows, not from window percentiles.
TEST(Analyze, TheRunSummaryGivesTheExactPercentilesAndTheTrainersOwnDiagnosis) {
  const std::string dir = make_run("instrument_analyze_summary");
  const auto run = read_summary_run(dir + "/summary.json");
  ASSERT_TRUE(run.has_value());
  const auto summary = nlohmann::json::parse(io::read_file(dir + "/summary.json"));
  const AnalyzeResult r = analyze_run(dir);
  EXPECT_EQ(r.overall_source, "summary.json");
  EXPECT_EQ(r.overall.first_step, 0);
  EXPECT_EQ(r.overall.last_step, 7);
  EXPECT_DOUBLE_EQ(r.overall.step.p50, summary["run"]["step"]["p50_s"].get<double>());
  const StageSummary* dl = r.overall.find("dataloader");
  ASSERT_NE(dl, nullptr);
  EXPECT_DOUBLE_EQ(dl->p95, summary["run"]["stages"][0]["p95_s"].get<double>());
  EXPECT_EQ(r.overall.find("val"), nullptr);  // epoch-level stages stay out of the step window
  EXPECT_EQ(r.diagnosis.to_string(), summary["diagnosis"].get<std::string>());
  EXPECT_NE(r.report.find("run percentiles from summary.json"), std::string::npos) << r.report;

  // A summary of other steps (a log of another run copied in, a resumed run's partial record) is not used.
  auto other = summary;
  other["run"]["first_step"] = 100;
  io::write_file_atomic(dir + "/summary.json", other.dump());
  EXPECT_EQ(analyze_run(dir).overall_source, "windows");
  io::write_file_atomic(dir + "/summary.json", "{not json");
  EXPECT_FALSE(read_summary_run(dir + "/summary.json").has_value());
  EXPECT_EQ(analyze_run(dir).overall_source, "windows");
}

TEST(Analyze, ClearErrorsForMissingOrForeignInput) {
  const std::string dir = test::scratch_dir("instrument_analyze_bad");
  EXPECT_THROW(analyze_run(dir + "/nope"), std::runtime_error);
  EXPECT_THROW(analyze_run(dir), std::runtime_error);  // neither breakdown.csv nor train.log
  io::write_file_atomic(dir + "/train.log", "epoch 1 loss 2.0\n");
  EXPECT_THROW(analyze_run(dir), std::runtime_error);  // no window lines
  io::write_file_atomic(dir + "/other.csv", "a,b,c\n1,2,3\n");
  try {
    read_breakdown_csv(dir + "/other.csv");
    FAIL() << "expected a throw";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("column 'kind' missing"), std::string::npos) << e.what();
  }
}

}  // namespace

// A run that ended within its warm-up steps (instrument_warmup) has no steady window: analyze reads the warm-up
// window instead and says so, from breakdown.csv and from the log alike.
TEST(Analyze, ARunShorterThanItsWarmupIsAnalyzedFromTheWarmupWindowWithANote) {
  const std::string dir = test::scratch_dir("analyze_warmup_only");
  {
    ProfilerOptions o;
    o.level = Level::basic;
    o.log_every = 2;
    o.run_dir = dir;
    o.warmup_steps = 3;
    Profiler p(o);
    p.begin_epoch(0);
    for (int64_t i = 0; i < 2; ++i) {
      p.begin_step(i);
      { auto s = p.stage("dataloader"); }
      { auto s = p.stage("forward"); }
      p.end_step(4);
    }
    p.end_epoch();
    p.finish();
  }
  const auto r = analyze_run(dir);
  EXPECT_TRUE(r.warmup_only);
  ASSERT_EQ(r.windows.size(), 1u);
  EXPECT_EQ(r.windows[0].steps, 2);
  EXPECT_NE(r.report.find("note: the run ended within its warm-up steps"), std::string::npos) << r.report;
  // no verdict, as the trainer's own run diagnosis line: only what the warm-up steps would read as
  EXPECT_NE(r.report.find("diagnosis: no diagnosis: no step was measured outside the instrument warm-up"),
            std::string::npos) << r.report;
}

}  // namespace yolo11::instrument
