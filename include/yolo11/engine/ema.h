#pragma once
// Model EMA (Ultralytics ModelEMA): ema = d·ema + (1 − d)·model over every floating-point state entry
// (parameters and BN running stats), d(u) = decay·(1 − exp(−u/tau)) with u the update count, incremented
// before use. Works on (name, tensor) lists so it does not depend on the model classes.
#include <ATen/Tensor.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace yolo11::engine {

using NamedTensors = std::vector<std::pair<std::string, at::Tensor>>;

class ModelEMA {
 public:
  /// Takes a deep copy (detached clones) of `model_state` (e.g. the model's state_dict entries, incl. buffers).
  explicit ModelEMA(const NamedTensors& model_state, double decay = 0.9999, double tau = 2000.0, int64_t updates = 0);

  /// One update from the current model state (same names in the same order; throws std::runtime_error naming
  /// the first mismatch). Integer entries (num_batches_tracked) are not averaged.
  void update(const NamedTensors& model_state);
  /// Decay that the next update will use: d(updates + 1). decay_at(u) = decay·(1 − exp(−u/tau)).
  double decay_at(int64_t u) const;
  /// Decay used by the last update (0 before the first).
  double decay() const { return updates_ > 0 ? decay_at(updates_) : 0.0; }
  int64_t updates() const { return updates_; }
  const NamedTensors& state() const { return ema_; }
  /// Replaces the EMA tensors (resume) and the update count; names must match the current ones.
  void load(const NamedTensors& ema_state, int64_t updates);

 private:
  NamedTensors ema_;
  double decay_, tau_;
  int64_t updates_;
};

}  // namespace yolo11::engine
