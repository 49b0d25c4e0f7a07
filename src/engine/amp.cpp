// GradScaler, the AMP start-up check and the CPU bfloat16 test (include/yolo11/engine/amp.h).
#include "yolo11/engine/amp.h"

#include <fmt/format.h>
#include <torch/torch.h>

#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>
#include <stdexcept>

#include "yolo11/core/compat.h"
#include "yolo11/model/yolo.h"

namespace yolo11::engine {

// ---- GradScaler ------------------------------------------------------------------------------------------------
GradScaler::GradScaler(GradScalerOptions o) : o_(o), scale_(static_cast<float>(o.init_scale)) {
  if (!(o_.init_scale > 0) || !(o_.growth_factor > 1) || !(o_.backoff_factor > 0 && o_.backoff_factor < 1) ||
      o_.growth_interval < 1)
    throw std::invalid_argument(fmt::format("GradScaler: need init_scale > 0, growth_factor > 1, 0 < backoff_factor "
                                            "< 1, growth_interval ≥ 1 (got {}, {}, {}, {})", o_.init_scale,
                                            o_.growth_factor, o_.backoff_factor, o_.growth_interval));
}

at::Tensor GradScaler::scale(const at::Tensor& loss) const {
  if (!o_.enabled) return loss;
  return loss * static_cast<double>(scale_);
}

void GradScaler::unscale_(const std::vector<at::Tensor>& params) {
  if (!o_.enabled) return;
  if (unscaled_) throw std::logic_error("GradScaler::unscale_ called twice in one step (call update() after step())");
  std::vector<at::Tensor> grads;
  for (const auto& p : params)
    if (p.defined() && p.grad().defined()) grads.push_back(p.grad());
  unscaled_ = true;
  if (grads.empty()) {
    found_inf_ = torch::zeros({}, torch::kFloat);
    return;
  }
  // The reference computes inv_scale = scale.double().reciprocal().float().
  const float inv = static_cast<float>(1.0 / static_cast<double>(scale_));
  torch::NoGradGuard ng;
  found_inf_ = torch::zeros({}, grads.front().options().dtype(torch::kFloat));
  if (grads.front().is_cuda()) {
    // One fused kernel (the reference's); all our gradients are float32 on one device, as it requires.
    auto inv_t = torch::full({}, inv, grads.front().options().dtype(torch::kFloat));
    at::_amp_foreach_non_finite_check_and_unscale_(grads, found_inf_, inv_t);
    return;
  }
  // Generic ops: per tensor "any element non-finite" then the in-place unscale.
  std::vector<at::Tensor> bad;
  bad.reserve(grads.size());
  for (auto& g : grads) {
    bad.push_back(torch::isfinite(g).all().logical_not());
    g.mul_(static_cast<double>(inv));
  }
  found_inf_ = torch::stack(bad).any().to(torch::kFloat);
}

bool GradScaler::step(torch::optim::Optimizer& opt) {
  if (!o_.enabled) {
    opt.step();
    return true;
  }
  if (stepped_) throw std::logic_error("GradScaler::step called twice in one step (call update() after step())");
  if (!unscaled_) {
    std::vector<at::Tensor> params;
    for (const auto& g : opt.param_groups())
      for (const auto& p : g.params()) params.push_back(p);
    unscale_(params);
  }
  stepped_ = true;
  found_ = found_inf_.item<float>() != 0.0f;  // the one host sync of a step
  if (found_) {
    ++skipped_;
    return false;
  }
  opt.step();
  return true;
}

void GradScaler::update() {
  if (!o_.enabled) return;
  if (stepped_) {
    // Reference (_amp_update_scale_): float32 arithmetic on the scale, int32 tracker.
    if (found_) {
      scale_ = scale_ * static_cast<float>(o_.backoff_factor);
      growth_tracker_ = 0;
    } else if (growth_tracker_ + 1 == o_.growth_interval) {
      const float grown = scale_ * static_cast<float>(o_.growth_factor);
      if (std::isfinite(grown)) scale_ = grown;  // the reference never grows the scale to inf
      growth_tracker_ = 0;
    } else {
      ++growth_tracker_;
    }
  }
  unscaled_ = stepped_ = found_ = false;
  found_inf_ = at::Tensor();
}

NamedTensors GradScaler::state() const {
  if (!o_.enabled) return {};
  return {{"scale", torch::full({}, scale_, torch::kFloat)},
          {"growth_tracker", torch::full({}, growth_tracker_, torch::kLong)}};
}

void GradScaler::load(const NamedTensors& state) {
  at::Tensor s, g;
  for (const auto& [k, t] : state) {
    if (k == "scale") s = t;
    else if (k == "growth_tracker") g = t;
  }
  if (!s.defined() || s.numel() != 1 || !g.defined() || g.numel() != 1)
    throw std::runtime_error("GradScaler::load: the scaler state needs one-element 'scale' and 'growth_tracker' "
                             "tensors (checkpoint entries scaler/scale, scaler/growth_tracker)");
  const float v = s.to(torch::kFloat).item<float>();
  if (!std::isfinite(v) || v <= 0) throw std::runtime_error(fmt::format("GradScaler::load: scale {} is not > 0", v));
  scale_ = v;
  growth_tracker_ = g.to(torch::kLong).item<int64_t>();
  unscaled_ = stepped_ = found_ = false;
  found_inf_ = at::Tensor();
}

// ---- AMP check -------------------------------------------------------------------------------------------------
double default_amp_tolerance(c10::ScalarType dtype) { return dtype == c10::ScalarType::BFloat16 ? 0.05 : 0.01; }

AmpCheck compare_amp(const std::function<at::Tensor(const at::Tensor&)>& fn, const at::Tensor& input,
                     c10::DeviceType device_type, c10::ScalarType dtype, double tol) {
  torch::NoGradGuard ng;
  const at::Tensor ref = fn(input).to(torch::kFloat);
  at::Tensor amp;
  {
    compat::AutocastGuard ac(device_type, true, dtype);
    amp = fn(input);
  }
  amp = amp.to(torch::kFloat);
  AmpCheck r;
  const std::string what = fmt::format("{} autocast vs float32 on {}", c10::toString(dtype),
                                       c10::DeviceTypeName(device_type, /*lower_case=*/true));
  if (ref.sizes() != amp.sizes()) {
    r.max_abs_diff = std::numeric_limits<double>::infinity();
    r.message = fmt::format("{}: output shapes differ", what);
    return r;
  }
  const bool ref_finite = torch::isfinite(ref).all().item<bool>();
  const bool amp_finite = torch::isfinite(amp).all().item<bool>();
  if (!ref_finite || !amp_finite) {
    r.max_abs_diff = std::numeric_limits<double>::infinity();
    r.message = fmt::format("{}: the {} output holds NaN/Inf", what, amp_finite ? "float32" : "AMP");
    return r;
  }
  r.max_abs_diff = ref.numel() > 0 ? (ref - amp).abs().max().item<double>() : 0.0;
  r.ok = r.max_abs_diff <= tol;
  r.message = fmt::format("{}: max |diff| {:.3g} {} tolerance {:.3g}", what, r.max_abs_diff, r.ok ? "≤" : ">", tol);
  return r;
}

AmpCheck check_amp(model::YOLOImpl& model, const c10::Device& device, c10::ScalarType dtype, int64_t imgsz) {
  // A fixed, smooth, structured image (no RNG: the check must not move the training run's random stream).
  auto opts = torch::TensorOptions().dtype(torch::kFloat).device(device);
  const auto y = torch::linspace(0, 1, imgsz, opts).view({imgsz, 1});
  const auto x = torch::linspace(0, 1, imgsz, opts).view({1, imgsz});
  const auto r = 0.5 + 0.5 * torch::sin(12.0 * x + 5.0 * y);
  const auto g = 0.5 + 0.5 * torch::cos(9.0 * y * x + 3.0 * x);
  const auto b = ((x - 0.5).square() + (y - 0.5).square() < 0.08).to(torch::kFloat);  // a disc
  const auto img = torch::stack({r, g, b}).unsqueeze(0).contiguous(torch::MemoryFormat::ChannelsLast);

  const bool was_training = model.is_training();
  model.eval();
  const double side = static_cast<double>(imgsz);
  auto fn = [&](const at::Tensor& in) {
    auto feats = model.forward_feats(in);
    for (auto& f : feats) f = f.to(torch::kFloat);
    // Decode (DFL conv, anchors) in float32 as the loss does: autocast off for it, restored after.
    struct Off {
      c10::DeviceType t;
      bool prev;
      explicit Off(c10::DeviceType d) : t(d), prev(compat::is_autocast_enabled(d)) { compat::set_autocast_enabled(d, false); }
      ~Off() { compat::set_autocast_enabled(t, prev); }
    } off(device.type());
    auto out = model.decode(feats);
    return torch::cat({out.slice(1, 0, 4) / side, out.slice(1, 4)}, 1);
  };
  AmpCheck res;
  try {
    res = compare_amp(fn, img, device.type(), dtype, default_amp_tolerance(dtype));
  } catch (const std::exception& e) {
    res = AmpCheck{false, std::numeric_limits<double>::infinity(),
                   fmt::format("{} autocast failed on {}: {}", c10::toString(dtype), device.str(), e.what())};
  }
  model.train(was_training);
  res.message = fmt::format("AMP check (yolo11 forward, {}×{} image, boxes/imgsz and scores): {}", imgsz, imgsz,
                            res.message);
  return res;
}

// ---- CPU bfloat16 ----------------------------------------------------------------------------------------------
bool cpuinfo_has_bf16(const std::string& cpuinfo) {
  std::istringstream in(cpuinfo);
  std::string line;
  while (std::getline(in, line)) {
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string key = line.substr(0, colon);
    key.erase(key.find_last_not_of(" \t") + 1);
    if (key != "flags" && key != "Features") continue;  // x86 flags, ARM Features
    std::istringstream words(line.substr(colon + 1));
    std::string w;
    while (words >> w)
      if (w == "avx512_bf16" || w == "amx_bf16" || w == "bf16") return true;
  }
  return false;
}

bool cpu_supports_bf16() {
  static const bool has = [] {
    std::ifstream in("/proc/cpuinfo");
    if (!in) return false;
    std::stringstream ss;
    ss << in.rdbuf();
    return cpuinfo_has_bf16(ss.str());
  }();
  return has;
}

std::string AmpPolicy::precision() const {
  return autocast ? (dtype == torch::kHalf ? "float16" : "bfloat16") : "float32";
}

// On this project's avx512_bf16 dev CPU a yolo11n training step is ~20% faster in bfloat16: docs/recipe.md.
AmpPolicy choose_amp(bool amp, const c10::Device& device, model::YOLOImpl& net) {
  AmpPolicy p;
  if (!amp) {
    p.line = "amp=false: float32 training";
    return p;
  }
  if (device.is_cuda()) {
    const AmpCheck chk = check_amp(net, device, torch::kHalf);
    if (!chk.ok) {
      p.warn = true;
      p.line = "amp=true, but float16 autocast disagrees with float32 on this device: training in float32 (amp off). " +
               chk.message;
      return p;
    }
    p.autocast = p.scaler = true;
    p.dtype = torch::kHalf;
    p.line = "amp=true: CUDA float16 autocast + GradScaler (dynamic loss scaling from 2^16). " + chk.message;
    return p;
  }
  if (!cpu_supports_bf16()) {
    p.warn = true;
    p.line = "amp=true: this CPU has no bfloat16 instructions (no avx512_bf16/amx_bf16/bf16 in /proc/cpuinfo): "
             "training in float32 (amp off)";
    return p;
  }
  const AmpCheck chk = check_amp(net, device, torch::kBFloat16);
  if (!chk.ok) {
    p.warn = true;
    p.line = "amp=true, but bfloat16 autocast disagrees with float32 on this CPU: training in float32 (amp off). " +
             chk.message;
    return p;
  }
  p.autocast = true;
  p.dtype = torch::kBFloat16;
  p.line = "amp=true: CPU bfloat16 autocast (the CPU has bf16 instructions), no loss scaling (bfloat16 has "
           "float32's range); amp=false trains in float32. " + chk.message;
  return p;
}

}  // namespace yolo11::engine
