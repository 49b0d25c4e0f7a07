// LR / momentum / accumulation schedule (reference: Ultralytics BaseTrainer._setup_scheduler and the warmup
// block of BaseTrainer._do_train, 8.4.50).
#include "yolo11/engine/schedule.h"

#include <torch/optim/adam.h>
#include <torch/optim/adamw.h>
#include <torch/optim/sgd.h>

#include <cmath>
#include <cstdio>
#include <stdexcept>

namespace yolo11::engine {

double interp2(double x, double x0, double x1, double y0, double y1) {
  if (x <= x0) return y0;
  if (x >= x1) return y1;
  const double slope = (y1 - y0) / (x1 - x0);
  return slope * (x - x0) + y0;
}

double round_half_even(double x) { return std::nearbyint(x); }  // default FE_TONEAREST = half to even

SchedulerOptions SchedulerOptions::from(const config::TrainConfig& cfg, const OptimizerChoice& choice, int64_t nb) {
  SchedulerOptions o;
  o.epochs = cfg.epochs;
  o.nb = nb;
  o.batch = cfg.batch;
  o.nbs = cfg.nbs;
  o.lrf = cfg.lrf;
  o.cos_lr = cfg.cos_lr;
  o.warmup_epochs = cfg.warmup_epochs;
  o.warmup_momentum = cfg.warmup_momentum;
  o.momentum = cfg.momentum;
  o.warmup_bias_lr = choice.warmup_bias_lr;
  o.initial_lr = choice.lr0;
  return o;
}

Scheduler::Scheduler(torch::optim::Optimizer& opt, const SchedulerOptions& o) : opt_(opt), o_(o) {
  if (o_.epochs < 1 || o_.nb < 1 || o_.batch < 1 || o_.nbs < 1)
    throw std::runtime_error("Scheduler: epochs, nb, batch and nbs must be >= 1 (got epochs=" + std::to_string(o_.epochs) +
                             ", nb=" + std::to_string(o_.nb) + ", batch=" + std::to_string(o_.batch) +
                             ", nbs=" + std::to_string(o_.nbs) + ")");
  for (auto& g : opt_.param_groups()) initial_lr_.push_back(o_.initial_lr > 0 ? o_.initial_lr : g.options().get_lr());
  nw_ = engine::warmup_iterations(o_);
  accumulate_ = initial_accumulate(o_.nbs, o_.batch);
}

int64_t warmup_iterations(const SchedulerOptions& o) {
  if (o.warmup_epochs <= 0) return -1;
  return std::max<int64_t>(static_cast<int64_t>(round_half_even(o.warmup_epochs * static_cast<double>(o.nb))), 100);
}

std::string warmup_warning(const SchedulerOptions& o) {
  if (o.warmup_epochs <= 0 || o.nb < 1) return "";
  const int64_t nw = warmup_iterations(o);
  const double covers = static_cast<double>(nw) / static_cast<double>(o.nb);
  if (covers <= o.warmup_epochs + 1e-9) return "";
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "warmup lasts at least 100 iterations: with %lld batch(es) per epoch that is %.1f epochs, not "
                "warmup_epochs=%g; %s. For small datasets lower batch (more iterations per epoch) or set "
                "warmup_epochs=0",
                static_cast<long long>(o.nb), covers, o.warmup_epochs,
                covers >= static_cast<double>(o.epochs)
                    ? "the whole run is warmup, so lr stays below lr0 (starting from 0) throughout"
                    : "lr ramps up from 0 over all of them");
  return buf;
}

void Scheduler::set_epochs(int64_t epochs) {
  if (epochs < 1) throw std::runtime_error("Scheduler::set_epochs: epochs must be >= 1, got " + std::to_string(epochs));
  o_.epochs = epochs;
}

double Scheduler::lf(int64_t epoch) const {
  const double e = static_cast<double>(epoch), n = static_cast<double>(o_.epochs);
  if (o_.cos_lr) {  // one_cycle(1, lrf, epochs)
    constexpr double kPi = 3.14159265358979323846;  // math.pi
    return std::max((1.0 - std::cos(e * kPi / n)) / 2.0, 0.0) * (o_.lrf - 1.0) + 1.0;
  }
  return std::max(1.0 - e / n, 0.0) * (1.0 - o_.lrf) + o_.lrf;
}

void Scheduler::on_epoch_start(int64_t epoch) {
  auto& groups = opt_.param_groups();
  const double f = lf(epoch);
  for (size_t g = 0; g < groups.size(); ++g) groups[g].options().set_lr(initial_lr_[g] * f);
}

void Scheduler::set_momentum(size_t g, double m) {
  auto& opts = opt_.param_groups()[g].options();
  if (auto* sgd = dynamic_cast<torch::optim::SGDOptions*>(&opts)) sgd->momentum(m);
  // Adam/AdamW groups have no "momentum" entry in the reference, so its momentum warmup leaves them alone.
}

void Scheduler::on_iteration(int64_t ni, int64_t epoch) {
  if (ni > nw_) return;
  const double x = static_cast<double>(ni), x1 = static_cast<double>(nw_);
  accumulate_ = std::max<int64_t>(
      1, static_cast<int64_t>(round_half_even(
             interp2(x, 0.0, x1, 1.0, static_cast<double>(o_.nbs) / static_cast<double>(o_.batch)))));
  auto& groups = opt_.param_groups();
  const double f = lf(epoch);
  for (size_t g = 0; g < groups.size(); ++g) {
    const double start = static_cast<int64_t>(g) == o_.bias_group ? o_.warmup_bias_lr : 0.0;
    groups[g].options().set_lr(interp2(x, 0.0, x1, start, initial_lr_[g] * f));
    set_momentum(g, interp2(x, 0.0, x1, o_.warmup_momentum, o_.momentum));
  }
}

bool Scheduler::should_step(int64_t ni) {
  if (ni - last_step_ >= accumulate_) {
    last_step_ = ni;
    return true;
  }
  return false;
}

std::vector<double> Scheduler::lrs() const {
  std::vector<double> v;
  for (auto& g : opt_.param_groups()) v.push_back(g.options().get_lr());
  return v;
}

std::vector<double> Scheduler::momentums() const {
  std::vector<double> v;
  for (auto& g : opt_.param_groups()) {
    auto& o = g.options();
    if (auto* s = dynamic_cast<torch::optim::SGDOptions*>(&o)) v.push_back(s->momentum());
    else if (auto* a = dynamic_cast<torch::optim::AdamOptions*>(&o)) v.push_back(std::get<0>(a->betas()));
    else if (auto* w = dynamic_cast<torch::optim::AdamWOptions*>(&o)) v.push_back(std::get<0>(w->betas()));
    else v.push_back(std::nan(""));
  }
  return v;
}

}  // namespace yolo11::engine
