#pragma once
// dist::sync_batch_norm: BatchNorm whose batch statistics are those of the global batch across all ranks, as
// torch.nn.SyncBatchNorm (sync_bn=true; docs/dist.md "SyncBatchNorm"). Forward: one all-reduce of each channel's
// (Σx, Σx², count) in float64; normalises with the global mean and biased variance, updates the running statistics
// with the unbiased one (BatchNorm's momentum). Backward: one all-reduce of (Σdy, Σdy·(x−μ)) for the input gradient;
// the weight and bias gradients are this rank's own (the gradient all-reduce sums them, as DDP does).
#include <ATen/Tensor.h>

namespace torch::nn {
class BatchNorm2dImpl;
}

namespace yolo11::dist {

class ProcessGroup;

/// x: (B, C, H, W) float (any memory format); returns the normalised, affine-transformed x in x's dtype and layout.
/// In eval mode, or with an inactive group, it is `bn`'s own forward. Every rank must call it for the same layers
/// in the same order (each call is a collective). Throws std::invalid_argument for a non-4-D input.
at::Tensor sync_batch_norm(const at::Tensor& x, torch::nn::BatchNorm2dImpl& bn, ProcessGroup& pg);

}  // namespace yolo11::dist
