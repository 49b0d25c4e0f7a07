// GradReducer: bucketed gradient all-reduce started from post-accumulation hooks during backward (see reducer.h).
#include "yolo11/dist/reducer.h"

#include <torch/csrc/autograd/utils/lambda_post_hook.h>
#include <torch/torch.h>

#include <chrono>
#include <mutex>
#include <string>
#include <utility>

namespace yolo11::dist {

struct GradReducer::State {
  ProcessGroup* pg = nullptr;
  std::vector<at::Tensor> params;                    // trainable, registration order
  std::vector<std::vector<size_t>> buckets;          // parameter indices, buckets in backward order
  std::vector<size_t> bucket_of;                     // parameter → bucket
  // Kept alive: the hooks live on them (std::shared_ptr<Node> in LibTorch 1.13, c10::intrusive_ptr in newer ones).
  std::vector<decltype(torch::autograd::impl::grad_accumulator(std::declval<const at::Tensor&>()))> accumulators;
  std::mutex m;
  bool armed = false;
  std::vector<char> ready;                           // per parameter, this backward
  std::vector<size_t> pending;                       // per bucket: parameters not ready yet
  size_t next = 0;                                   // next bucket to start (strict order)
  int64_t overlapped = 0;
  std::vector<at::Tensor> flat;                      // per bucket, the buffer being reduced
  std::vector<PendingWork> work;

  // Starts bucket b: flattens its gradients (zeros for a parameter without one) into one buffer.
  void start(size_t b) {
    std::vector<at::Tensor> parts;
    for (size_t i : buckets[b]) {
      at::Tensor& p = params[i];
      if (!p.grad().defined()) p.mutable_grad() = torch::zeros_like(p);
      parts.push_back(p.grad().reshape({-1}));
    }
    flat[b] = torch::cat(parts);
    work[b] = pg->all_reduce_sum_async(flat[b], "all_reduce of gradient bucket " + std::to_string(b) + " of " +
                                                   std::to_string(buckets.size()));
  }
  // Called (under m) when parameter i's gradient is final for this backward.
  void mark_ready(size_t i) {
    if (!armed || ready[i]) return;
    ready[i] = 1;
    --pending[bucket_of[i]];
    while (next < buckets.size() && pending[next] == 0) {
      start(next++);
      ++overlapped;
    }
  }
};

GradReducer::GradReducer(ProcessGroup& pg, const std::vector<at::Tensor>& params, int64_t bucket_bytes)
    : st_(std::make_shared<State>()) {
  State& s = *st_;
  s.pg = &pg;
  if (!pg.active()) return;
  for (const auto& p : params)
    if (p.requires_grad()) s.params.push_back(p);
  // Buckets in reverse registration order (backward reaches the last layers first), split by size and dtype.
  std::vector<size_t> cur;
  int64_t bytes = 0;
  for (size_t k = s.params.size(); k-- > 0;) {
    const auto& p = s.params[k];
    const int64_t b = p.numel() * static_cast<int64_t>(p.element_size());
    if (!cur.empty() && (bytes + b > bucket_bytes || s.params[cur.back()].scalar_type() != p.scalar_type() ||
                         s.params[cur.back()].device() != p.device())) {
      s.buckets.push_back(cur);
      cur.clear();
      bytes = 0;
    }
    cur.push_back(k);
    bytes += b;
  }
  if (!cur.empty()) s.buckets.push_back(cur);
  s.bucket_of.assign(s.params.size(), 0);
  for (size_t b = 0; b < s.buckets.size(); ++b)
    for (size_t i : s.buckets[b]) s.bucket_of[i] = b;
  s.flat.resize(s.buckets.size());
  s.work.resize(s.buckets.size());
  s.ready.assign(s.params.size(), 0);
  s.pending.assign(s.buckets.size(), 0);
  std::weak_ptr<State> weak = st_;
  for (size_t i = 0; i < s.params.size(); ++i) {
    auto acc = torch::autograd::impl::grad_accumulator(s.params[i]);
    if (!acc) continue;
    acc->add_post_hook(std::make_unique<torch::autograd::utils::LambdaPostHook>(
        [weak, i](const torch::autograd::variable_list& outputs, const torch::autograd::variable_list&) {
          if (auto st = weak.lock()) {
            std::lock_guard<std::mutex> lk(st->m);
            st->mark_ready(i);
          }
          return outputs;
        }));
    s.accumulators.push_back(std::move(acc));
  }
}

GradReducer::~GradReducer() = default;

void GradReducer::arm() {
  State& s = *st_;
  if (!s.pg->active()) return;
  std::lock_guard<std::mutex> lk(s.m);
  s.armed = true;
  std::fill(s.ready.begin(), s.ready.end(), 0);
  for (size_t b = 0; b < s.buckets.size(); ++b) s.pending[b] = s.buckets[b].size();
  s.next = 0;
  s.overlapped = 0;
}

bool GradReducer::armed() const {
  std::lock_guard<std::mutex> lk(st_->m);
  return st_->armed;
}

int64_t GradReducer::num_buckets() const { return static_cast<int64_t>(st_->buckets.size()); }

GradReducer::Stats GradReducer::finish(bool average) {
  State& s = *st_;
  Stats out;
  if (!s.pg->active()) return out;
  torch::NoGradGuard ng;
  {
    std::lock_guard<std::mutex> lk(s.m);
    if (!s.armed) {  // not armed (e.g. a caller that never overlaps): everything starts here
      s.next = 0;
      s.overlapped = 0;
    }
    out.overlapped = s.overlapped;
    while (s.next < s.buckets.size()) s.start(s.next++);  // parameters that got no gradient, or never armed
    s.armed = false;
  }
  const auto t0 = std::chrono::steady_clock::now();
  for (auto& w : s.work) w.wait();
  out.exposed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double inv = 1.0 / static_cast<double>(s.pg->world());
  for (size_t b = 0; b < s.buckets.size(); ++b) {
    if (average) s.flat[b].mul_(inv);
    int64_t off = 0;
    for (size_t i : s.buckets[b]) {
      at::Tensor g = s.params[i].grad();
      const int64_t n = g.numel();
      g.copy_(s.flat[b].slice(0, off, off + n).view(g.sizes()));
      off += n;
    }
    s.flat[b] = at::Tensor();
  }
  out.buckets = static_cast<int64_t>(s.buckets.size());
  return out;
}

}  // namespace yolo11::dist
