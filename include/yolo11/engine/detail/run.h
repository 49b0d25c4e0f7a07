#pragma once
// engine::Run: everything one training run holds (Ultralytics BaseTrainer's attributes), built by build_run() in
// src/engine/run.cpp; the Trainer's phases (src/engine/trainer.cpp) and the callbacks work on it.
#include <torch/torch.h>

#include <array>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "yolo11/config/train_config.h"
#include "yolo11/core/cpus.h"
#include "yolo11/core/device.h"
#include "yolo11/data/dataset_info.h"
#include "yolo11/data/loader.h"
#include "yolo11/dist/dist.h"
#include "yolo11/dist/reducer.h"
#include "yolo11/engine/amp.h"
#include "yolo11/engine/calibration.h"
#include "yolo11/engine/callbacks.h"
#include "yolo11/engine/preprocess.h"
#include "yolo11/engine/ema.h"
#include "yolo11/engine/optimizer.h"
#include "yolo11/engine/detail/recovery.h"
#include "yolo11/engine/results.h"
#include "yolo11/engine/schedule.h"
#include "yolo11/engine/trainer.h"
#include "yolo11/engine/validator.h"
#include "yolo11/instrument/profiler.h"
#include "yolo11/loss/detection_loss.h"
#include "yolo11/model/yolo.h"

namespace yolo11::engine {

using Clock = std::chrono::steady_clock;

/// Per-epoch accumulators of the training loop (reset by Trainer::train_epoch).
struct EpochState {
  Clock::time_point t_start;
  at::Tensor loss_sum;        ///< [3] double on the device: Σ loss items of the epoch's steps
  at::Tensor bad_since_step;  ///< 0-d bool on the device: a non-finite loss since the last optimizer step
  int64_t seen_steps = 0;
  int64_t amp_skipped = 0;               ///< GradScaler skips this epoch (inf/NaN gradients)
  std::array<double, 3> tloss{0, 0, 0};  ///< mean losses; final at on_train_epoch_end
  double t_train = 0;                    ///< seconds the epoch's training part took
  double t_val = 0;                      ///< seconds its validation took (0 when not validated)
  /// Why the epoch must start over (Trainer::train_epoch): non-finite losses or weights (after the good state is
  /// restored), or an out-of-memory error in the first epoch (after the batch is halved).
  enum class Restart { none, nonfinite, out_of_memory };
  Restart restart = Restart::none;
  std::string restart_why;            ///< the step and losses, or the allocator's message
  int64_t nonfinite_steps = 0;        ///< optimizer steps of this epoch skipped for non-finite losses
  at::Tensor last_total, last_items;  ///< the latest step's loss and [3] items, on the device (read only on failure)
};

struct Run {
  // ---- environment ----
  config::TrainConfig& cfg;  ///< the Trainer's config (resume may have replaced it before the run was built)
  dist::Env denv;
  bool main_rank = true;  ///< rank 0 writes the run dir, logs, checkpoints and validates
  bool resuming = false;
  std::string run_dir;             ///< empty on ranks > 0
  ComputeCalibration calibration;  ///< the setting's expected compute (engine/calibration.h); step_s 0 = none
  /// Times two of the run's steps when no cached figure exists (engine/calibration.h); null = none to take.
  std::unique_ptr<InRunCalibration> calibrator;
  core::CpuBudget cpus;  ///< online / affinity / cgroup quota → usable cores (core/cpus.h)
  int cores = 1, threads = 1;
  core::DevicePlan plan;  ///< the device of this process and why (core/device.h); `device` and `cuda` mirror it
  torch::Device device{torch::kCPU};
  bool cuda = false;
  std::unique_ptr<dist::ProcessGroup> pg;      ///< inactive at world 1: every collective is a no-op
  std::unique_ptr<dist::GradReducer> reducer;  ///< DDP with ddp_overlap: bucket all-reduces started during backward
  Clock::time_point t_run;
  double time_before = 0;  ///< s of training the resumed run had done (its results.csv `time` at the checkpoint)

  // ---- data ----
  data::DatasetInfo info;
  int64_t nc = 0;
  std::vector<std::string> names;
  std::shared_ptr<data::Loader> train_loader, val_loader;  ///< val_loader on rank 0 only
  int64_t nb = 0;                                          ///< batches per epoch
  std::optional<data::Batch> synthetic_batch;  ///< synthetic_data=true: the first batch, reused by every step

  // ---- model, loss, optimization ----
  model::ModelOptions mo;
  model::YOLO net{nullptr};
  std::optional<loss::DetectionLoss> criterion;
  std::optional<Preprocess> preprocess;  ///< the h2d stage: loader batch → network input (engine/preprocess.h)
  OptimizerChoice opt;
  std::unique_ptr<Scheduler> sched;
  std::unique_ptr<ModelEMA> ema;
  AmpPolicy amp;
  GradScaler scaler{GradScalerOptions{65536.0, 2.0, 0.5, 2000, /*enabled=*/false}};
  std::unique_ptr<instrument::Profiler> prof;
  std::string loader_table;        ///< the latest epoch's loader-part table (report_loader), for the run summary
  int64_t loader_read_bytes = -1;  ///< /proc/self/io read_bytes when the loader's statistics last started over
  /// The epoch's loader statistics, taken when its last batch was consumed (before the next epoch's batches are
  /// built during validation, which would otherwise count in this epoch); report_loader logs them.
  std::optional<data::LoaderReport> loader_report;
  std::optional<Validator> validator;  ///< rank 0 only
  ResultsCsv results{""};              ///< appended (written) by rank 0 only
  const Callbacks* callbacks = nullptr;
  TrainerHooks hooks;

  // ---- progress ----
  int64_t start_epoch = 0;
  int64_t epoch = 0;
  int64_t global_step = 0;
  double best_fitness = -1;
  int64_t patience_left = 0;
  int nan_streak = 0;
  std::optional<GoodState> good;  ///< the state the current epoch started from (keep_good_state)
  int nan_recoveries = 0;         ///< recoveries since the last epoch without non-finite losses (at most 3)
  int oom_retries = 0;            ///< first-epoch batch halvings after out-of-memory errors (at most 3)
  bool mosaic_closed = false;
  int64_t loader_epoch = -1;  ///< the epoch the train loader was last started on (Trainer::start_loader_epoch)
  bool stop = false;
  EpochState ep;
  TrainSummary summary;

  explicit Run(config::TrainConfig& c) : cfg(c) {}
  /// A context for `e` filled with what every event has (config, run dir, rank, epoch, step, lrs).
  TrainContext context(Event e);
  /// Builds the context for `e` (see context()), lets `fill` add event-specific fields, and fires the callbacks.
  void fire(Event e, const std::function<void(TrainContext&)>& fill = {});
};

/// After an out-of-memory error in the first epoch, with cfg.batch already lowered: rebuilds what depends on the
/// batch as build_run made it: the train loader (on the same dataset unless rect, whose shapes depend on the batch),
/// the val loader (batch × 2) and validator, the optimizer (weight decay and the auto choice depend on the batch;
/// fresh moments, as the reference) and the scheduler (accumulation nbs / batch, warmup iterations from the new
/// batches per epoch); saves args.yaml with the new batch (resume reads it). Model and EMA weights are kept.
void rebuild_for_batch(Run& run);

/// Builds the whole run in the order that fixes every random draw (run dir + logging, threads, seed, device,
/// process group, loaders, model, loss, optimizer, scheduler, EMA, resume(), AMP policy, profiler, validator),
/// firing on_pretrain_routine_start (after logging is set up) and on_pretrain_routine_end. Throws
/// std::runtime_error with what to do on bad config (batch not a multiple of WORLD_SIZE, resume past epochs, ...).
std::unique_ptr<Run> build_run(config::TrainConfig& cfg, const Callbacks& callbacks, TrainerHooks hooks);

/// resume=PATH (already resolved by prepare_resume): loads the run's last checkpoint into the model, EMA, optimizer,
/// RNG, scheduler and results; sets start_epoch and best_fitness. Returns the saved loss-scaler state (applied once
/// the AMP policy is known). Throws std::runtime_error when no usable checkpoint exists or epochs are already done.
NamedTensors resume(Run& run);

}  // namespace yolo11::engine
