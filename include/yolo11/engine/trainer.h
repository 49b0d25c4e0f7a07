#pragma once
// engine::Trainer: one training run in the phases of Ultralytics' BaseTrainer: build_run (src/engine/run.cpp),
// then train_epoch → train_step per batch → validate_and_save per epoch (src/engine/trainer.cpp: read train_step as
// the spec of a step), firing callbacks (include/yolo11/engine/callbacks.h) at Ultralytics' events.
#include <ATen/Tensor.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "yolo11/config/train_config.h"
#include "yolo11/engine/callbacks.h"

namespace yolo11::engine {

struct TrainSummary {
  std::string run_dir;
  int64_t epochs_done = 0;
  double best_fitness = 0, final_map50 = 0, final_map50_95 = 0;
  double seconds = 0;
  std::string precision = "float32";  ///< training precision chosen by the AMP policy: float32, bfloat16, float16
  int64_t amp_skipped_steps = 0;       ///< optimizer steps the GradScaler skipped (inf/NaN gradients)
  int64_t nonfinite_skipped_steps = 0; ///< optimizer steps skipped because a loss since the last step was NaN/Inf
  int64_t nonfinite_recoveries = 0;    ///< epochs re-run from their good state after non-finite losses or weights
  int64_t oom_retries = 0;             ///< first-epoch restarts with the batch halved after out-of-memory errors
  int64_t batch = 0;                   ///< the batch the run ended with (lower than asked after oom_retries)
  bool weights_identical = true;       ///< DDP: final weights bitwise equal on every rank (checked by all_reduce)
  std::string weights_hash;            ///< DDP: this rank's dist::weights_hash of the final weights (hex); "" at world 1
  int interrupted = 0;                 ///< the stop signal (SIGINT, SIGTERM; engine/interrupt.h) that ended the run, 0 if none
  int64_t interrupted_epoch = 0;       ///< 1-based epoch it stopped in (not done) and the global step it stopped before
  int64_t interrupted_step = 0;
};

/// Test and instrumentation hooks (all optional).
struct TrainerHooks {
  /// Called with each step's total loss right after the loss stage (epoch and batch index 0-based); the returned
  /// tensor is used in its place (tests inject a NaN here).
  std::function<at::Tensor(int64_t epoch, int64_t i, const at::Tensor& loss)> on_loss;
  /// Called when the run enters a stage that the out-of-memory message names: "loader" (before each training
  /// batch is fetched), "validation", "checkpoint" (epoch 0-based). Tests throw std::bad_alloc here.
  std::function<void(const char* stage, int64_t epoch)> on_stage;
};

/// For resume=true|PATH: finds the run (true → the newest <project>/*/weights/last.safetensors; PATH → a run dir
/// or a weights file inside one), reloads its args.yaml with `overrides` (only run-control keys may change,
/// config::check_resume_compatible) and returns that config with `resume` set to the run dir. A config with
/// resume=false is returned unchanged. Throws std::runtime_error naming what was looked for when nothing is found.
config::TrainConfig prepare_resume(const config::TrainConfig& cfg, const std::vector<std::string>& overrides);

class Trainer {
 public:
  /// Keeps the config; registers the default callbacks (console logger, plots, results, checkpoints). Nothing is
  /// built before train().
  explicit Trainer(config::TrainConfig cfg, TrainerHooks hooks = {});
  ~Trainer();
  Trainer(const Trainer&) = delete;
  Trainer& operator=(const Trainer&) = delete;

  /// Registers `cb` for `e`; it runs after the default callbacks and earlier registrations.
  void add_callback(Event e, Callback cb) { callbacks_.add(e, std::move(cb)); }
  Callbacks& callbacks() { return callbacks_; }

  /// Builds the run and runs every epoch: train, validate, log, checkpoint. Returns what the run achieved.
  /// Non-finite losses: a step is skipped; 5 skipped optimizer steps in a row, an epoch that ends on a skipped step or
  /// with non-finite weights re-runs the epoch from its good state (model ← EMA weights, EMA, optimizer); the 4th
  /// such recovery without a clean epoch in between throws std::runtime_error naming the step, the losses and what to
  /// try. c10::OutOfMemoryError in the first epoch (world 1): the batch is halved and the epoch restarted, at most 3
  /// times. Any other out-of-memory error (std::bad_alloc, LibTorch's allocators) throws std::runtime_error naming the
  /// stage, the memory in use, batch/imgsz/cache/workers, what to lower and the last checkpoint (left intact).
  /// Throws std::runtime_error on bad config or data.
  TrainSummary train();

 private:
  TrainSummary run_all();
  void train_epoch();
  /// Starts the train loader on `epoch`, once (closing mosaic first when `epoch` is in the close_mosaic phase).
  /// train() calls it for the next epoch before validating this one, so the workers build the next epoch's first
  /// batches while validation runs (no loader wait at the epoch boundary); train_epoch's own call is then a no-op.
  void start_loader_epoch(int64_t epoch);
  /// One pass over the epoch's batches from its start; sets EpochState::restart when it must start over.
  void run_epoch_pass(int64_t first_step, std::chrono::steady_clock::time_point t_start);
  /// After a pass that set EpochState::restart: restores the good state (non-finite; throws after 3 recoveries) or
  /// halves the batch and rebuilds the loaders, optimizer and scheduler (out of memory).
  void prepare_restart();
  void enter(int stage);  ///< records the RunStage (recovery.h) for the out-of-memory message; fires on_stage
  /// One batch: load → h2d → forward → loss → backward → [allreduce → optimizer → EMA]. False when the loader
  /// ran out of batches early.
  bool train_step(int64_t i);
  /// After train_epoch: true when a stop signal (engine/interrupt.h) cut the epoch short (world 1); records it in
  /// the summary and says how to resume. The partial epoch gets no validation, results row or checkpoint.
  bool stopped_mid_epoch();
  /// max_steps > 0 and this process has run that many steps (benchmarks: yolo11-sweep's children).
  bool max_steps_reached() const;
  /// Optimizer step of train_step (after gradient accumulation): skip on non-finite loss, else unscale, clip,
  /// step, update the scaler, zero the gradients. Returns whether the optimizer stepped.
  bool optimizer_step();
  void validate_and_save();
  /// DDP: checks that the final weights are bitwise equal on every rank (TrainSummary::weights_identical).
  void check_replicas();

  config::TrainConfig cfg_;
  TrainerHooks hooks_;
  Callbacks callbacks_;
  std::unique_ptr<Run> run_;
  int stage_ = 0;  ///< RunStage of the run's current work
};

}  // namespace yolo11::engine
