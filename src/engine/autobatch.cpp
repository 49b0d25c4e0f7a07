// engine::resolve_batch / fit_batch (include/yolo11/engine/autobatch.h). Reference: Ultralytics utils/autobatch.py.
#include "yolo11/engine/autobatch.h"

#include <spdlog/fmt/fmt.h>
#include <torch/torch.h>

#include <cmath>

#include "yolo11/core/compat.h"
#include "yolo11/engine/amp.h"
#include "yolo11/io/pt_checkpoint.h"
#include "yolo11/loss/detection_loss.h"
#include "yolo11/model/yolo.h"


namespace yolo11::engine {

AutoBatchFit fit_batch(const std::vector<std::pair<int64_t, double>>& samples, double free_bytes, double fraction,
                       int64_t fallback) {
  AutoBatchFit f;
  f.batch = fallback;
  if (samples.size() < 2) {
    f.note = "fewer than 2 probe batches ran";
    return f;
  }
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  const double n = static_cast<double>(samples.size());
  for (const auto& [b, y] : samples) {
    const double x = static_cast<double>(b);
    sx += x, sy += y, sxx += x * x, sxy += x * y;
  }
  const double den = n * sxx - sx * sx;
  if (den <= 0) {
    f.note = "the probe batches are all the same size";
    return f;
  }
  f.slope_bytes = (n * sxy - sx * sy) / den;
  f.intercept_bytes = (sy - f.slope_bytes * sx) / n;
  if (!(f.slope_bytes > 0)) {
    f.note = "memory did not grow with the batch";
    return f;
  }
  const double b = std::floor((free_bytes * fraction - f.intercept_bytes) / f.slope_bytes);
  if (!(b >= 1 && b <= 1024)) {
    f.note = fmt::format("the fit gives batch {:.0f}, outside [1, 1024]", b);
    return f;
  }
  f.batch = static_cast<int64_t>(b);
  f.fitted = true;
  return f;
}

std::string resolve_batch(config::TrainConfig& cfg, const c10::Device& device) {
  if (cfg.batch_fraction <= 0) return "";
  const double fraction = cfg.batch_fraction;
  cfg.batch_fraction = 0;
  if (!device.is_cuda()) {
    cfg.batch = 16;
    return fmt::format("AutoBatch (batch={}) sizes the batch to a fraction of CUDA device memory; device={} has none to "
                       "fill, so training uses batch=16 (Ultralytics' CPU default). Pass batch=N to choose.",
                       fraction == 0.6 ? std::string("-1") : fmt::format("{}", fraction), device.str());
  }
#ifdef YOLO11_HAS_CUDA
  // The run's own device (core/device.h: this rank's GPU under DDP), made current by the device plan.
  const int idx = device.index() < 0 ? 0 : device.index();
  compat::synchronize(idx);
  const compat::MemoryInfo mem0 = compat::memory_info(idx);
  std::vector<std::pair<int64_t, double>> samples;
  std::string precision = "float32";
  double constant_bytes = 0;
  {
    model::ModelOptions mo;
    // YOLOImpl reads yolo11n.yaml-style names, then resolves the file; model=x.pt (an Ultralytics checkpoint) is the
    // YOLO11 graph at its scale
    mo.yaml = io::is_pt_path(cfg.model) ? "configs/models/yolo11.yaml" : cfg.model;
    mo.scale = cfg.model_scale;
    mo.nc = 80;
    model::YOLO net(mo);
    net->to(device);
    model::to_channels_last(*net);
    // Probe in the precision the run will train in: the same AMP check the trainer makes (check_amp), so a device
    // where float16 fails is probed in float32 instead of the lighter float16.
    const AmpPolicy amp = choose_amp(cfg.amp, device, *net);
    precision = amp.precision();
    net->train();
    loss::DetectionLoss criterion(mo.nc, net->strides(), net->reg_max());
    // What the step holds besides activations and gradients, allocated for the whole run: the EMA copy of every
    // parameter and buffer, and the optimizer state (Adam's two moments; SGD needs one, so this errs on the safe side).
    for (const auto& p : net->parameters()) constant_bytes += 3.0 * static_cast<double>(p.nbytes());
    for (const auto& b : net->buffers()) constant_bytes += static_cast<double>(b.nbytes());
    compat::synchronize(idx);
    const double base = static_cast<double>(compat::memory_info(idx).reserved);
    for (int64_t b : {1, 2, 4, 8, 16}) {
      try {
        compat::reset_peak_memory(idx);
        auto x = torch::rand({b, 3, cfg.imgsz, cfg.imgsz}, torch::TensorOptions().device(device))
                     .contiguous(torch::MemoryFormat::ChannelsLast);
        // Loss and assigner included (Ultralytics' profile_ops with max_num_obj): kProbeTargets boxes per image.
        const int64_t n = b * kAutoBatchProbeTargets;
        auto bidx = torch::arange(b, torch::kLong).repeat_interleave(kAutoBatchProbeTargets);
        auto cls = torch::randint(mo.nc, {n}, torch::kLong);
        auto xy = torch::rand({n, 2}) * 0.8 + 0.1;
        auto wh = torch::rand({n, 2}) * 0.2 + 0.02;
        auto boxes = torch::cat({xy, wh}, 1);
        {
          compat::AutocastGuard ac(device.type(), amp.autocast, amp.dtype);
          auto feats = net->forward_feats(x);
          auto out = criterion(feats, bidx, cls, boxes);
          out.total.backward();
        }
        compat::synchronize(idx);
        // Reserved, not allocated: the caching allocator's blocks are what the device no longer has free.
        samples.emplace_back(b, static_cast<double>(compat::memory_info(idx).peak_reserved) - base);
        net->zero_grad();
      } catch (const std::exception&) {  // out of memory at this probe: fit what ran
        break;
      }
    }
  }
  torch::manual_seed(cfg.seed);  // the probe's model init and targets drew from the default generator
  // Free memory as the driver reports it before the probe (other processes' use counted), less what the run holds
  // for its whole length besides the step itself.
  const double free_bytes = static_cast<double>(mem0.free) - constant_bytes;
  AutoBatchFit f = fit_batch(samples, free_bytes, fraction, 16);
  cfg.batch = f.batch;
  if (!f.fitted) return fmt::format("AutoBatch: {}; using batch=16", f.note);
  return fmt::format("AutoBatch: {:.0f}% of {:.1f} GiB free (of {:.1f} GiB) on cuda:{}, {} with loss, EMA and optimizer "
                     "state → batch={} (fit {:.1f} MiB + {:.1f} MiB/image over {} probe batches)", 100 * fraction,
                     static_cast<double>(mem0.free) / (1 << 30), static_cast<double>(mem0.total) / (1 << 30), idx,
                     precision, f.batch, f.intercept_bytes / (1 << 20), f.slope_bytes / (1 << 20), samples.size());
#else
  cfg.batch = 16;
  return "AutoBatch: this build has no CUDA; using batch=16";
#endif
}

}  // namespace yolo11::engine
