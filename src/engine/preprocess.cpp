// The training preprocess: to the device, float / 255 (or a float batch the workers converted), multi_scale
// (engine/preprocess.h).
#include "yolo11/engine/preprocess.h"

#include <torch/nn/functional/upsampling.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "yolo11/engine/inference.h"

namespace yolo11::engine {

data::InputFormat train_input_format(const c10::Device& device) {
  return device.is_cuda() ? data::InputFormat::uint8 : data::InputFormat::float_channels_last;
}

at::Tensor multi_scale(const at::Tensor& images, int64_t imgsz, int64_t stride, data::Rng& rng, double range) {
  if (!(range > 0 && range < 1))
    throw std::invalid_argument("multi_scale: range must be in (0, 1), got " + std::to_string(range));
  const int64_t lo = static_cast<int64_t>(static_cast<double>(imgsz) * (1 - range));
  const int64_t hi = static_cast<int64_t>(static_cast<double>(imgsz) * (1 + range) + static_cast<double>(stride));
  const int64_t sz = std::max(stride, (lo + rng.randint(hi - lo)) / stride * stride);
  const int64_t H = images.size(2), W = images.size(3);
  const double sf = static_cast<double>(sz) / static_cast<double>(std::max(H, W));
  if (sf == 1.0) return images;
  const std::vector<int64_t> ns{
      static_cast<int64_t>(std::ceil(static_cast<double>(H) * sf / static_cast<double>(stride))) * stride,
      static_cast<int64_t>(std::ceil(static_cast<double>(W) * sf / static_cast<double>(stride))) * stride};
  namespace F = torch::nn::functional;
  return F::interpolate(images, F::InterpolateFuncOptions().size(ns).mode(torch::kBilinear).align_corners(false));
}

at::Tensor Preprocess::operator()(const at::Tensor& images, int64_t epoch, int64_t batch_i) const {
  at::Tensor x;
  if (o_.format == data::InputFormat::float_channels_last) {
    if (images.scalar_type() != at::kFloat)
      throw std::invalid_argument(
          "Preprocess: the loader was to deliver float32 images (InputFormat::float_channels_last)");
    x = images.to(o_.device, /*non_blocking=*/true).contiguous(at::MemoryFormat::ChannelsLast);
  } else {
    x = to_input(images, o_.device);  // uint8 → float / 255, channels_last
  }
  if (o_.multi_scale_range > 0) {  // one random size per batch, as Ultralytics' preprocess_batch (boxes are normalized)
    data::Rng rng = data::Rng::for_sample(o_.seed ^ 0x6D756C7469ull, epoch, batch_i);
    x = multi_scale(x, o_.imgsz, o_.stride, rng, o_.multi_scale_range).contiguous(at::MemoryFormat::ChannelsLast);
  }
  return x;
}

}  // namespace yolo11::engine
