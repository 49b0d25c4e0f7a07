// engine::resolve_batch / fit_batch (include/yolo11/engine/autobatch.h). Reference: Ultralytics utils/autobatch.py.
#include "yolo11/engine/autobatch.h"

#include <spdlog/fmt/fmt.h>
#include <torch/torch.h>

#include <cmath>

#include "yolo11/compat.h"
#include "yolo11/engine/inference.h"
#include "yolo11/model/yolo.h"

#ifdef YOLO11_HAS_CUDA
#include <ATen/cuda/CUDAContext.h>
#endif

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

std::string resolve_batch(config::TrainConfig& cfg, const std::string& device_str) {
  if (cfg.batch_fraction <= 0) return "";
  const double fraction = cfg.batch_fraction;
  cfg.batch_fraction = 0;
  const torch::Device device = select_device(device_str);
  if (!device.is_cuda()) {
    cfg.batch = 16;
    return fmt::format("AutoBatch (batch={}) sizes the batch to a fraction of CUDA device memory; device={} has none to "
                       "fill, so training uses batch=16 (Ultralytics' CPU default). Pass batch=N to choose.",
                       fraction == 0.6 ? std::string("-1") : fmt::format("{}", fraction), device.str());
  }
#ifdef YOLO11_HAS_CUDA
  const int idx = device.index() < 0 ? 0 : device.index();
  const double total = static_cast<double>(at::cuda::getDeviceProperties(idx)->totalGlobalMem);
  std::vector<std::pair<int64_t, double>> samples;
  {
    model::ModelOptions mo;
    mo.yaml = model::resolve_model_yaml(cfg.model);
    mo.scale = cfg.model_scale;
    mo.nc = 80;
    model::YOLO net(mo);
    net->to(device);
    model::to_channels_last(*net);
    net->train();
    compat::synchronize(idx);
    const double base = static_cast<double>(compat::memory_allocated(idx));
    for (int64_t b : {1, 2, 4, 8, 16}) {
      try {
        compat::reset_peak_memory(idx);
        auto x = torch::rand({b, 3, cfg.imgsz, cfg.imgsz}, torch::TensorOptions().device(device))
                     .contiguous(torch::MemoryFormat::ChannelsLast);
        {
          compat::AutocastGuard ac(device.type(), cfg.amp, torch::kHalf);
          auto feats = net->forward_feats(x);
          torch::Tensor s = torch::zeros({}, x.options());
          for (const auto& f : feats) s = s + f.sum().to(torch::kFloat);
          s.backward();
        }
        compat::synchronize(idx);
        samples.emplace_back(b, static_cast<double>(compat::peak_memory_allocated(idx)) - base);
        net->zero_grad();
      } catch (const std::exception&) {  // out of memory at this probe: fit what ran
        break;
      }
    }
  }
  torch::manual_seed(cfg.seed);  // the probe's model init drew from the default generator
  const AutoBatchFit f = fit_batch(samples, total, fraction, 16);
  cfg.batch = f.batch;
  if (!f.fitted)
    return fmt::format("AutoBatch: {}; using batch=16", f.note);
  return fmt::format("AutoBatch: {:.0f}% of {:.1f} GiB on cuda:{} → batch={} (fit {:.1f} MiB + {:.1f} MiB/image over "
                     "{} probe batches)", 100 * fraction, total / (1 << 30), idx, f.batch, f.intercept_bytes / (1 << 20),
                     f.slope_bytes / (1 << 20), samples.size());
#else
  cfg.batch = 16;
  return "AutoBatch: this build has no CUDA; using batch=16";
#endif
}

}  // namespace yolo11::engine
