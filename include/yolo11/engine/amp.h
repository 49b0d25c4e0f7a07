#pragma once
// Mixed precision (AMP) for training: a gradient scaler with the semantics of PyTorch's torch.cuda.amp.GradScaler,
// the start-up check that AMP and float32 agree (like Ultralytics' check_amp), and the CPU bfloat16 capability
// test. The trainer's policy (choose_amp below, docs/recipe.md "AMP"): CUDA → float16 autocast + GradScaler
// when check_amp passes; CPU → bfloat16 autocast without a scaler when the CPU has bf16 instructions; else float32.
#include <ATen/Tensor.h>
#include <c10/core/Device.h>
#include <c10/core/ScalarType.h>

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace torch::optim {
class Optimizer;
}
namespace yolo11::model {
class YOLOImpl;
}

namespace yolo11::engine {

using NamedTensors = std::vector<std::pair<std::string, at::Tensor>>;

struct GradScalerOptions {
  double init_scale = 65536.0;  ///< 2^16, PyTorch's default
  double growth_factor = 2.0;   ///< scale ×= this after `growth_interval` consecutive steps without inf/NaN
  double backoff_factor = 0.5;  ///< scale ×= this on a step with inf/NaN gradients
  int64_t growth_interval = 2000;
  bool enabled = true;  ///< false: identity (scale() returns the loss, unscale_ does nothing, step() always steps)
};

/// Dynamic loss scaling for float16 training (reference: torch.cuda.amp.GradScaler, PyTorch 1.13–2.x).
/// Per optimizer step:
///   scaler.scale(loss).backward();       // (possibly several times: gradient accumulation)
///   scaler.unscale_(params);             // optional, before clipping; at most once per step
///   clip_grad_norm_(params, 10);         // sees true (unscaled) gradients
///   bool stepped = scaler.step(opt);     // unscales if not yet done; skips opt.step() on inf/NaN grads
///   scaler.update();                     // inf/NaN: scale ×= backoff_factor, tracker = 0;
///                                        // else tracker += 1 and, at growth_interval, scale ×= growth_factor
/// The found-inf flag stays on the gradients' device until step() decides (its one host sync). The scale itself
/// is kept on the host as a float32 value (exactly what the reference's float32 scale tensor holds): scaling and
/// unscaling are then scalar multiplies, and update() runs on the host after step() has read the flag.
/// Unscaling multiplies by float32(1 / double(scale)) like the reference. A NaN/Inf check per gradient tensor uses
/// generic ops (any device); on CUDA the reference's fused _amp_foreach_non_finite_check_and_unscale_ is used.
class GradScaler {
 public:
  explicit GradScaler(GradScalerOptions o = {});

  bool enabled() const { return o_.enabled; }
  /// loss · scale (float32 arithmetic; exact for power-of-two scales). Disabled: `loss` unchanged.
  at::Tensor scale(const at::Tensor& loss) const;
  /// Divides every defined gradient of `params` by the scale in place and records whether any element was
  /// inf/NaN (device flag, no host sync). Throws std::logic_error when called twice before update().
  void unscale_(const std::vector<at::Tensor>& params);
  /// Unscales (if unscale_ was not called this step), then calls opt.step() unless inf/NaN gradients were found.
  /// Returns whether the optimizer stepped. Reads the found-inf flag on the host (one sync). Disabled: opt.step().
  bool step(torch::optim::Optimizer& opt);
  /// Adjusts the scale from this step's found-inf flag (see above) and resets the per-step state. A step that
  /// never unscaled leaves the scale as it is (the reference's update() also needs a preceding step()).
  void update();

  /// Current scale (1 when disabled).
  double get_scale() const { return o_.enabled ? static_cast<double>(scale_) : 1.0; }
  /// Consecutive inf/NaN-free steps since the last scale change.
  int64_t growth_tracker() const { return growth_tracker_; }
  /// The current step's found-inf flag (0-d float tensor on the gradients' device, 1 = found); undefined before
  /// unscale_. Reading it on the host syncs.
  const at::Tensor& found_inf() const { return found_inf_; }
  /// Steps skipped because of inf/NaN gradients since construction (or load).
  int64_t skipped_steps() const { return skipped_; }

  /// {"scale": float32 0-d, "growth_tracker": int64 0-d} (for Checkpoint::scaler); empty when disabled.
  NamedTensors state() const;
  /// Restores state(); throws std::runtime_error naming a missing or malformed entry.
  void load(const NamedTensors& state);

 private:
  GradScalerOptions o_;
  float scale_;
  int64_t growth_tracker_ = 0;
  int64_t skipped_ = 0;
  at::Tensor found_inf_;  // this step's flag, undefined until unscale_
  bool unscaled_ = false;
  bool stepped_ = false;  // step() ran this step (update() then has a flag to act on)
  bool found_ = false;    // host copy of found_inf_, valid once stepped_
};

/// Result of a float32-vs-AMP comparison.
struct AmpCheck {
  bool ok = false;
  double max_abs_diff = 0;  ///< in the compared units (see check_amp); +inf when an output is non-finite
  std::string message;      ///< one line: what was compared, the difference, the tolerance, the verdict
};

/// Default tolerances of check_amp, in units of the compared output (box coordinates as a fraction of the image
/// side, class scores as probabilities). float16 (10-bit mantissa): 0.01 — Ultralytics allows 0.5 px on boxes of a
/// 640 px image (0.0008) for a trained model; an untrained model's outputs carry larger rounding noise, and a broken
/// AMP path (NaN, zeros, overflow) differs by O(0.1–1). bfloat16 (7-bit mantissa, 8× the rounding step of float16):
/// 0.05. Measured on yolo11n (random init, 256 px): see docs/recipe.md "AMP".
double default_amp_tolerance(c10::ScalarType dtype);

/// Runs `fn` on `input` in float32 and under autocast to `dtype` on `device_type`, and compares the outputs
/// (both cast to float32): ok when both are finite and max |a − b| ≤ `tol`.
AmpCheck compare_amp(const std::function<at::Tensor(const at::Tensor&)>& fn, const at::Tensor& input,
                     c10::DeviceType device_type, c10::ScalarType dtype, double tol);

/// Ultralytics-like AMP start-up check on the model itself: a fixed synthetic image (1×3×imgsz×imgsz, no RNG drawn)
/// goes through forward_feats in float32 and under `dtype` autocast on `device`, both decoded in float32; box
/// coordinates are divided by imgsz so boxes and scores compare on one scale. The model runs in eval mode without
/// gradients (BN statistics untouched) and its train/eval mode is restored. Tolerance: default_amp_tolerance(dtype).
AmpCheck check_amp(model::YOLOImpl& model, const c10::Device& device, c10::ScalarType dtype, int64_t imgsz = 256);

/// True when the text of /proc/cpuinfo lists a bfloat16 instruction set: x86 `avx512_bf16` or `amx_bf16` flags,
/// ARM `bf16` feature.
bool cpuinfo_has_bf16(const std::string& cpuinfo);
/// cpuinfo_has_bf16 of this machine's /proc/cpuinfo (read once); false when it cannot be read.
bool cpu_supports_bf16();

/// Mixed-precision policy of a training run (docs/recipe.md "AMP").
struct AmpPolicy {
  bool autocast = false;
  c10::ScalarType dtype = c10::ScalarType::Float;  ///< autocast dtype (Half or BFloat16) when `autocast`
  bool scaler = false;  ///< float16 needs loss scaling; bfloat16 has float32's exponent range and does not
  bool warn = false;    ///< amp=true could not be honoured
  std::string line;     ///< the one log line saying what was chosen and why
  /// "float32", "bfloat16" or "float16": the precision the run trains in.
  std::string precision() const;
};

/// The trainer's policy. amp=false → float32. CUDA → float16 autocast + GradScaler when check_amp(float16) passes,
/// else float32. CPU → bfloat16 autocast (no scaler) when the CPU has bf16 instructions and check_amp(bfloat16)
/// passes, else float32. Runs check_amp on `net` (no RNG drawn, BN statistics untouched).
AmpPolicy choose_amp(bool amp, const c10::Device& device, model::YOLOImpl& net);

}  // namespace yolo11::engine
