// TensorBoard logger (issue 11): a 2-epoch coco8 run with tensorboard=true writes one event file that an independent
// reader (tests/io/read_tfevents.py: hand-written TFRecord framing and CRC-32C, Python's protobuf package on the same
// .proto compiled by protoc at test time) decodes, with the tags, steps and values the run logged (results.csv).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "golden.h"
#include "process.h"
#include "yolo11/config/train_config.h"
#include "yolo11/engine/results.h"
#include "yolo11/engine/trainer.h"
#include "yolo11/io/tensorboard.h"
#include "yolo11_test_config.h"

namespace fs = std::filesystem;
using namespace yolo11;

namespace {

/// A python3 that has the protobuf package (Debian: python3-protobuf), or "" (the test then fails, saying so).
std::string python_with_protobuf(const std::string& log) {
  for (const std::string py : {"/usr/bin/python3", "python3"})
    if (test::run("/bin/sh", {"-c", py + " -c 'import google.protobuf'"}, log) == 0) return py;
  return "";
}

/// Runs the independent reader on `events`; its JSON, or a failure with its output.
::testing::AssertionResult read_events(const std::string& events, const std::string& scratch, nlohmann::json& out) {
  const std::string log = scratch + "/reader.log", json = scratch + "/events.json";
  const std::string py = python_with_protobuf(log);
  if (py.empty()) return ::testing::AssertionFailure() << "no python3 with google.protobuf (apt-get install python3-protobuf)";
  const std::string script = std::string(YOLO11_TEST_SOURCE_DIR) + "/tests/io/read_tfevents.py";
  const std::string proto = std::string(YOLO11_TEST_SOURCE_DIR) + "/src/io/tensorboard.proto";
  const int rc = test::run("/bin/sh", {"-c", py + " '" + script + "' '" + events + "' '" + proto + "' '" + json + "'"}, log);
  if (rc != 0) return ::testing::AssertionFailure() << "reader exit " << rc << ":\n" << test::read_text(log);
  out = nlohmann::json::parse(test::read_text(json));
  return ::testing::AssertionSuccess();
}

bool near(double got, double want, double rtol) { return std::abs(got - want) <= 1e-7 + rtol * std::abs(want); }

}  // namespace

TEST(TensorBoard, Crc32cMatchesTheCastagnoliCheckValue) {
  const char* s = "123456789";
  EXPECT_EQ(io::crc32c(s, 9), 0xE3069283U);  // the CRC-32C check value (RFC 3720)
  const uint32_t c = 0xE3069283U;
  EXPECT_EQ(io::masked_crc32c(s, 9), ((c >> 15) | (c << 17)) + 0xa282ead8U);
}

TEST(TensorBoard, ACoco8RunWritesEventsAnIndependentReaderDecodes) {
  const std::string project = test::scratch_dir("tensorboard_run");
  auto args = test::coco8_train_args(project, "run", 2, 2);
  for (const char* a : {"tensorboard=true", "instrument=basic", "log_every=1", "instrument_warmup=0"}) args.emplace_back(a);
  engine::Trainer trainer(config::TrainConfig::load("", args));
  if (!io::tensorboard_available()) {  // a build without protobuf: the clear error instead
    try {
      trainer.train();
      FAIL() << "tensorboard=true trained without protobuf";
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find("libprotobuf-dev"), std::string::npos) << e.what();
    }
    return;
  }
  const double t0 = static_cast<double>(std::time(nullptr));
  const auto summary = trainer.train();
  ASSERT_EQ(summary.epochs_done, 2);

  // One file, named events.out.tfevents.<unix seconds>.<hostname>.
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(summary.run_dir))
    if (e.path().filename().string().rfind("events.out.tfevents.", 0) == 0) files.push_back(e.path());
  ASSERT_EQ(files.size(), 1u);
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  const std::string name = files[0].filename().string();
  const std::string stamp = name.substr(20, name.find('.', 20) - 20);
  EXPECT_EQ(name, "events.out.tfevents." + stamp + "." + host);
  EXPECT_NEAR(std::stod(stamp), t0, 120.0);

  nlohmann::json j;
  ASSERT_TRUE(read_events(files[0].string(), project, j));
  const auto& ev = j["events"];
  ASSERT_GE(ev.size(), 2u);
  EXPECT_EQ(ev[0]["file_version"], "brain.Event:2");
  EXPECT_EQ(ev[0]["step"], 0);

  // tag → step → value; every summary event holds one value, and no (tag, step) repeats.
  std::map<std::string, std::map<int64_t, double>> s;
  double last_wall = 0;
  for (size_t i = 1; i < ev.size(); ++i) {
    ASSERT_TRUE(ev[i].contains("values")) << "event " << i;
    ASSERT_EQ(ev[i]["values"].size(), 1u) << "event " << i;
    const auto& v = ev[i]["values"][0];
    const int64_t step = ev[i]["step"];
    EXPECT_TRUE(s[v["tag"]].emplace(step, v["simple_value"].get<double>()).second) << v["tag"] << " step " << step;
    const double wall = ev[i]["wall_time"];
    EXPECT_GE(wall, t0 - 1);
    EXPECT_GE(wall, last_wall - 1.0) << "wall_time goes back at event " << i;  // windows are written after their steps
    last_wall = wall;
  }

  // Epoch tags (Ultralytics' names, step = epoch + 1) equal results.csv.
  const auto csv = engine::ResultsCsv::read(summary.run_dir + "/results.csv");
  const auto& cols = engine::ResultsCsv::columns();
  ASSERT_EQ(csv.rows().size(), 2u);
  for (size_t c = 2; c < cols.size(); ++c) {  // all but epoch, time
    ASSERT_EQ(s.count(cols[c]), 1u) << cols[c];
    ASSERT_EQ(s[cols[c]].size(), 2u) << cols[c];
    for (int64_t e = 0; e < 2; ++e)
      EXPECT_TRUE(near(s[cols[c]].at(e + 1), csv.rows()[static_cast<size_t>(e)][c], 1e-5))
          << cols[c] << " epoch " << e + 1 << ": " << s[cols[c]].at(e + 1) << " vs " << csv.rows()[static_cast<size_t>(e)][c];
  }

  // Per-step losses and lrs at global steps 0..3 (2 batches per epoch); each epoch's mean step loss is its row's.
  for (const char* k : {"box", "cls", "dfl"}) {
    const std::string tag = std::string("step/") + k + "_loss";
    ASSERT_EQ(s[tag].size(), 4u) << tag;
    for (int64_t e = 0; e < 2; ++e) {
      const double mean = (s[tag].at(2 * e) + s[tag].at(2 * e + 1)) / 2;
      EXPECT_TRUE(near(mean, s[std::string("train/") + k + "_loss"].at(e + 1), 1e-4)) << tag << " epoch " << e + 1;
    }
  }
  for (int g = 0; g < 3; ++g) {  // the lr of an epoch's last step is the one its results.csv row holds
    const std::string tag = "step/lr_pg" + std::to_string(g), row = "lr/pg" + std::to_string(g);
    ASSERT_EQ(s[tag].size(), 4u) << tag;
    for (const auto& [step, lr] : s[tag]) EXPECT_GE(lr, 0) << tag << " step " << step;
    for (int64_t e = 0; e < 2; ++e) EXPECT_TRUE(near(s[tag].at(2 * e + 1), s[row].at(e + 1), 1e-5)) << tag << " epoch " << e + 1;
  }

  // Profiler windows (log_every=1: one per step): step time, every stage's time and share, img/s, data-wait.
  std::vector<std::string> window_tags = {"profiler/step_s", "profiler/img_per_s", "profiler/data_wait"};
  for (const char* st : {"dataloader", "h2d", "forward", "loss", "backward", "optimizer", "ema"}) {
    window_tags.push_back(std::string("profiler/") + st + "_s");
    window_tags.push_back(std::string("profiler/") + st + "_share");
  }
  for (const auto& t : window_tags) {
    ASSERT_EQ(s[t].size(), 4u) << t;
    for (const auto& [step, v] : s[t]) EXPECT_GE(v, 0) << t << " step " << step;
  }
  for (int64_t step = 0; step < 4; ++step) {
    double shares = 0;
    for (const auto& t : window_tags)
      if (t.size() > 6 && t.compare(t.size() - 6, 6, "_share") == 0) shares += s[t].at(step);
    EXPECT_LE(shares, 1.01) << "stage shares of step " << step << " add up past the step";
    EXPECT_GT(s["profiler/step_s"].at(step), 0);
    EXPECT_DOUBLE_EQ(s["profiler/data_wait"].at(step), s["profiler/dataloader_share"].at(step));
  }
  // MFU as the console shows it: present where the window lines give one (a measured CPU peak), absent with "n/a".
  const std::string log = test::read_text(project + "/run/train.log");
  const bool console_mfu = log.find("MFU ") != std::string::npos && log.find("MFU n/a") == std::string::npos;
  if (console_mfu) {
    ASSERT_EQ(s["profiler/mfu"].size(), 4u) << log;
    for (const auto& [step, v] : s["profiler/mfu"]) EXPECT_TRUE(v > 0 && v <= 1) << "step " << step << ": " << v;
  } else {
    EXPECT_EQ(s.count("profiler/mfu"), 0u) << "the console shows no MFU, nor may the events";
  }

  // The reader checks CRCs: one flipped byte inside a record's data is reported.
  std::string bytes = test::read_text(files[0].string());
  bytes[bytes.size() / 2] = static_cast<char>(bytes[bytes.size() / 2] ^ 0x5A);
  const std::string bad = project + "/corrupt.tfevents";
  std::ofstream(bad, std::ios::binary) << bytes;
  nlohmann::json ignored;
  const auto r = read_events(bad, project, ignored);
  ASSERT_FALSE(r);
  EXPECT_NE(std::string(r.message()).find("crc mismatch"), std::string::npos) << r.message();
}

// TensorBoard's own reader (the `tensorboard` package's EventAccumulator, what `tensorboard --logdir` runs; installed
// by tools/readers.sh, test-only) finds every documented tag of a run (README "TensorBoard and Prometheus"):
// Ultralytics' epoch tags at step epoch + 1 with results.csv's values, the per-step losses and lrs, and every profiler
// window's stage times and shares, img/s and data-wait.
TEST(TensorBoard, TheTensorboardPackageReadsEveryDocumentedTag) {
  if (!io::tensorboard_available()) GTEST_SKIP() << "built without protobuf: tensorboard=true is a clear error here";
  std::string why;
  const std::string py = test::readers_python("tensorboard.backend.event_processing.event_accumulator", why);
  if (py.empty()) GTEST_SKIP() << why;
  const std::string project = test::scratch_dir("tensorboard_package");
  auto args = test::coco8_train_args(project, "run", 2, 2);
  for (const char* a : {"tensorboard=true", "instrument=basic", "log_every=1", "instrument_warmup=0"}) args.emplace_back(a);
  const auto summary = engine::Trainer(config::TrainConfig::load("", args)).train();
  ASSERT_EQ(summary.epochs_done, 2);
  std::string events;
  for (const auto& e : fs::directory_iterator(summary.run_dir))
    if (e.path().filename().string().rfind("events.out.tfevents.", 0) == 0) events = e.path().string();
  ASSERT_FALSE(events.empty());
  const std::string json = project + "/tb.json", log = project + "/tb.log";
  const std::string script = std::string(YOLO11_TEST_SOURCE_DIR) + "/tests/io/read_with_tensorboard.py";
  ASSERT_EQ(test::run(py, {script, events, json}, log), 0) << test::read_text(log);
  std::map<std::string, std::map<int64_t, double>> s;
  const auto read = nlohmann::json::parse(test::read_text(json));
  for (const auto& [tag, points] : read["tags"].items())
    for (const auto& p : points) s[tag][p[0].get<int64_t>()] = p[1].get<double>();

  const auto csv = engine::ResultsCsv::read(summary.run_dir + "/results.csv");
  const auto& cols = engine::ResultsCsv::columns();
  ASSERT_EQ(csv.rows().size(), 2u);
  for (size_t c = 2; c < cols.size(); ++c) {  // every results.csv column but epoch and time, at steps 1 and 2
    ASSERT_EQ(s[cols[c]].size(), 2u) << cols[c];
    for (int64_t e = 0; e < 2; ++e)
      EXPECT_TRUE(near(s[cols[c]].at(e + 1), csv.rows()[static_cast<size_t>(e)][c], 1e-5)) << cols[c] << " epoch " << e + 1;
  }
  std::vector<std::string> per_step = {"step/box_loss", "step/cls_loss", "step/dfl_loss", "step/lr_pg0", "step/lr_pg1",
                                       "step/lr_pg2", "profiler/step_s", "profiler/img_per_s", "profiler/data_wait"};
  for (const char* st : {"dataloader", "h2d", "forward", "loss", "backward", "optimizer", "ema"}) {
    per_step.push_back(std::string("profiler/") + st + "_s");
    per_step.push_back(std::string("profiler/") + st + "_share");
  }
  for (const auto& t : per_step) {  // coco8 at batch 2: 2 steps an epoch, global steps 0..3
    ASSERT_EQ(s[t].size(), 4u) << t;
    for (int64_t step = 0; step < 4; ++step) EXPECT_EQ(s[t].count(step), 1u) << t << " step " << step;
  }
  for (int64_t step = 0; step < 4; ++step) EXPECT_GT(s["profiler/step_s"].at(step), 0) << step;
}
