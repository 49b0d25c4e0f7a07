// Crash safety of yolo11-train, driven as a user would: the real executable, SIGKILL, resume=.
//  - a run killed during epoch 3 and resumed reproduces the uninterrupted run's epochs 3-4 exactly;
//  - killed at 20 random moments (checkpoint writes included), the run dir always holds a loadable checkpoint.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "golden.h"
#include "process.h"
#include "yolo11/engine/checkpoint.h"
#include "yolo11_test_config.h"

namespace fs = std::filesystem;

namespace {

using yolo11::test::count_rows;
using yolo11::test::read_text;
using yolo11::test::wait_exit;

std::string train_binary() { return yolo11::test::exe("yolo11-train"); }

/// Common settings: coco8 at 64 px, one step per epoch, single-threaded so every run computes identically.
std::vector<std::string> base_args(const std::string& project, const std::string& name, int epochs) {
  auto a = yolo11::test::coco8_train_args(project, name, epochs);
  a.push_back("deterministic=true");
  return a;
}

pid_t spawn(const std::vector<std::string>& args, const std::string& log) {
  return yolo11::test::spawn(train_binary(), args, log);
}

int run(const std::vector<std::string>& args, const std::string& log) { return wait_exit(spawn(args, log)); }

/// Data rows of results.csv (header dropped); each row without its `time` column.
std::vector<std::string> rows_without_time(const fs::path& csv) {
  std::ifstream in(csv);
  std::string line;
  std::vector<std::string> rows;
  std::getline(in, line);
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    const auto c1 = line.find(',');
    const auto c2 = line.find(',', c1 + 1);
    rows.push_back(line.substr(0, c1) + line.substr(c2));
  }
  return rows;
}

/// The `time` column of results.csv.
std::vector<double> times(const fs::path& csv) {
  std::ifstream in(csv);
  std::string line;
  std::vector<double> t;
  std::getline(in, line);
  while (std::getline(in, line))
    if (!line.empty()) t.push_back(std::stod(line.substr(line.find(',') + 1)));
  return t;
}

/// Runs `epochs`=4 uninterrupted and again SIGKILLed during epoch 3 then resumed; the results must be equal (all
/// but the time column). `extra` is added to both runs' arguments.
/// The killed run's training samples are slowed (YOLO11_TEST_LOADER_DELAY_MS) so its first two epochs take longer than
/// the resumed run's start and next epoch: the resumed `time` column must still go on rising.
/// `pending_grads`: the checkpoint the resume starts from must hold accumulated gradients.
void expect_kill_and_resume_equal(const std::string& tag, const std::vector<std::string>& extra, int batch,
                                  bool pending_grads) {
  ASSERT_TRUE(fs::exists(train_binary())) << train_binary() << " not built";
  const std::string project = yolo11::test::scratch_dir(tag);
  const std::string log = project + "/log.txt";
  auto args = [&](const std::string& name) {
    auto a = yolo11::test::coco8_train_args(project, name, 4, batch);
    a.push_back("deterministic=true");
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  };
  ASSERT_EQ(run(args("full"), log), 0) << read_text(log);

  setenv("YOLO11_TEST_LOADER_DELAY_MS", "400", 1);  // 4 samples a step, 1 step an epoch: >= 1.6 s an epoch
  const pid_t pid = spawn(args("killed"), log);
  unsetenv("YOLO11_TEST_LOADER_DELAY_MS");
  const fs::path csv = fs::path(project) / "killed" / "results.csv";
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(3);
  while (count_rows(csv) < 2 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  ASSERT_EQ(kill(pid, SIGKILL), 0);
  EXPECT_EQ(wait_exit(pid), -SIGKILL) << "the run ended before it could be killed";
  EXPECT_LT(count_rows(csv), 4u);
  if (pending_grads) {
    const auto ck = yolo11::engine::load_checkpoint(project + "/killed/weights");
    ASSERT_TRUE(ck.has_value());
    EXPECT_FALSE(ck->grads.empty()) << "the checkpoint of epoch " << ck->epoch + 1 << " holds no accumulated gradients";
  }

  // cfg=FILE beside resume= (the README's `yolo11 train cfg=... resume=...`): the run's saved args still rule
  const std::string rlog = project + "/resume_log.txt";  // the resumed run's console alone (spawn appends)
  ASSERT_EQ(run({"cfg=" + std::string(YOLO11_TEST_SOURCE_DIR) + "/configs/coco8.yaml", "resume=" + project + "/killed"},
                rlog), 0) << read_text(rlog);
  const auto full = rows_without_time(fs::path(project) / "full" / "results.csv");
  const auto resumed = rows_without_time(csv);
  ASSERT_EQ(full.size(), 4u);
  ASSERT_EQ(resumed.size(), 4u) << read_text(csv.string());
  for (size_t e = 0; e < 4; ++e) EXPECT_EQ(resumed[e], full[e]) << "epoch " << e + 1;
  // `time` goes on from the epoch the run resumed after (it restarted from 0 once)
  const auto t = times(csv);
  ASSERT_EQ(t.size(), 4u);
  for (size_t e = 1; e < 4; ++e) EXPECT_GT(t[e], t[e - 1]) << "epoch " << e + 1 << "\n" << read_text(csv.string());
  const std::string resumed_log = read_text(rlog);
  EXPECT_NE(resumed_log.find("Resuming training from"), std::string::npos);
  // As the reference, the closing line counts the epochs this process trained (at most 2: it was killed after 2)
  EXPECT_EQ(resumed_log.find("4 epochs completed"), std::string::npos) << resumed_log;
  EXPECT_NE(resumed_log.find(" completed in "), std::string::npos) << resumed_log;
  EXPECT_EQ(resumed_log.find("training from scratch"), std::string::npos) << resumed_log;
}

}  // namespace

TEST(Resume, KilledDuringEpoch3ResumesToTheUninterruptedResults) {
  expect_kill_and_resume_equal("resume_equal", {}, 4, false);
}

TEST(Resume, KilledMidAccumulationResumesToTheUninterruptedResults) {
  // Issue 10: 2 steps per epoch (4 images, batch 2) and an optimizer step every 5 iterations (nbs 10, no warmup):
  // every epoch ends with gradients accumulated but not yet applied (the one step is at iteration 5, in epoch 3);
  // the checkpoint must carry them (Checkpoint::grads) for the resumed run to equal the unbroken one.
  expect_kill_and_resume_equal("resume_accumulate", {"nbs=10", "warmup_epochs=0"}, 2, true);
}

TEST(Resume, SigkillAtRandomMomentsAlwaysLeavesALoadableCheckpoint) {
  ASSERT_TRUE(fs::exists(train_binary())) << train_binary() << " not built";
  const std::string project = yolo11::test::scratch_dir("resume_kill");
  const std::string log = project + "/log.txt";
  const fs::path run_dir = fs::path(project) / "run";
  // A long run; the first kill only after its first checkpoint exists.
  pid_t pid = spawn(base_args(project, "run", 1000), log);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(3);
  while (!fs::exists(run_dir / "weights" / "last.state.safetensors") && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  std::mt19937 rng(12345);
  std::uniform_int_distribution<int> wait_ms(0, 2500);
  int kills = 0;
  int64_t last_epoch = -1;
  for (int k = 0; k < 20; ++k) {
    std::this_thread::sleep_for(std::chrono::milliseconds(wait_ms(rng)));
    kill(pid, SIGKILL);
    wait_exit(pid);
    ++kills;
    const auto ck = yolo11::engine::load_checkpoint((run_dir / "weights").string(), "last");
    ASSERT_TRUE(ck.has_value()) << "kill " << k << ": no loadable checkpoint in " << run_dir;
    EXPECT_FALSE(ck->ema.empty());
    last_epoch = ck->epoch;
    pid = spawn({"resume=" + run_dir.string()}, log);
  }
  EXPECT_EQ(kills, 20);
  // The run goes on from there: the resumed process's first new checkpoint is the next epoch (a restart from
  // scratch would write epoch 0 first). Waited for rather than expected within the random kills, whose windows
  // (0-2.5 s) can all be shorter than a resume on a loaded machine or under a sanitizer.
  const auto deadline2 = std::chrono::steady_clock::now() + std::chrono::minutes(3);
  int64_t next_epoch = last_epoch;
  while (next_epoch == last_epoch && std::chrono::steady_clock::now() < deadline2) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    if (const auto ck = yolo11::engine::load_checkpoint((run_dir / "weights").string(), "last")) next_epoch = ck->epoch;
  }
  kill(pid, SIGKILL);
  wait_exit(pid);
  // Later than the checkpoint it resumed from (a restart from scratch would write epoch 0). Not "exactly + 1": a
  // coco8 epoch at imgsz 64 can take less than one poll, so two checkpoints may land between polls.
  EXPECT_GT(next_epoch, last_epoch) << "the run resumed after kill 20 did not continue from epoch " << last_epoch;
}

// deterministic=true (Ultralytics' init_seeds: deterministic algorithms, cuDNN deterministic, CUBLAS_WORKSPACE_CONFIG)
// with the settings a user runs, two intra-op threads and two loader workers: two runs of one seed give the same
// results.csv, all but the time column, bit for bit (the printed digits of every loss and metric).
TEST(Determinism, TwoSeededRunsWithThreadsAndWorkersGiveIdenticalResults) {
  ASSERT_TRUE(fs::exists(train_binary())) << train_binary() << " not built";
  const std::string project = yolo11::test::scratch_dir("determinism");
  auto args = [&](const std::string& name) {
    auto a = yolo11::test::coco8_train_args(project, name, 2, /*batch=*/4);
    a.insert(a.end(), {"threads=2", "workers=2", "deterministic=true"});
    return a;
  };
  const std::string log_a = project + "/a.log", log_b = project + "/b.log";
  ASSERT_EQ(run(args("a"), log_a), 0) << read_text(log_a);
  ASSERT_EQ(run(args("b"), log_b), 0) << read_text(log_b);
  EXPECT_NE(read_text(log_a).find("deterministic=true: deterministic algorithms"), std::string::npos)
      << read_text(log_a);
  const auto a = rows_without_time(fs::path(project) / "a" / "results.csv");
  const auto b = rows_without_time(fs::path(project) / "b" / "results.csv");
  ASSERT_EQ(a.size(), 2u);
  EXPECT_EQ(a, b);
}
