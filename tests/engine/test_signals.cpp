// SIGINT/SIGTERM handling of yolo11-train, driven as a user would (issue 10): the first signal stops the run after
// its current step, writes results.csv so far and summary.json with "interrupted", leaves no temp file and exits
// 128 + signal; the run resumes from its last checkpoint; a second signal exits at once.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "golden.h"
#include "process.h"
#include "yolo11/engine/checkpoint.h"

namespace fs = std::filesystem;
using yolo11::test::count_rows;
using yolo11::test::read_text;
using yolo11::test::wait_exit;

namespace {

std::string signals_train_binary() { return yolo11::test::exe("yolo11-train"); }

/// Starts a long coco8 run and waits until it has finished `rows` epochs.
pid_t start_and_wait_for_epochs(const std::vector<std::string>& args, const std::string& log, const fs::path& csv,
                                size_t rows) {
  const pid_t pid = yolo11::test::spawn(signals_train_binary(), args, log);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(3);
  while (count_rows(csv) < rows && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  return pid;
}

std::vector<std::string> temp_files_under(const fs::path& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.path().filename().string().find(".tmp.") != std::string::npos) out.push_back(e.path().string());
  return out;
}

/// A run stopped by `sig` exits 128 + sig and leaves a consistent run dir (*run_out).
void expect_graceful_stop(const std::string& tag, int sig, const std::string& instrument, fs::path* run_out) {
  const std::string project = yolo11::test::scratch_dir(tag);
  const std::string log = project + "/log.txt";
  auto args = yolo11::test::coco8_train_args(project, "run", 50);
  args.push_back("instrument=" + instrument);  // after the helper's instrument=off: the last value wins
  const fs::path run = fs::path(project) / "run";
  *run_out = run;
  const pid_t pid = start_and_wait_for_epochs(args, log, run / "results.csv", 1);
  ASSERT_EQ(kill(pid, sig), 0);
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(wait_exit(pid), 128 + sig) << read_text(log);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(30)) << "the stop took too long";

  const std::string name = sig == SIGINT ? "SIGINT" : "SIGTERM";
  EXPECT_NE(read_text(log).find(name + ": training stopped"), std::string::npos) << read_text(log);
  const auto summary = nlohmann::json::parse(read_text((run / "summary.json").string()));
  EXPECT_EQ(summary.value("interrupted", false), true);
  EXPECT_EQ(summary.value("signal", ""), name);
  const int64_t done = summary.value("epochs_done", int64_t{-1});
  EXPECT_GE(done, 1);
  EXPECT_EQ(static_cast<int64_t>(count_rows(run / "results.csv")), done);  // every finished epoch, no partial row
  if (instrument != "off") {
    EXPECT_TRUE(summary.contains("run")) << "the profiler's summary was replaced";
  }
  EXPECT_TRUE(temp_files_under(run).empty()) << temp_files_under(run).front();
  const auto ck = yolo11::engine::load_checkpoint((run / "weights").string());
  EXPECT_TRUE(ck.has_value() && ck->epoch + 1 == done) << "the last checkpoint is not the last finished epoch";
}

}  // namespace

TEST(Signals, SigintStopsAfterTheStepWritesWhatTheRunHasAndExits130) {
  ASSERT_TRUE(fs::exists(signals_train_binary())) << signals_train_binary() << " not built";
  fs::path run;
  expect_graceful_stop("sig_int", SIGINT, "off", &run);
  if (HasFatalFailure()) return;
  // It resumes from there: one more epoch, then a normal end.
  const auto ck = yolo11::engine::load_checkpoint((run / "weights").string());
  ASSERT_TRUE(ck.has_value());
  const std::string log = (run.parent_path() / "resume.txt").string();
  EXPECT_EQ(yolo11::test::run(signals_train_binary(), {"resume=" + run.string(), "epochs=" + std::to_string(ck->epoch + 2)}, log),
            0)
      << read_text(log);
  EXPECT_EQ(count_rows(run / "results.csv"), static_cast<size_t>(ck->epoch + 2));
}

TEST(Signals, SigtermStopsTheSameWayAndExits143) {
  ASSERT_TRUE(fs::exists(signals_train_binary())) << signals_train_binary() << " not built";
  fs::path run;
  expect_graceful_stop("sig_term", SIGTERM, "basic", &run);
}

TEST(Signals, ASecondSignalExitsAtOnce) {
  ASSERT_TRUE(fs::exists(signals_train_binary())) << signals_train_binary() << " not built";
  const std::string project = yolo11::test::scratch_dir("sig_twice");
  const std::string log = project + "/log.txt";
  const fs::path run = fs::path(project) / "run";
  // Two rows: the first epoch's checkpoint is written after its results.csv row, so only the second row proves
  // that a complete checkpoint exists before the signals arrive.
  const pid_t pid = start_and_wait_for_epochs(yolo11::test::coco8_train_args(project, "run", 50), log,
                                              run / "results.csv", 2);
  // Both signals pending while stopped (two different signals: a second SIGINT would merge with the first), so
  // they arrive together on SIGCONT and the graceful stop cannot finish in between.
  ASSERT_EQ(kill(pid, SIGSTOP), 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  ASSERT_EQ(kill(pid, SIGINT), 0);
  ASSERT_EQ(kill(pid, SIGTERM), 0);
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_EQ(kill(pid, SIGCONT), 0);
  const int rc = wait_exit(pid);
  EXPECT_TRUE(rc == 130 || rc == 143) << rc << "\n" << read_text(log);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
  EXPECT_NE(read_text(log).find("Second stop signal: exiting now"), std::string::npos) << read_text(log);
  EXPECT_EQ(read_text(log).find("training stopped"), std::string::npos) << "the graceful stop ran";
  // What was written before is whole: the last finished epoch's checkpoint loads.
  EXPECT_TRUE(yolo11::engine::load_checkpoint((run / "weights").string()).has_value());
}
