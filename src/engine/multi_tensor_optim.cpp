// Multi-tensor AdamW / SGD steps and gradient clipping (include/yolo11/engine/multi_tensor_optim.h).
#include "yolo11/engine/multi_tensor_optim.h"

#include <ATen/ATen.h>
#include <torch/utils.h>
#include <torch/version.h>

#include <cmath>
#include <map>
#include <memory>
#include <stdexcept>

namespace yolo11::engine {
namespace {

// The key of a parameter's state in Optimizer::state(): the TensorImpl pointer (LibTorch 2.x), its string form (1.13).
#if TORCH_VERSION_MAJOR >= 2
void* state_key(const at::Tensor& p) { return p.unsafeGetTensorImpl(); }
#else
std::string state_key(const at::Tensor& p) { return c10::guts::to_string(p.unsafeGetTensorImpl()); }
#endif

// The closure's loss, with gradients on (as LibTorch's optimizers evaluate it); undefined without a closure.
torch::Tensor evaluate(const torch::optim::Optimizer::LossClosure& closure) {
  if (closure == nullptr) return {};
  at::AutoGradMode enable_grad(true);
  return closure();
}

void check_dense(const at::Tensor& grad, const char* who) {
  if (grad.is_sparse()) throw std::invalid_argument(std::string(who) + ": sparse gradients are not supported");
}

}  // namespace

torch::Tensor MultiTensorAdamW::step(LossClosure closure) {
  const torch::Tensor loss = evaluate(closure);
  torch::NoGradGuard no_grad;
  for (auto& group : param_groups_) {
    auto& o = static_cast<torch::optim::AdamWOptions&>(group.options());
    if (o.amsgrad()) throw std::invalid_argument("MultiTensorAdamW: amsgrad=true is not supported");
    // Parameters grouped by their step count (all equal unless some once had no gradient).
    struct Lists {
      std::vector<at::Tensor> p, g, m, v;
    };
    std::map<int64_t, Lists> by_step;
    for (auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      check_dense(p.grad(), "MultiTensorAdamW");
      const auto key = state_key(p);
      auto it = state_.find(key);
      if (it == state_.end()) {
        auto s = std::make_unique<torch::optim::AdamWParamState>();
        s->step(0);
        s->exp_avg(torch::zeros_like(p, at::MemoryFormat::Preserve));
        s->exp_avg_sq(torch::zeros_like(p, at::MemoryFormat::Preserve));
        it = state_.emplace(key, std::move(s)).first;
      }
      auto& s = static_cast<torch::optim::AdamWParamState&>(*it->second);
      s.step(s.step() + 1);
      Lists& l = by_step[s.step()];
      l.p.push_back(p);
      l.g.push_back(p.grad());
      l.m.push_back(s.exp_avg());
      l.v.push_back(s.exp_avg_sq());
    }
    const double beta1 = std::get<0>(o.betas()), beta2 = std::get<1>(o.betas());
    for (auto& [step, l] : by_step) {
      if (o.weight_decay() != 0) at::_foreach_mul_(l.p, 1 - o.lr() * o.weight_decay());
      const double bias_correction1 = 1 - std::pow(beta1, step);
      const double bias_correction2 = 1 - std::pow(beta2, step);
      at::_foreach_mul_(l.m, beta1);
      at::_foreach_add_(l.m, l.g, 1 - beta1);
      at::_foreach_mul_(l.v, beta2);
      at::_foreach_addcmul_(l.v, l.g, l.g, 1 - beta2);
      std::vector<at::Tensor> denom = at::_foreach_sqrt(l.v);
      at::_foreach_div_(denom, std::sqrt(bias_correction2));
      at::_foreach_add_(denom, o.eps());
      at::_foreach_addcdiv_(l.p, l.m, denom, -(o.lr() / bias_correction1));
    }
  }
  return loss;
}

torch::Tensor MultiTensorSGD::step(LossClosure closure) {
  const torch::Tensor loss = evaluate(closure);
  torch::NoGradGuard no_grad;
  for (auto& group : param_groups_) {
    auto& o = static_cast<torch::optim::SGDOptions&>(group.options());
    std::vector<at::Tensor> p, d;
    for (auto& t : group.params()) {
      if (!t.grad().defined()) continue;
      check_dense(t.grad(), "MultiTensorSGD");
      p.push_back(t);
      d.push_back(t.grad());
    }
    if (p.empty()) continue;
    if (o.weight_decay() != 0) d = at::_foreach_add(d, p, o.weight_decay());
    if (o.momentum() != 0) {
      std::vector<at::Tensor> bufs;  // existing momentum buffers, updated together; new ones start as the gradient
      std::vector<at::Tensor> d_old;
      std::vector<at::Tensor> all(p.size());
      for (size_t i = 0; i < p.size(); ++i) {
        const auto key = state_key(p[i]);
        auto it = state_.find(key);
        if (it == state_.end()) {
          auto s = std::make_unique<torch::optim::SGDParamState>();
          s->momentum_buffer(torch::clone(d[i]).detach());
          all[i] = s->momentum_buffer();
          state_.emplace(key, std::move(s));
        } else {
          all[i] = static_cast<torch::optim::SGDParamState&>(*it->second).momentum_buffer();
          bufs.push_back(all[i]);
          d_old.push_back(d[i]);
        }
      }
      if (!bufs.empty()) {
        at::_foreach_mul_(bufs, o.momentum());
        at::_foreach_add_(bufs, d_old, 1 - o.dampening());
      }
      if (o.nesterov()) d = at::_foreach_add(d, all, o.momentum());
      else d = all;
    }
    at::_foreach_add_(p, d, -1 * o.lr());
  }
  return loss;
}

at::Tensor clip_grad_norm(const std::vector<at::Tensor>& params, double max_norm) {
  torch::NoGradGuard no_grad;
  std::vector<at::Tensor> grads;
  for (const auto& p : params)
    if (p.grad().defined()) grads.push_back(p.grad());
  if (grads.empty()) return {};
  std::vector<at::Tensor> norms;
  if (grads.front().is_cuda()) {
    norms = at::_foreach_norm(grads, 2);  // one fused reduction pass over all tensors (the reference's path on CUDA)
  } else {
    norms.reserve(grads.size());  // the CPU runs _foreach_norm tensor by tensor anyway; this is LibTorch's own order
    for (const auto& g : grads) norms.push_back(g.norm(2));
  }
  const at::Tensor total = norms.size() == 1 ? norms[0] : at::stack(norms).norm(2);
  const at::Tensor coef = (max_norm / (total + 1e-6)).clamp_max(1.0);
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 1)
  at::_foreach_mul_(grads, coef);
#else
  for (auto& g : grads) g.mul_(coef);
#endif
  return total;
}

}  // namespace yolo11::engine
