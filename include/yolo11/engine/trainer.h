#pragma once
// engine::Trainer: the whole training run, top to bottom in src/engine/trainer.cpp (read it as the spec of a step).
#include <ATen/Tensor.h>

#include <functional>
#include <string>
#include <vector>

#include "yolo11/config/train_config.h"

namespace yolo11::engine {

struct TrainSummary {
  std::string run_dir;
  int64_t epochs_done = 0;
  double best_fitness = 0, final_map50 = 0, final_map50_95 = 0;
  double seconds = 0;
  std::string precision = "float32";  ///< training precision chosen by the AMP policy: float32, bfloat16, float16
  int64_t amp_skipped_steps = 0;       ///< optimizer steps the GradScaler skipped (inf/NaN gradients)
  int64_t nonfinite_skipped_steps = 0; ///< optimizer steps skipped because a loss since the last step was NaN/Inf
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
};

/// For resume=true|PATH: finds the run (true → the newest <project>/*/weights/last.safetensors; PATH → a run dir
/// or a weights file inside one), reloads its args.yaml with `overrides` (only run-control keys may change,
/// config::check_resume_compatible) and returns that config with `resume` set to the run dir. A config with
/// resume=false is returned unchanged. Throws std::runtime_error naming what was looked for when nothing is found.
config::TrainConfig prepare_resume(const config::TrainConfig& cfg, const std::vector<std::string>& overrides);

class Trainer {
 public:
  /// Validates the config against the environment (dataset present, model YAML readable); throws
  /// std::runtime_error with what to do otherwise.
  explicit Trainer(config::TrainConfig cfg, TrainerHooks hooks = {});
  /// Runs every epoch: train, validate, log, checkpoint. Returns what the run achieved.
  TrainSummary train();

 private:
  config::TrainConfig cfg_;
  TrainerHooks hooks_;
};

}  // namespace yolo11::engine
