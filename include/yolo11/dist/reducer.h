#pragma once
// dist::GradReducer: the gradient all-reduce overlapped with backward, as PyTorch DDP's Reducer does it (docs/dist.md
// "Overlap"). Trainable parameters are grouped into buckets of ≤ bucket_bytes in reverse registration order (the
// order backward produces their gradients). A hook that runs after each parameter's gradient is accumulated marks
// it ready; when every parameter of the next bucket in line is ready, the bucket is flattened and its SUM
// all-reduce starts asynchronously while backward goes on. Buckets start strictly in order, so every rank issues
// the same collectives in the same order. Only the backward that ends an accumulation cycle is reduced (arm()).
#include <ATen/Tensor.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "yolo11/dist/dist.h"

namespace yolo11::dist {

class GradReducer {
 public:
  /// Hooks every parameter of `params` that requires grad. `pg` must outlive the reducer. An inactive group makes
  /// every call a no-op.
  GradReducer(ProcessGroup& pg, const std::vector<at::Tensor>& params, int64_t bucket_bytes = 25 << 20);
  ~GradReducer();
  GradReducer(const GradReducer&) = delete;
  GradReducer& operator=(const GradReducer&) = delete;

  /// The next backward's gradients are reduced as they become ready. Call before that backward, on every rank.
  void arm();
  bool armed() const;

  struct Stats {
    double exposed_s = 0;       ///< seconds finish() waited: the communication backward did not hide
    int64_t buckets = 0;        ///< buckets reduced
    int64_t overlapped = 0;     ///< of them, started during backward (the others started in finish())
  };
  /// After the armed backward, before unscale / clip / step: starts the buckets that did not start (a parameter
  /// without a gradient gets zeros, as all_reduce_gradients does), waits for all of them and copies the sums back
  /// into each .grad (÷ world when `average`). Throws as ProcessGroup's collectives do when a rank is lost.
  Stats finish(bool average);

  int64_t num_buckets() const;

 private:
  struct State;
  std::shared_ptr<State> st_;  // shared with the autograd hooks, which may outlive this object
};

}  // namespace yolo11::dist
