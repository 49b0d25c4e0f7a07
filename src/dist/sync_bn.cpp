// SyncBatchNorm forward/backward over a process group (see sync_bn.h).
#include "yolo11/dist/sync_bn.h"

#include <torch/torch.h>

#include <stdexcept>

#include "yolo11/dist/dist.h"

namespace yolo11::dist {

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

struct SyncBnFn : torch::autograd::Function<SyncBnFn> {
  // inputs: x, weight, bias; mean/invstd (float64, [C]) and the global count are computed inside.
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias,
                            at::Tensor running_mean, at::Tensor running_var, double eps, double momentum,
                            int64_t pg_ptr) {
    auto* pg = reinterpret_cast<ProcessGroup*>(pg_ptr);
    const int64_t C = x.size(1);
    const auto xf = x.to(torch::kFloat);
    auto stats = torch::cat({xf.sum({0, 2, 3}, false, torch::kDouble), xf.square().sum({0, 2, 3}, false, torch::kDouble),
                             torch::full({1}, static_cast<double>(x.numel() / C), xf.options().dtype(torch::kDouble))});
    pg->all_reduce_sum_(stats, "all_reduce of the BatchNorm statistics");  // Σx, Σx², count over every rank
    const double n = stats[2 * C].item<double>();
    const auto mean = stats.slice(0, 0, C) / n;
    const auto var = (stats.slice(0, C, 2 * C) / n - mean.square()).clamp_min(0);  // biased, as BatchNorm normalises
    const auto invstd = (var + eps).rsqrt();
    {
      torch::NoGradGuard ng;
      if (running_mean.defined()) {
        running_mean.mul_(1 - momentum).add_(mean.to(running_mean.scalar_type()), momentum);
        running_var.mul_(1 - momentum).add_((var * (n / std::max(n - 1, 1.0))).to(running_var.scalar_type()), momentum);
      }
    }
    const auto shape = std::vector<int64_t>{1, C, 1, 1};
    // y = x·a + b per channel, a = γ·invstd, b = β − μ·a (float32 elementwise; statistics in float64)
    auto a = weight.defined() ? invstd * weight.to(torch::kDouble) : invstd;
    auto b = (weight.defined() ? bias.to(torch::kDouble) : torch::zeros_like(mean)) - mean * a;
    auto y = xf * a.to(torch::kFloat).view(shape) + b.to(torch::kFloat).view(shape);
    ctx->save_for_backward({x, weight, mean, invstd});
    ctx->saved_data["pg"] = pg_ptr;
    ctx->saved_data["n"] = n;
    return y.to(x.scalar_type()).contiguous(x.suggest_memory_format());
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto& x = saved[0];
    const auto& weight = saved[1];
    const auto& mean = saved[2];
    const auto& invstd = saved[3];
    auto* pg = reinterpret_cast<ProcessGroup*>(ctx->saved_data["pg"].toInt());
    const double n = ctx->saved_data["n"].toDouble();
    const int64_t C = x.size(1);
    const auto shape = std::vector<int64_t>{1, C, 1, 1};
    const auto dy = grads[0].to(torch::kFloat);
    const auto xmu = x.to(torch::kFloat) - mean.to(torch::kFloat).view(shape);
    const auto sum_dy = dy.sum({0, 2, 3}, false, torch::kDouble), sum_dy_xmu = (dy * xmu).sum({0, 2, 3}, false, torch::kDouble);
    auto red = torch::cat({sum_dy, sum_dy_xmu});
    pg->all_reduce_sum_(red, "all_reduce of the BatchNorm gradient sums");  // the input gradient needs the global sums
    const auto g_sum_dy = red.slice(0, 0, C), g_sum_dy_xmu = red.slice(0, C, 2 * C);
    const auto w = weight.defined() ? weight.to(torch::kDouble) : torch::ones({C}, dy.options().dtype(torch::kDouble));
    // dx = (dy − mean(dy) − (x−μ)·invstd²·mean(dy·(x−μ)))·invstd·γ, the means over the global batch
    const auto k = (w * invstd).to(torch::kFloat).view(shape);
    const auto c1 = (g_sum_dy / n).to(torch::kFloat).view(shape);
    const auto c2 = (invstd.square() * g_sum_dy_xmu / n).to(torch::kFloat).view(shape);
    auto dx = (dy - c1 - xmu * c2) * k;
    at::Tensor dw, db;
    if (weight.defined()) {  // this rank's share; the gradient all-reduce adds the others'
      dw = (sum_dy_xmu * invstd).to(weight.scalar_type());
      db = sum_dy.to(weight.scalar_type());
    }
    return {dx.to(x.scalar_type()).contiguous(x.suggest_memory_format()), dw, db, at::Tensor(), at::Tensor(),
            at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

}  // namespace

at::Tensor sync_batch_norm(const at::Tensor& x, torch::nn::BatchNorm2dImpl& bn, ProcessGroup& pg) {
  if (x.dim() != 4) throw std::invalid_argument("sync_batch_norm: expected a 4-D (B, C, H, W) input");
  if (!bn.is_training() || !pg.active()) return bn.forward(x);
  if (bn.options.track_running_stats()) {
    torch::NoGradGuard ng;
    bn.num_batches_tracked.add_(1);
  }
  const double momentum = bn.options.momentum().value_or(0.1);
  return SyncBnFn::apply(x, bn.weight, bn.bias, bn.running_mean, bn.running_var, bn.options.eps(), momentum,
                         reinterpret_cast<int64_t>(&pg));
}

}  // namespace yolo11::dist
