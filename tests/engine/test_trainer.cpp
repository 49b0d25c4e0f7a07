// End-to-end checks of the training path on real data (coco8): a small batch is overfitted, and a whole
// 1-epoch run writes every output with the Ultralytics results.csv layout.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <vector>
#include <nlohmann/json.hpp>

#include "../instrument/nvtx_recording.h"
#include "golden.h"
#include "yolo11/config/train_config.h"
#include "yolo11/data/dataset.h"
#include "yolo11/data/dataset_info.h"
#include "yolo11/data/loader.h"
#include "yolo11/engine/amp.h"
#include "yolo11/engine/checkpoint.h"
#include "yolo11/engine/inference.h"
#include "yolo11/engine/optimizer.h"
#include "yolo11/engine/results.h"
#include "yolo11/engine/trainer.h"
#include "yolo11/engine/validator.h"
#include "yolo11/io/file.h"
#include "yolo11/io/safetensors.h"
#include "yolo11/loss/detection_loss.h"
#include "yolo11/model/yolo.h"
#include "yolo11_test_config.h"

namespace fs = std::filesystem;
using namespace yolo11;

YOLO11_NVTX_INJECT_AT_STARTUP();

namespace {

std::string source_path(const std::string& rel) { return std::string(YOLO11_TEST_SOURCE_DIR) + "/" + rel; }

/// coco8 YAML resolved against whichever copy of the dataset the tests use (repo datasets/ or ../shared).
data::DatasetInfo coco8_info() {
  const std::string root = test::dataset_dir("coco8");
  return data::load_dataset_yaml(source_path("configs/datasets/coco8.yaml"), fs::path(root).parent_path().string());
}

}  // namespace

TEST(Trainer, OverfitsOneCoco8BatchIn30Steps) {
  torch::manual_seed(0);
  const auto info = coco8_info();
  data::DatasetOptions dso;
  dso.imgsz = 128;
  auto ds = std::make_shared<data::Dataset>(info.train, info, dso);
  data::AugmentOptions aug;
  aug.imgsz = 128;
  aug.augment = false;
  data::LoaderOptions lo;
  lo.batch = 4;
  lo.workers = 0;
  lo.shuffle = false;
  data::Loader loader(ds, aug, lo);
  const auto batch = loader.next();
  ASSERT_TRUE(batch.has_value());
  ASSERT_GT(batch->cls.size(0), 0);
  const auto x = batch->images.to(torch::kFloat).div(255.0);

  model::ModelOptions mo;
  mo.yaml = source_path("configs/models/yolo11.yaml");
  mo.nc = info.nc;
  model::YOLO net(mo);
  net->train();
  loss::DetectionLoss criterion(info.nc, net->strides(), net->reg_max());
  auto cfg = config::TrainConfig::load("", {"optimizer=AdamW", "lr0=0.002", "batch=4"});
  const auto groups = engine::build_param_groups(*net);
  auto choice = engine::build_optimizer(groups, cfg, info.nc, 30, cfg.weight_decay);

  std::vector<double> losses;
  for (int step = 0; step < 30; ++step) {
    auto out = criterion(net->forward_feats(x), batch->batch_idx, batch->cls, batch->bboxes);
    choice.opt->zero_grad();
    out.total.backward();
    torch::nn::utils::clip_grad_norm_(net->parameters(), 10.0);
    choice.opt->step();
    losses.push_back(out.items.sum().item<double>());
  }
  const double first = (losses[0] + losses[1] + losses[2]) / 3;
  const double last = (losses[27] + losses[28] + losses[29]) / 3;
  RecordProperty("loss_first", std::to_string(first));
  RecordProperty("loss_last", std::to_string(last));
  EXPECT_TRUE(std::isfinite(last));
  EXPECT_LT(last, 0.6 * first) << "loss (box+cls+dfl) went from " << first << " to " << last << " in 30 steps";
}

// model=yolo11s.yaml, as Ultralytics users type it (the file is configs/models/yolo11.yaml, the letter is the scale):
// the run builds and trains YOLO11s (model.0 has 32 output channels: 64 × width 0.5; n has 16).
TEST(Trainer, UltralyticsModelNameTrainsAtItsScale) {
  const std::string project = test::scratch_dir("trainer_model_name");
  const std::string datasets = fs::path(test::dataset_dir("coco8")).parent_path().string();
  auto cfg = config::TrainConfig::load(
      "", {"model=yolo11s.yaml", "data=" + source_path("configs/datasets/coco8.yaml"), "datasets_dir=" + datasets,
           "epochs=1", "imgsz=64", "batch=8", "workers=0", "plots=false", "instrument=off", "project=" + project,
           "name=run"});
  engine::Trainer trainer(cfg);
  const auto summary = trainer.train();
  EXPECT_EQ(summary.epochs_done, 1);
  const auto w = io::load_safetensors((fs::path(summary.run_dir) / "weights" / "last.safetensors").string());
  ASSERT_TRUE(w.contains("model.0.conv.weight"));
  EXPECT_EQ(w.at("model.0.conv.weight").size(0), 32) << "yolo11s.yaml must build scale s";
}

TEST(Trainer, OneEpochOnCoco8WritesEveryOutput) {
  const std::string project = test::scratch_dir("trainer_one_epoch");
  const std::string datasets = fs::path(test::dataset_dir("coco8")).parent_path().string();
  auto cfg = config::TrainConfig::load(
      "", {"model=" + source_path("configs/models/yolo11.yaml"), "data=" + source_path("configs/datasets/coco8.yaml"),
           "datasets_dir=" + datasets, "epochs=1", "imgsz=64", "batch=1", "workers=1", "project=" + project, "name=run",
           "log_every=1", "instrument=full", "trace_steps=0:2", "instrument_warmup=0"});
  // A cache of its own: the in-run calibration (engine/calibration.h) times steps 1-2, none being cached.
  const std::string cache = test::scratch_dir("trainer_one_epoch_cache");
  setenv("YOLO11_CACHE_DIR", cache.c_str(), 1);
  engine::Trainer trainer(cfg);
  const auto summary = trainer.train();
  EXPECT_EQ(summary.epochs_done, 1);
  const fs::path run(summary.run_dir);
  EXPECT_EQ(run, fs::path(project) / "run");

  const auto csv = engine::ResultsCsv::read((run / "results.csv").string());
  std::ifstream in(run / "results.csv");
  std::string header;
  std::getline(in, header);
  EXPECT_EQ(header,
            "epoch,time,train/box_loss,train/cls_loss,train/dfl_loss,metrics/precision(B),metrics/recall(B),"
            "metrics/mAP50(B),metrics/mAP50-95(B),val/box_loss,val/cls_loss,val/dfl_loss,lr/pg0,lr/pg1,lr/pg2");
  ASSERT_EQ(csv.rows().size(), 1u);
  const auto r = csv.results().at(0);
  EXPECT_EQ(r.epoch, 1);
  EXPECT_GT(r.box_loss, 0);
  EXPECT_GT(r.cls_loss, 0);
  EXPECT_GT(r.val_cls_loss, 0);
  for (const char* f : {"args.yaml", "train.log", "results.png", "breakdown.csv", "summary.json", "trace.json",
                        "labels.jpg", "train_batch0.jpg", "val_batch0_labels.jpg", "val_batch0_pred.jpg",
                        "confusion_matrix.png", "PR_curve.png", "F1_curve.png", "P_curve.png", "R_curve.png",
                        "weights/last.safetensors", "weights/best.safetensors"})
    EXPECT_TRUE(fs::exists(run / f)) << f;
  // The weights describe their model alone: predict/val need no data= to name the classes.
  const auto meta = io::read_safetensors_metadata((run / "weights/best.safetensors").string());
  ASSERT_TRUE(meta.count("names"));
  EXPECT_EQ(meta.at("names").substr(0, 10), "[\"person\",");
  EXPECT_EQ(meta.at("nc"), "80");
  EXPECT_EQ(meta.at("model_scale"), "n");
  EXPECT_EQ(meta.at("sppf_act"), "true");
  const auto det = engine::load_detector((run / "weights/best.safetensors").string(),
                                         std::string(YOLO11_TEST_SOURCE_DIR) + "/configs/models/yolo11.yaml");
  EXPECT_EQ(det.names.at(0), "person");
  // Validation ran on the EMA weights and printed the per-class table into train.log.
  std::ifstream log(run / "train.log");
  const std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("mAP50-95"), std::string::npos);
  EXPECT_NE(text.find("forward:"), std::string::npos);
  // calibrate is on by default: steps 1-2 were timed with the loader paused; on a quiet machine the windows after them
  // and the run compare against the figure, on a busy one (other ctest processes) the line says why there is none.
  EXPECT_NE(text.find("compute calibration: none cached for this setting; steps 1-2 are timed"), std::string::npos)
      << text;
  const auto sj = nlohmann::json::parse(io::read_file((run / "summary.json").string()));
  ASSERT_TRUE(sj.contains("run"));
  if (text.find("compute calibration: forward+loss+backward") != std::string::npos) {
    EXPECT_NE(text.find("measured on steps 1-2 with the loader paused"), std::string::npos) << text;
    EXPECT_NE(text.find("x calibrated ("), std::string::npos) << text;
    EXPECT_GT(sj["run"].value("compute_expected_s", -1.0), 0.0) << sj["run"].dump();
    EXPECT_GT(sj["run"].value("compute_speed", -1.0), 0.0) << sj["run"].dump();
    EXPECT_TRUE(fs::exists(fs::path(cache) / "compute_calibration.json"));
  } else {
    EXPECT_NE(text.find("compute calibration: not taken, the machine was busy over steps 1-2 ("), std::string::npos)
        << text;
  }
}

// amp=true on CPU: bfloat16 autocast where the CPU has bf16 instructions (this dev machine: avx512_bf16), float32
// with a message otherwise; either way the run trains and writes its outputs, and no scaler state is saved. The
// validation's forward runs in the training's precision except at the last validation (float32).
TEST(Trainer, AmpOnCpuTrainsCoco8InBfloat16WhenSupported) {
  const std::string project = test::scratch_dir("trainer_amp_cpu");
  const std::string datasets = fs::path(test::dataset_dir("coco8")).parent_path().string();
  auto cfg = config::TrainConfig::load(
      "", {"model=" + source_path("configs/models/yolo11.yaml"), "data=" + source_path("configs/datasets/coco8.yaml"),
           "datasets_dir=" + datasets, "epochs=2", "imgsz=64", "batch=4", "workers=1", "project=" + project,
           "name=run", "plots=false", "amp=true", "device=cpu"});
  engine::Trainer trainer(cfg);
  std::vector<std::string> val_precision;
  trainer.add_callback(engine::Event::on_val_end,
                       [&](engine::TrainContext& c) { val_precision.push_back(c.val->precision); });
  const auto summary = trainer.train();
  EXPECT_EQ(summary.epochs_done, 2);
  const fs::path run(summary.run_dir);
  std::ifstream log(run / "train.log");
  const std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
  if (engine::cpu_supports_bf16()) {
    EXPECT_EQ(summary.precision, "bfloat16");
    EXPECT_NE(text.find("amp=true: CPU bfloat16 autocast"), std::string::npos) << text;
    EXPECT_NE(text.find("AMP check"), std::string::npos);
    EXPECT_EQ(val_precision, (std::vector<std::string>{"bfloat16", "float32"}));
    EXPECT_NE(text.find("validation: forward in bfloat16 autocast, as the training"), std::string::npos) << text;
  } else {
    EXPECT_EQ(summary.precision, "float32");
    EXPECT_NE(text.find("no bfloat16 instructions"), std::string::npos) << text;
    EXPECT_EQ(val_precision, (std::vector<std::string>{"float32", "float32"}));
  }
  EXPECT_EQ(summary.amp_skipped_steps, 0);
  EXPECT_EQ(summary.nonfinite_skipped_steps, 0);
  const auto csv = engine::ResultsCsv::read((run / "results.csv").string());
  ASSERT_EQ(csv.results().size(), 2u);
  for (const auto& r : csv.results()) {
    EXPECT_TRUE(std::isfinite(r.box_loss) && r.box_loss > 0);
    EXPECT_TRUE(std::isfinite(r.cls_loss) && r.cls_loss > 0);
    EXPECT_TRUE(std::isfinite(r.dfl_loss) && r.dfl_loss > 0);
  }
  for (const char* f : {"args.yaml", "train.log", "results.csv", "weights/last.safetensors", "weights/best.safetensors",
                        "weights/last.state.safetensors"})
    EXPECT_TRUE(fs::exists(run / f)) << f;
  const auto ck = engine::load_checkpoint((run / "weights").string());
  ASSERT_TRUE(ck.has_value());
  EXPECT_EQ(ck->epoch, 1);
  EXPECT_TRUE(ck->scaler.empty()) << "bfloat16 / float32 training has no loss scaler";
  EXPECT_FALSE(ck->rng_cuda.defined());
}

#ifdef YOLO11_NVTX_INJECTION_PATH
// The real trainer, two steps (coco8 train = 4 images, batch 2), seen through an NVTX injection library:
// exactly the documented nesting of stage ranges on the training thread.
TEST(Trainer, TwoStepsEmitTheNestedNvtxStageRanges) {
  const std::string project = test::scratch_dir("trainer_nvtx");
  const std::string datasets = fs::path(test::dataset_dir("coco8")).parent_path().string();
  auto cfg = config::TrainConfig::load(
      "", {"model=" + source_path("configs/models/yolo11.yaml"), "data=" + source_path("configs/datasets/coco8.yaml"),
           "datasets_dir=" + datasets, "epochs=1", "imgsz=64", "batch=2", "workers=1", "project=" + project,
           "name=run", "plots=false", "instrument=basic"});
  engine::Trainer trainer(cfg);
  test::nvtx_clear_recording();
  trainer.train();
  const auto records = test::nvtx_recording();
  ASSERT_FALSE(records.empty()) << "the NVTX injection library was not loaded";
  const auto expected = test::expected_epoch_sequence(0, 0, 2);
  EXPECT_EQ(test::nvtx_sequence(records, test::this_thread_tid()), expected);
  // Loader worker threads have their own ranges.
  bool worker_ranges = false;
  for (const auto& r : records)
    if (r.tid != test::this_thread_tid() && r.kind == "push" && (r.message == "load" || r.message == "collate"))
      worker_ranges = true;
  EXPECT_TRUE(worker_ranges);
}
#endif
