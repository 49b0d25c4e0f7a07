#pragma once
// engine::Trainer: the whole training run, top to bottom in src/engine/trainer.cpp (read it as the spec of a step).
#include <string>
#include <vector>

#include "yolo11/config/train_config.h"

namespace yolo11::engine {

struct TrainSummary {
  std::string run_dir;
  int64_t epochs_done = 0;
  double best_fitness = 0, final_map50 = 0, final_map50_95 = 0;
  double seconds = 0;
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
  explicit Trainer(config::TrainConfig cfg);
  /// Runs every epoch: train, validate, log, checkpoint. Returns what the run achieved.
  TrainSummary train();

 private:
  config::TrainConfig cfg_;
};

}  // namespace yolo11::engine
