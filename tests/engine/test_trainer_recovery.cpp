// Faults a long run meets, injected through the trainer's test hooks (engine/trainer.h TrainerHooks): non-finite
// losses and weights (the epoch re-runs from its good state; the 4th recovery in a row stops the run), CUDA-style
// out-of-memory errors in the first epoch (the batch is halved, at most 3 times) and host out-of-memory errors (one
// clear error naming the stage; the last checkpoint still loads). coco8 at imgsz 64: 2 steps per epoch at batch 2.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <c10/util/Exception.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <new>

#include "golden.h"
#include "yolo11/config/train_config.h"
#include "yolo11/engine/checkpoint.h"
#include "yolo11/engine/detail/recovery.h"
#include "yolo11/engine/results.h"
#include "yolo11/engine/detail/run.h"
#include "yolo11/engine/trainer.h"
#include "yolo11_test_config.h"

namespace fs = std::filesystem;
using namespace yolo11;

namespace {

std::string repo_file(const std::string& rel) { return std::string(YOLO11_TEST_SOURCE_DIR) + "/" + rel; }

/// A coco8 run (or coco128 with `data`), float32, no plots, no validation but at the last epoch.
config::TrainConfig coco_run(const std::string& project, int epochs, int batch,
                              const std::vector<std::string>& more = {}, const std::string& data = "coco8") {
  const std::string datasets = fs::path(test::dataset_dir(data)).parent_path().string();
  std::vector<std::string> o = {"model=" + repo_file("configs/models/yolo11.yaml"),
                                "data=" + repo_file("configs/datasets/" + data + ".yaml"),
                                "datasets_dir=" + datasets,
                                "epochs=" + std::to_string(epochs),
                                "imgsz=64",
                                "batch=" + std::to_string(batch),
                                "nbs=" + std::to_string(batch),  // an optimizer step every step
                                "workers=1",
                                "project=" + project,
                                "name=run",
                                "plots=false",
                                "val=false",
                                "amp=false",
                                "instrument=off"};
  o.insert(o.end(), more.begin(), more.end());
  return config::TrainConfig::load("", o);
}

std::string file_text(const fs::path& p) {
  std::ifstream f(p);
  return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

at::Tensor times_nan(const at::Tensor& loss) { return loss * std::numeric_limits<float>::quiet_NaN(); }

/// Every results.csv row once, epochs 1..n in order, with finite train losses.
void expect_each_epoch_once(const fs::path& run, int64_t n) {
  const auto rows = engine::ResultsCsv::read((run / "results.csv").string()).results();
  ASSERT_EQ(static_cast<int64_t>(rows.size()), n);
  for (int64_t k = 0; k < n; ++k) {
    const auto& row = rows[static_cast<size_t>(k)];
    EXPECT_EQ(row.epoch, k + 1);
    EXPECT_TRUE(std::isfinite(row.box_loss) && std::isfinite(row.cls_loss) && std::isfinite(row.dfl_loss))
        << "epoch " << row.epoch;
  }
}

c10::OutOfMemoryError injected_cuda_oom() {
  return c10::OutOfMemoryError(c10::SourceLocation{__func__, __FILE__, __LINE__},
                               "CUDA out of memory. Tried to allocate 2.00 GiB (injected by the test)");
}

}  // namespace

// NaN losses in both steps of epoch 2, on its first pass only: the epoch ends on skipped steps, so it re-runs from
// the state it started from; results.csv then has epochs 1 and 2 once each, all finite, and the run ends normally.
TEST(Recovery, NonFiniteEpochRerunsFromItsGoodStateAndResultsContinue) {
  const std::string project = test::scratch_dir("recovery_nan_epoch");
  auto cfg = coco_run(project, 2, 2);
  std::map<std::pair<int64_t, int64_t>, int> calls;
  engine::TrainerHooks hooks;
  hooks.on_loss = [&](int64_t epoch, int64_t i, const at::Tensor& loss) {
    return epoch == 1 && calls[{epoch, i}]++ == 0 ? times_nan(loss) : loss;
  };
  engine::Trainer trainer(cfg, hooks);
  const auto summary = trainer.train();
  EXPECT_EQ(summary.epochs_done, 2);
  EXPECT_EQ(summary.nonfinite_skipped_steps, 2);
  EXPECT_EQ(summary.nonfinite_recoveries, 1);
  EXPECT_EQ((calls[{1, 0}]), 2);  // the epoch ran twice
  const fs::path run = fs::path(project) / "run";
  expect_each_epoch_once(run, 2);
  const std::string log = file_text(run / "train.log");
  EXPECT_NE(log.find("epoch 2: the epoch ended on 2 optimizer steps skipped for non-finite losses"), std::string::npos)
      << log;
  EXPECT_NE(log.find("recovering (attempt 1/3)"), std::string::npos);
  const auto ck = engine::load_checkpoint((run / "weights").string());
  ASSERT_TRUE(ck.has_value());
  EXPECT_EQ(ck->epoch, 1);
}

// A finite loss whose gradients are NaN (0·sqrt(0) in the graph) at the last step of epoch 2: the update makes the
// weights and the EMA non-finite without any non-finite loss; the epoch-end check finds it and the epoch re-runs.
TEST(Recovery, NonFiniteWeightsAtTheEpochEndAreRecovered) {
  const std::string project = test::scratch_dir("recovery_nan_weights");
  auto cfg = coco_run(project, 2, 2);
  int poisoned = 0;
  engine::TrainerHooks hooks;
  hooks.on_loss = [&](int64_t epoch, int64_t i, const at::Tensor& loss) {
    if (epoch != 1 || i != 1 || poisoned++ > 0) return loss;
    return loss + 0.0 * torch::sqrt(loss - loss);  // value: loss; gradient: NaN
  };
  engine::Trainer trainer(cfg, hooks);
  const auto summary = trainer.train();
  EXPECT_EQ(poisoned, 2);
  EXPECT_EQ(summary.nonfinite_skipped_steps, 0) << "no loss was non-finite";
  EXPECT_EQ(summary.nonfinite_recoveries, 1);
  const fs::path run = fs::path(project) / "run";
  expect_each_epoch_once(run, 2);
  EXPECT_NE(file_text(run / "train.log").find("the weights are non-finite at the end of the epoch"), std::string::npos);
  const auto ck = engine::load_checkpoint((run / "weights").string());
  ASSERT_TRUE(ck.has_value());  // the loader refuses non-finite weights
  EXPECT_EQ(ck->epoch, 1);
}

// 5 optimizer steps in a row with NaN losses in the middle of an epoch (coco128, 9 %: 6 steps per epoch):
// the epoch starts over at once, without running its remaining steps.
TEST(Recovery, FiveNonFiniteStepsInARowRestartTheEpochAtOnce) {
  const std::string project = test::scratch_dir("recovery_nan_streak");
  // coco128's first 9 % for training (6 steps at batch 2), coco8's 4 val images for the last epoch's validation
  const fs::path coco128 = test::dataset_dir("coco128"), coco8 = test::dataset_dir("coco8");
  const fs::path yaml = fs::path(project) / "coco128_coco8val.yaml";
  const std::string names = file_text(repo_file("configs/datasets/coco128.yaml"));
  std::ofstream(yaml) << "path: " << coco128.string() << "\ntrain: images/train2017\nval: "
                      << (coco8 / "images" / "val").string() << "\n" << names.substr(names.find("names:"));
  auto cfg = coco_run(project, 2, 2, {"fraction=0.09", "data=" + yaml.string()}, "coco128");
  std::map<std::pair<int64_t, int64_t>, int> calls;
  engine::TrainerHooks hooks;
  hooks.on_loss = [&](int64_t epoch, int64_t i, const at::Tensor& loss) {
    const int pass = calls[{epoch, i}]++;
    return epoch == 1 && i < 5 && pass == 0 ? times_nan(loss) : loss;
  };
  engine::Trainer trainer(cfg, hooks);
  int64_t nb = 0;
  trainer.add_callback(engine::Event::on_train_epoch_start, [&](engine::TrainContext& c) { nb = c.num_batches; });
  const auto summary = trainer.train();
  ASSERT_GE(nb, 6);
  EXPECT_EQ((calls[{1, 4}]), 2);
  EXPECT_EQ((calls[{1, 5}]), 1) << "the first pass stopped at the 5th non-finite step";
  EXPECT_EQ(summary.nonfinite_skipped_steps, 5);
  EXPECT_EQ(summary.nonfinite_recoveries, 1);
  const fs::path run = fs::path(project) / "run";
  expect_each_epoch_once(run, 2);
  EXPECT_NE(file_text(run / "train.log").find("5 optimizer steps in a row saw non-finite losses (step " +
                                              std::to_string(nb + 4) + ": loss nan (box, cls, dfl "),
            std::string::npos);
}

// NaN losses from epoch 2 on, for good: each step is skipped (the weights stay finite), each pass of epoch 2 ends on
// skipped steps and re-runs; after 3 recoveries the run stops with the step, the losses and what to try, and the
// checkpoint of epoch 1 is what is left.
TEST(Recovery, PersistentNonFiniteLossesStopAfterThreeRecoveries) {
  const std::string project = test::scratch_dir("recovery_nan_stop");
  auto cfg = coco_run(project, 6, 2);
  int injected = 0;
  engine::TrainerHooks hooks;
  hooks.on_loss = [&](int64_t epoch, int64_t, const at::Tensor& loss) {
    if (epoch < 1) return loss;
    ++injected;
    return times_nan(loss);
  };
  engine::Trainer trainer(cfg, hooks);
  std::vector<int64_t> ema_updates;  // after each step of epoch 2: a skipped step updates neither weights nor EMA
  trainer.add_callback(engine::Event::on_train_batch_end, [&](engine::TrainContext& c) {
    if (c.epoch == 1) ema_updates.push_back(c.run->ema->updates());
  });
  try {
    trainer.train();
    FAIL() << "training went on through persistent non-finite losses";
  } catch (const std::runtime_error& e) {
    const std::string m = e.what();
    for (const char* part : {"training stopped in epoch 2: the epoch ended on 2 optimizer steps skipped for non-finite "
                             "losses (step 3: loss nan (box, cls, dfl ", "), after 3 recoveries",
                             "lower lr0 (now 0.01)", "amp=false (now false)", "check the labels"})
      EXPECT_NE(m.find(part), std::string::npos) << part << "\n" << m;
  }
  EXPECT_EQ(injected, 8);  // 4 passes of epoch 2, 2 steps each
  EXPECT_EQ(ema_updates, std::vector<int64_t>(8, 2)) << "epoch 1 made 2 updates; no later step may add one";
  const fs::path run = fs::path(project) / "run";
  const std::string log = file_text(run / "train.log");
  for (int k = 1; k <= 3; ++k)
    EXPECT_NE(log.find("recovering (attempt " + std::to_string(k) + "/3)"), std::string::npos) << k;
  EXPECT_NE(log.find("update skipped (2 in a row)"), std::string::npos);
  expect_each_epoch_once(run, 1);
  const auto ck = engine::load_checkpoint((run / "weights").string());
  ASSERT_TRUE(ck.has_value());
  EXPECT_EQ(ck->epoch, 0);
}

// The CUDA caching allocator's error (c10::OutOfMemoryError, thrown here by the hook on the CPU) in the first two
// steps of the first epoch: batch 4 → 2 → 1, each time the loaders, optimizer and scheduler are rebuilt and the
// epoch restarts; the run then finishes at batch 1 and args.yaml says so (resume= reads it).
TEST(Recovery, OutOfMemoryInTheFirstEpochHalvesTheBatchAndRestarts) {
  const std::string project = test::scratch_dir("recovery_oom_halve");
  auto cfg = coco_run(project, 2, 4);
  int thrown = 0;
  std::vector<int64_t> batch_sizes;
  engine::TrainerHooks hooks;
  hooks.on_loss = [&](int64_t epoch, int64_t, const at::Tensor& loss) {
    if (epoch == 0 && thrown < 2) {
      ++thrown;
      throw injected_cuda_oom();
    }
    return loss;
  };
  engine::Trainer trainer(cfg, hooks);
  trainer.add_callback(engine::Event::on_train_batch_end,
                       [&](engine::TrainContext& c) { batch_sizes.push_back(c.batch_images); });
  const auto summary = trainer.train();
  EXPECT_EQ(summary.oom_retries, 2);
  EXPECT_EQ(summary.batch, 1);
  EXPECT_EQ(summary.epochs_done, 2);
  EXPECT_EQ(batch_sizes, std::vector<int64_t>(8, 1)) << "coco8 train: 4 images, 4 steps per epoch at batch 1";
  const fs::path run = fs::path(project) / "run";
  expect_each_epoch_once(run, 2);
  const std::string log = file_text(run / "train.log");
  EXPECT_NE(log.find("out of memory with batch=4 in epoch 1 (CUDA out of memory. Tried to allocate 2.00 GiB (injected "
                     "by the test)): reducing to batch=2 and restarting the epoch (1/3)"),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("reducing to batch=1 and restarting the epoch (2/3)"), std::string::npos);
  EXPECT_NE(file_text(run / "args.yaml").find("batch: 1\n"), std::string::npos);
}

// Out of memory for good: 3 halvings (8 → 4 → 2 → 1), then the 4th error ends the run with the clear message.
TEST(Recovery, OutOfMemoryAfterThreeHalvingsEndsTheRunWithOneClearError) {
  const std::string project = test::scratch_dir("recovery_oom_stop");
  auto cfg = coco_run(project, 1, 8);
  int thrown = 0;
  engine::TrainerHooks hooks;
  hooks.on_loss = [&](int64_t, int64_t, const at::Tensor&) -> at::Tensor {
    ++thrown;
    throw injected_cuda_oom();
  };
  engine::Trainer trainer(cfg, hooks);
  try {
    trainer.train();
    FAIL() << "no error";
  } catch (const std::runtime_error& e) {
    const std::string m = e.what();
    for (const char* part : {"out of memory in the training step (forward, loss, backward, optimizer) in epoch 1/1",
                             "CUDA out of memory. Tried to allocate 2.00 GiB", "batch=1 imgsz=64 cache=false workers=1",
                             "lower batch (e.g. batch=1) or imgsz", "no checkpoint was written yet"})
      EXPECT_NE(m.find(part), std::string::npos) << part << "\n" << m;
  }
  EXPECT_EQ(thrown, 4);
}

// Host memory exhausted (std::bad_alloc) in the loader, the training step, validation or the checkpoint save of
// epoch 2: one error names the stage, the memory, the settings and what to lower, and the checkpoint of epoch 1
// still loads (an out-of-memory error after the first epoch is not retried).
namespace {
void expect_clear_host_oom_error(const std::string& stage, const std::string& says) {
  const std::string project = test::scratch_dir("recovery_bad_alloc_" + stage);
  auto cfg = coco_run(project, 2, 2);
  engine::TrainerHooks hooks;
  hooks.on_stage = [&](const char* s, int64_t epoch) {
    if (epoch == 1 && stage == s) throw std::bad_alloc();
  };
  hooks.on_loss = [&](int64_t epoch, int64_t, const at::Tensor& loss) {
    if (epoch == 1 && stage == "step") throw std::bad_alloc();
    return loss;
  };
  engine::Trainer trainer(cfg, hooks);
  const fs::path run = fs::path(project) / "run";
  try {
    trainer.train();
    ADD_FAILURE() << "no error";
  } catch (const std::runtime_error& e) {
    const std::string m = e.what();
    for (const std::string& part :
         {says, std::string("resident of the machine's"), std::string("batch=2 imgsz=64 cache=false workers=1"),
          "the last checkpoint " + (run / "weights" / "last.safetensors").string() +
              " (after epoch 1) is intact: resume=" + run.string() + " continues"})
      EXPECT_NE(m.find(part), std::string::npos) << part << "\n" << m;
  }
  const auto ck = engine::load_checkpoint((run / "weights").string());
  ASSERT_TRUE(ck.has_value());
  EXPECT_EQ(ck->epoch, 0);
}
}  // namespace

TEST(Recovery, HostOutOfMemoryInTheLoaderIsOneClearErrorAndKeepsTheCheckpoint) {
  expect_clear_host_oom_error("loader", "out of memory in loading a training batch (data loader; a worker's error is "
                                        "rethrown here) in epoch 2/2, step 2: std::bad_alloc. ");
}

TEST(Recovery, HostOutOfMemoryInTheStepIsOneClearErrorAndKeepsTheCheckpoint) {
  expect_clear_host_oom_error("step", "out of memory in the training step (forward, loss, backward, optimizer) in "
                                      "epoch 2/2, step 2: std::bad_alloc. ");
}

TEST(Recovery, HostOutOfMemoryInValidationIsOneClearErrorAndKeepsTheCheckpoint) {
  expect_clear_host_oom_error("validation", "out of memory in validation in epoch 2/2, step 4: std::bad_alloc. ");
}

TEST(Recovery, HostOutOfMemoryInTheCheckpointSaveIsOneClearErrorAndKeepsTheCheckpoint) {
  expect_clear_host_oom_error("checkpoint",
                              "out of memory in saving the checkpoint in epoch 2/2, step 4: std::bad_alloc. ");
}

// Real allocation failures (not injected) are recognised: LibTorch's CPU allocator asked for a petabyte, and
// operator new; an ordinary LibTorch error is not one.
TEST(Recovery, RealAllocationFailuresAreRecognisedAsOutOfMemory) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "ASan and TSan replace glibc's allocator: a petabyte request aborts instead of failing";
#endif
  try {
    auto t = torch::empty({int64_t{1} << 50}, torch::kUInt8);
    FAIL() << "a petabyte was allocated";
  } catch (const std::exception& e) {
    EXPECT_TRUE(engine::is_out_of_memory(e)) << e.what();
  }
  try {
    std::vector<char> v(size_t{1} << 52);
    FAIL() << "4 PiB were allocated";
  } catch (const std::exception& e) {
    EXPECT_TRUE(engine::is_out_of_memory(e)) << e.what();
  }
  try {
    (void)torch::ones({2, 3}).matmul(torch::ones({2, 3}));
    FAIL() << "no shape error";
  } catch (const std::exception& e) {
    EXPECT_FALSE(engine::is_out_of_memory(e)) << e.what();
  }
}

// Out of memory while the run is built (no Run yet), with cache=ram: the message names the stage and the cache, and
// says there is nothing to resume.
TEST(Recovery, OutOfMemoryWhileBuildingWithCacheRamPointsAtTheCache) {
  auto cfg = config::TrainConfig::load("", {"cache=ram", "batch=16", "imgsz=640"});
  const std::string m =
      engine::out_of_memory_message(std::bad_alloc(), engine::RunStage::build, cfg, /*r=*/nullptr);
  for (const char* part : {"out of memory in building the run (dataset scan, cache, model): std::bad_alloc. ",
                           "batch=16 imgsz=640 cache=ram workers=8",
                           "cache=ram decodes every image into RAM: use cache=disk or cache=false",
                           "no checkpoint was written yet: nothing to resume"})
    EXPECT_NE(m.find(part), std::string::npos) << part << "\n" << m;
}
