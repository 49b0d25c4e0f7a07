// yolo11-train with WORLD_SIZE=2 (two real processes on localhost, Gloo), as tools/launch_dist.sh launches it:
// both ranks finish, only rank 0 writes the run dir, and the final weights are bitwise equal on both ranks.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "dist_test_util.h"
#include "golden.h"
#include "process.h"
#include "yolo11/dist/dist.h"
#include "yolo11_test_config.h"

namespace fs = std::filesystem;

namespace {

std::vector<std::string> args(const std::string& project, const std::string& name, int epochs, int batch) {
  return yolo11::test::coco8_train_args(project, name, epochs, batch);
}

/// Starts `world` yolo11-train processes with RANK/WORLD_SIZE/LOCAL_RANK/MASTER_* set; returns their exit codes.
std::vector<int> launch(int world, const std::vector<std::string>& a, const std::string& log_prefix) {
  const int port = yolo11::test::free_port();
  yolo11::test::ScopedEnv ws("WORLD_SIZE", std::to_string(world)), ma("MASTER_ADDR", "127.0.0.1"),
      mp("MASTER_PORT", std::to_string(port));
  std::vector<pid_t> pids;
  for (int r = 0; r < world; ++r) {
    yolo11::test::ScopedEnv rk("RANK", std::to_string(r)), lr("LOCAL_RANK", std::to_string(r));
    pids.push_back(yolo11::test::spawn(yolo11::test::exe("yolo11-train"), a, log_prefix + std::to_string(r) + ".log"));
  }
  std::vector<int> rcs;
  for (pid_t p : pids) rcs.push_back(yolo11::test::wait_exit(p));
  return rcs;
}

}  // namespace

TEST(DistTrain, TwoRanksFinishRankZeroWritesAndWeightsMatch) {
  if (!yolo11::dist::gloo_available()) GTEST_SKIP() << "built without Gloo";
  ASSERT_TRUE(fs::exists(yolo11::test::exe("yolo11-train"))) << "yolo11-train not built";
  const std::string project = yolo11::test::scratch_dir("ddp2");
  const std::string logs = yolo11::test::scratch_dir("ddp2_logs");
  const auto rcs = launch(2, args(project, "run", 2, 4), logs + "/rank");
  const std::string log0 = yolo11::test::read_text(logs + "/rank0.log");
  const std::string log1 = yolo11::test::read_text(logs + "/rank1.log");
  ASSERT_EQ(rcs[0], 0) << log0;
  ASSERT_EQ(rcs[1], 0) << log1;
  // Rank 0 alone wrote the run dir: one run, with its results, log and checkpoints.
  std::vector<std::string> runs;
  for (const auto& e : fs::directory_iterator(project)) runs.push_back(e.path().filename().string());
  ASSERT_EQ(runs, std::vector<std::string>{"run"});
  EXPECT_EQ(yolo11::test::count_rows(fs::path(project) / "run" / "results.csv"), 2u);
  EXPECT_TRUE(fs::exists(fs::path(project) / "run" / "weights" / "last.safetensors"));
  EXPECT_NE(log0.find("DDP: rank 0 of 2 (gloo"), std::string::npos) << log0;
  EXPECT_NE(log0.find("global batch 4 = 2 per rank"), std::string::npos) << log0;
  // The all_reduce of each rank's weight hash found them equal (bitwise) after 2 epochs.
  EXPECT_NE(log0.find("DDP: final weights identical on all 2 ranks"), std::string::npos) << log0;
  EXPECT_EQ(log1.find("differ"), std::string::npos) << log1;
  EXPECT_EQ(log1.find("epochs completed"), std::string::npos) << "rank 1 logs only warnings:\n" << log1;
}

TEST(DistTrain, BatchNotDivisibleByWorldIsAClearError) {
  if (!yolo11::dist::gloo_available()) GTEST_SKIP() << "built without Gloo";
  const std::string project = yolo11::test::scratch_dir("ddp_odd");
  const std::string logs = yolo11::test::scratch_dir("ddp_odd_logs");
  const auto rcs = launch(2, args(project, "run", 1, 5), logs + "/rank");
  const std::string log0 = yolo11::test::read_text(logs + "/rank0.log");
  EXPECT_NE(rcs[0], 0);
  EXPECT_NE(rcs[1], 0);
  EXPECT_NE(log0.find("batch=5 is the global batch and must be a multiple of WORLD_SIZE=2"), std::string::npos) << log0;
}
