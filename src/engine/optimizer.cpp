// Parameter groups and optimizer choice (reference: Ultralytics BaseTrainer.build_optimizer, 8.4.50).
#include "yolo11/engine/optimizer.h"

#include <spdlog/spdlog.h>
#include <torch/optim/adam.h>
#include <torch/optim/adamw.h>
#include <torch/optim/sgd.h>

#include <cmath>
#include <sstream>
#include <stdexcept>

#include "yolo11/engine/multi_tensor_optim.h"
#include "yolo11/engine/schedule.h"
#include "yolo11/core/strings.h"

namespace yolo11::engine {

namespace {

std::string last_component(const std::string& name, std::string* prefix) {
  const auto dot = name.rfind('.');
  if (dot == std::string::npos) {
    if (prefix) prefix->clear();
    return name;
  }
  if (prefix) *prefix = name.substr(0, dot);
  return name.substr(dot + 1);
}

using core::ends_with;

void add(ParamGroups& g, int which, const std::string& name, const torch::Tensor& p) {
  if (which == 2) g.bias.push_back(p), g.bias_names.push_back(name);
  else if (which == 1) g.norm.push_back(p), g.norm_names.push_back(name);
  else g.weights.push_back(p), g.weight_names.push_back(name);
}

}  // namespace

ParamGroups build_param_groups(const std::vector<std::pair<std::string, torch::Tensor>>& named_params,
                               const std::vector<std::string>& norm_modules) {
  ParamGroups g;
  for (const auto& [name, p] : named_params) {
    std::string module;
    const std::string leaf = last_component(name, &module);
    int which = 0;
    if (leaf == "bias") {
      which = 2;
    } else {
      for (const auto& nm : norm_modules)
        if (module == nm || ends_with(module, "." + nm)) which = 1;
    }
    add(g, which, name, p);
  }
  return g;
}

ParamGroups build_param_groups(const torch::nn::Module& model) {
  ParamGroups g;
  for (const auto& item : model.named_modules("", /*include_self=*/true)) {
    const bool is_norm = item.value()->name().find("Norm") != std::string::npos;
    for (const auto& p : item.value()->named_parameters(/*recurse=*/false)) {
      const std::string full = item.key().empty() ? p.key() : item.key() + "." + p.key();
      add(g, p.key() == "bias" ? 2 : (is_norm ? 1 : 0), full, p.value());
    }
  }
  return g;
}

int64_t initial_accumulate(int64_t nbs, int64_t batch) {
  return std::max<int64_t>(static_cast<int64_t>(round_half_even(static_cast<double>(nbs) / static_cast<double>(batch))), 1);
}

double scaled_weight_decay(double weight_decay, int64_t batch, int64_t accumulate, int64_t nbs) {
  return weight_decay * static_cast<double>(batch) * static_cast<double>(accumulate) / static_cast<double>(nbs);
}

int64_t auto_rule_iterations(int64_t n_images, int64_t batch, int64_t nbs, int64_t epochs) {
  const int64_t denom = std::max(batch, nbs);
  return ((n_images + denom - 1) / denom) * epochs;
}

OptimizerChoice build_optimizer(const ParamGroups& groups, const config::TrainConfig& cfg, int64_t nc,
                                int64_t iterations, double weight_decay_scaled) {
  OptimizerChoice c;
  c.name = cfg.optimizer;
  c.lr0 = cfg.lr0;
  c.momentum = cfg.momentum;
  c.warmup_bias_lr = cfg.warmup_bias_lr;
  std::ostringstream why;
  if (cfg.optimizer == "auto") {
    if (iterations > 10000) {
      c.name = "SGD";
      c.lr0 = 0.01;
      c.momentum = 0.9;
      why << "optimizer=auto: " << iterations << " iterations > 10000 -> SGD(lr=0.01, momentum=0.9) "
          << "(the reference picks MuSGD here, which is not implemented; SGD is what YOLO11 was trained with)";
    } else {
      c.name = "AdamW";
      c.lr0 = std::round(0.002 * 5.0 / (4.0 + static_cast<double>(nc)) * 1e6) / 1e6;
      c.momentum = 0.9;
      why << "optimizer=auto: " << iterations << " iterations <= 10000 -> AdamW(lr=" << c.lr0
          << " = round(0.002*5/(4+nc), 6) for nc=" << nc << ", momentum=0.9); lr0 and momentum are ignored";
    }
    c.warmup_bias_lr = 0.0;
    why << ", warmup_bias_lr=0";
  } else {
    why << "optimizer=" << cfg.optimizer << " as configured (lr0=" << c.lr0 << ", momentum=" << c.momentum << ")";
  }

  const double wd = weight_decay_scaled;
  std::vector<torch::optim::OptimizerParamGroup> pg;
  auto make = [&](const std::vector<torch::Tensor>& params, double decay) {
    if (c.name == "SGD") {
      auto o = std::make_unique<torch::optim::SGDOptions>(c.lr0);
      o->momentum(c.momentum).nesterov(true).weight_decay(decay);
      pg.emplace_back(params, std::move(o));
    } else if (c.name == "Adam") {
      auto o = std::make_unique<torch::optim::AdamOptions>(c.lr0);
      o->betas({c.momentum, 0.999}).eps(1e-8).weight_decay(decay);
      pg.emplace_back(params, std::move(o));
    } else if (c.name == "AdamW") {
      auto o = std::make_unique<torch::optim::AdamWOptions>(c.lr0);
      o->betas({c.momentum, 0.999}).eps(1e-8).weight_decay(decay);
      pg.emplace_back(params, std::move(o));
    } else {
      throw std::runtime_error("build_optimizer: optimizer '" + c.name +
                               "' is not implemented; use SGD, Adam, AdamW or auto (config key 'optimizer')");
    }
  };
  make(groups.weights, wd);
  make(groups.norm, 0.0);
  make(groups.bias, 0.0);

  if (c.name == "SGD") {
    c.opt = std::make_unique<MultiTensorSGD>(pg, torch::optim::SGDOptions(c.lr0).momentum(c.momentum).nesterov(true));
  } else if (c.name == "Adam") {
    c.opt = std::make_unique<torch::optim::Adam>(pg, torch::optim::AdamOptions(c.lr0).betas({c.momentum, 0.999}));
  } else {
    c.opt = std::make_unique<MultiTensorAdamW>(pg, torch::optim::AdamWOptions(c.lr0).betas({c.momentum, 0.999}).weight_decay(0.0));
  }
  c.why = why.str();
  spdlog::info("optimizer: {}", c.why);
  spdlog::info("optimizer: {}(lr={}, momentum={}) with parameter groups {} weight(decay={}), {} norm(decay=0.0), "
               "{} bias(decay=0.0)",
               c.name, c.lr0, c.momentum, groups.weights.size(), wd, groups.norm.size(), groups.bias.size());
  return c;
}

}  // namespace yolo11::engine
