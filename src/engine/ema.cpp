// Model EMA (reference: Ultralytics utils/torch_utils.py ModelEMA).
#include "yolo11/engine/ema.h"

#include <torch/torch.h>

#include <cmath>
#include <stdexcept>

namespace yolo11::engine {

ModelEMA::ModelEMA(const NamedTensors& model_state, double decay, double tau, int64_t updates)
    : decay_(decay), tau_(tau), updates_(updates) {
  torch::NoGradGuard no_grad;
  ema_.reserve(model_state.size());
  for (const auto& [name, t] : model_state) ema_.emplace_back(name, t.detach().clone());
}

double ModelEMA::decay_at(int64_t u) const { return decay_ * (1.0 - std::exp(-static_cast<double>(u) / tau_)); }

void ModelEMA::update(const NamedTensors& model_state) {
  if (model_state.size() != ema_.size())
    throw std::runtime_error("ModelEMA::update: model state has " + std::to_string(model_state.size()) +
                             " entries, the EMA " + std::to_string(ema_.size()) + "; pass the same state list");
  torch::NoGradGuard no_grad;
  ++updates_;
  const double d = decay_at(updates_);
  std::vector<at::Tensor> e, m;
  e.reserve(ema_.size());
  m.reserve(ema_.size());
  for (size_t i = 0; i < ema_.size(); ++i) {
    if (ema_[i].first != model_state[i].first)
      throw std::runtime_error("ModelEMA::update: entry " + std::to_string(i) + " is '" + model_state[i].first +
                               "', expected '" + ema_[i].first + "'");
    if (!ema_[i].second.is_floating_point()) continue;  // num_batches_tracked is not averaged
    e.push_back(ema_[i].second);
    m.push_back(model_state[i].second.detach());
  }
  // Same operations as the reference (v *= d; v += (1 - d) * model_v), as multi-tensor ops: a few fused kernel
  // launches on CUDA instead of two per tensor.
  at::_foreach_mul_(e, d);
  at::_foreach_add_(e, at::_foreach_mul(m, 1.0 - d));
}

void ModelEMA::load(const NamedTensors& ema_state, int64_t updates) {
  if (ema_state.size() != ema_.size())
    throw std::runtime_error("ModelEMA::load: " + std::to_string(ema_state.size()) + " entries given, the EMA has " +
                             std::to_string(ema_.size()));
  torch::NoGradGuard no_grad;
  for (size_t i = 0; i < ema_.size(); ++i) {
    if (ema_state[i].first != ema_[i].first)
      throw std::runtime_error("ModelEMA::load: entry " + std::to_string(i) + " is '" + ema_state[i].first +
                               "', expected '" + ema_[i].first + "'");
    ema_[i].second.copy_(ema_state[i].second);
  }
  updates_ = updates;
}

}  // namespace yolo11::engine
