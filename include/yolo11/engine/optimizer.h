#pragma once
// Optimizer construction as Ultralytics BaseTrainer.build_optimizer: three parameter groups
// (0 weights with decay, 1 norm-layer weights without, 2 biases without) and the optimizer choice,
// including optimizer=auto.
#include <torch/nn/module.h>
#include <torch/optim/optimizer.h>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "yolo11/config/train_config.h"

namespace yolo11::engine {

/// Parameters split into the three Ultralytics groups, in model order. Frozen parameters are included
/// (they get no gradient, so the optimizer leaves them alone), as in the reference.
struct ParamGroups {
  std::vector<torch::Tensor> weights, norm, bias;          ///< group 0, 1, 2
  std::vector<std::string> weight_names, norm_names, bias_names;
};

/// From named parameters (e.g. model->named_parameters(), names like "model.0.bn.weight").
/// A parameter whose last name component is "bias" → bias; else, if its owning module path (the name without
/// the last component) equals an entry of `norm_modules` or ends with "." + entry → norm; else → weights.
/// For YOLO11 every norm layer is a `bn` child of Conv, so the default {"bn"} reproduces the reference
/// (yolo11n: 88 / 81 / 87 tensors).
ParamGroups build_param_groups(const std::vector<std::pair<std::string, torch::Tensor>>& named_params,
                               const std::vector<std::string>& norm_modules = {"bn"});

/// From a module tree: norm = direct weights of modules whose class name contains "Norm" (BatchNorm*, GroupNorm,
/// LayerNorm, InstanceNorm*), as Ultralytics does; bias and weights as above.
ParamGroups build_param_groups(const torch::nn::Module& model);

/// The optimizer and what was chosen. `lr0`, `momentum` and `warmup_bias_lr` are the effective values
/// (optimizer=auto replaces the configured ones); the Scheduler takes them from here.
struct OptimizerChoice {
  std::unique_ptr<torch::optim::Optimizer> opt;  ///< groups 0 weights, 1 norm, 2 bias
  std::string name;                              ///< "SGD" | "Adam" | "AdamW"
  double lr0 = 0, momentum = 0, warmup_bias_lr = 0;
  std::string why;                               ///< one line: the choice and its reason (also logged)
};

/// Builds the optimizer. `iterations` = ceil(n_train_images / max(batch, nbs)) · epochs (the auto rule);
/// `weight_decay_scaled` = weight_decay · batch · accumulate / nbs (see scaled_weight_decay()).
/// optimizer=auto: iterations ≤ 10000 → AdamW, lr = round(0.002·5/(4+nc), 6), betas (0.9, 0.999);
/// otherwise SGD lr 0.01 momentum 0.9 (the reference picks its MuSGD there, which is not implemented);
/// both set warmup_bias_lr to 0. SGD uses nesterov; Adam/AdamW use betas (momentum, 0.999), eps 1e-8.
/// Throws std::runtime_error for an unknown optimizer name.
OptimizerChoice build_optimizer(const ParamGroups& groups, const config::TrainConfig& cfg, int64_t nc,
                                int64_t iterations, double weight_decay_scaled);

/// max(round(nbs / batch), 1), round-half-to-even.
int64_t initial_accumulate(int64_t nbs, int64_t batch);
/// weight_decay · batch · accumulate / nbs.
double scaled_weight_decay(double weight_decay, int64_t batch, int64_t accumulate, int64_t nbs);
/// ceil(n_images / max(batch, nbs)) · epochs.
int64_t auto_rule_iterations(int64_t n_images, int64_t batch, int64_t nbs, int64_t epochs);

}  // namespace yolo11::engine
