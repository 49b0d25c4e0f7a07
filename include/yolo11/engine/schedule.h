#pragma once
// Learning-rate / momentum / accumulation schedule of Ultralytics BaseTrainer: per-epoch LambdaLR (linear or
// cosine to lrf, stepped at the start of each epoch) and per-iteration warmup over
// nw = max(round(warmup_epochs · nb), 100) iterations (or none when warmup_epochs = 0).
#include <torch/optim/optimizer.h>

#include <cstdint>
#include <string>
#include <vector>

#include "yolo11/config/train_config.h"
#include "yolo11/engine/optimizer.h"

namespace yolo11::engine {

struct SchedulerOptions {
  int64_t epochs = 100, nb = 1, batch = 16, nbs = 64;  ///< nb = iterations (batches) per epoch
  double lrf = 0.01;
  bool cos_lr = false;
  double warmup_epochs = 3.0, warmup_momentum = 0.8;
  double momentum = 0.937;        ///< warmup momentum target (the configured momentum, as in the reference)
  double warmup_bias_lr = 0.1;    ///< effective value (0 for optimizer=auto)
  int64_t bias_group = 2;         ///< index of the bias group (warms up from warmup_bias_lr)
  double initial_lr = 0;          ///< every group's base lr; 0 = read each group's lr from the optimizer
                                  ///< at construction (then construct before loading optimizer state)
  static SchedulerOptions from(const config::TrainConfig& cfg, const OptimizerChoice& choice, int64_t nb);
};

/// Ultralytics' warmup lasts at least 100 iterations: on a small dataset that is many epochs (8 images at batch 16:
/// 100 epochs of 1 batch), while lr (except the bias group's) starts from 0. Returns a warning saying how many
/// epochs warmup really covers when that exceeds warmup_epochs (and when it covers the whole run), else "".
std::string warmup_warning(const SchedulerOptions& o);
/// nw = max(round_half_even(warmup_epochs · nb), 100), or −1 when warmup_epochs ≤ 0 (the Scheduler's warmup length).
int64_t warmup_iterations(const SchedulerOptions& o);

/// Drives lr / momentum of an optimizer's groups. The base lr of each group is SchedulerOptions::initial_lr
/// (the choice's lr0 when built from an OptimizerChoice, so it is right after a resume too). Call on_epoch_start(e) before the first batch of epoch e, on_iteration(ni, e) before each
/// forward (ni = i + nb·e), should_step(ni) after backward.
class Scheduler {
 public:
  Scheduler(torch::optim::Optimizer& opt, const SchedulerOptions& o);
  Scheduler(torch::optim::Optimizer& opt, const config::TrainConfig& cfg, const OptimizerChoice& choice, int64_t nb)
      : Scheduler(opt, SchedulerOptions::from(cfg, choice, nb)) {}

  /// lf(e) = max(1 − e/epochs, 0)·(1 − lrf) + lrf, or the cosine one-cycle 1 → lrf when cos_lr.
  double lf(int64_t epoch) const;
  /// LambdaLR step at the start of an epoch: every group's lr = initial_lr · lf(epoch).
  void on_epoch_start(int64_t epoch);
  /// Warmup (ni ≤ nw): lr from (warmup_bias_lr for the bias group, 0 otherwise) to initial_lr·lf(epoch),
  /// momentum (SGD only) from warmup_momentum to momentum, accumulate = max(1, round(interp(ni, [0,nw], [1, nbs/batch]))).
  /// No-op after warmup.
  void on_iteration(int64_t ni, int64_t epoch);
  /// True when ni − last_step ≥ accumulate; then records ni as the last step.
  bool should_step(int64_t ni);
  /// What should_step(ni) will answer, without recording anything (the DDP reducer arms before backward).
  bool will_step(int64_t ni) const { return ni - last_step_ >= accumulate_; }

  /// Changes the number of epochs of lf (Ultralytics recomputes epochs when `time` is set).
  void set_epochs(int64_t epochs);

  int64_t accumulate() const { return accumulate_; }
  int64_t warmup_iterations() const { return nw_; }  ///< nw, or −1 without warmup
  bool in_warmup(int64_t ni) const { return ni <= nw_; }
  int64_t last_step() const { return last_step_; }
  void set_last_step(int64_t ni) { last_step_ = ni; }
  std::vector<double> initial_lrs() const { return initial_lr_; }
  std::vector<double> lrs() const;        ///< current lr per group
  std::vector<double> momentums() const;  ///< SGD momentum / Adam beta1 per group

 private:
  void set_momentum(size_t g, double m);
  torch::optim::Optimizer& opt_;
  SchedulerOptions o_;
  std::vector<double> initial_lr_;
  int64_t nw_ = -1, accumulate_ = 1, last_step_ = -1;
};

/// numpy.interp for two points: x ≤ x0 → y0, x ≥ x1 → y1, else slope·(x − x0) + y0 (same rounding as numpy).
double interp2(double x, double x0, double x1, double y0, double y1);
/// Round half to even (numpy.round / Python round to an integer).
double round_half_even(double x);

}  // namespace yolo11::engine
