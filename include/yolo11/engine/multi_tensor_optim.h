#pragma once
// The optimizer step as multi-tensor (`_foreach_`) operations, as PyTorch's own optimizers run on CUDA by default
// (foreach=None → foreach there) and so the reference's. LibTorch's C++ AdamW and SGD loop over the parameters with
// ~9 and ~5 tensor operations each: for yolo11n's 256 parameter tensors that is ~2,300 kernel launches per step,
// 10–33 ms of an 85–120 ms step on an H200 at batch 16 (docs/gpu.md). A `_foreach_` operation covers a whole
// parameter group in a few launches on CUDA; on the CPU, ATen runs it tensor by tensor with the same arithmetic, so
// the results there are bitwise those of torch::optim::AdamW / SGD (tests/engine/test_optimizer.cpp).
#include <ATen/core/Tensor.h>
#include <torch/optim/adamw.h>
#include <torch/optim/sgd.h>

#include <vector>

namespace yolo11::engine {

/// torch::optim::AdamW with a multi-tensor step: the same options, the same per-parameter state
/// (torch::optim::AdamWParamState: checkpoints and engine/recovery.cpp read it as before) and the same element-wise
/// arithmetic (decoupled weight decay p·(1 − lr·wd), moments, bias corrections, p − lr/bc1 · m / (√v/√bc2 + eps)).
/// Parameters without a gradient are skipped, as there. Throws std::invalid_argument on step() for amsgrad=true
/// (not used by the trainer) and for a sparse gradient.
class MultiTensorAdamW : public torch::optim::AdamW {
 public:
  using torch::optim::AdamW::AdamW;
  torch::Tensor step(LossClosure closure = nullptr) override;
};

/// torch::optim::SGD with a multi-tensor step: same options and torch::optim::SGDParamState (momentum buffer cloned
/// from the first update's gradient), weight decay added to the gradient, dampening, nesterov. Throws
/// std::invalid_argument on step() for a sparse gradient.
class MultiTensorSGD : public torch::optim::SGD {
 public:
  using torch::optim::SGD::SGD;
  torch::Tensor step(LossClosure closure = nullptr) override;
};

/// Scales the gradients of `params` (those defined) so that their global L2 norm is at most `max_norm`, as
/// torch.nn.utils.clip_grad_norm_ (norm of the per-tensor norms; coefficient max_norm / (norm + 1e-6) clamped to 1).
/// Returns the total norm before clipping as a 0-dim float tensor on the gradients' device, without reading it
/// back: LibTorch's torch::nn::utils::clip_grad_norm_ returns a double and so waits for the GPU every step. An
/// undefined tensor when no parameter has a gradient.
at::Tensor clip_grad_norm(const std::vector<at::Tensor>& params, double max_norm);

}  // namespace yolo11::engine
