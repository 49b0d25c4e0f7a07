#pragma once
// From a loader batch to the network input, in one place (Ultralytics: DetectionTrainer.preprocess_batch, the image
// to the device as float / 255, then multi_scale). The trainer's h2d stage runs it (engine/trainer.cpp); it also says
// which input format the training loader delivers (engine/data_setup.cpp), so the conversion is decided once.
#include <ATen/Tensor.h>
#include <c10/core/Device.h>

#include <cstdint>

#include "yolo11/data/loader.h"

namespace yolo11::engine {

/// The training loader's input format on `device` (data::LoaderOptions::input): on the CPU, float32 channels_last
/// converted in the workers (the trainer thread then only computes); on CUDA, uint8 in pinned memory, converted on
/// the device after an asynchronous copy.
data::InputFormat train_input_format(const c10::Device& device);

/// Ultralytics multi_scale: a random size in [(1 − range)·imgsz, (1 + range)·imgsz + stride) rounded down to the
/// stride (range 0.5 = the classic multi_scale=True); returns the batch images (float, B×3×H×W) bilinearly resized
/// so the long side is that size (each side a multiple of stride), or unchanged. Boxes are normalized and need no
/// change. Throws std::invalid_argument when range is outside (0, 1).
at::Tensor multi_scale(const at::Tensor& images, int64_t imgsz, int64_t stride, data::Rng& rng, double range = 0.5);

/// The training preprocess: the loader's images in `format` → float32 [B, 3, H, W] in [0, 1] on `device`,
/// channels_last, and with `multi_scale_range` > 0 resized to one random size per (epoch, batch), drawn from
/// (seed, epoch, batch) so a resumed run draws the same sizes.
class Preprocess {
 public:
  struct Options {
    c10::Device device{c10::kCPU};
    data::InputFormat format = data::InputFormat::uint8;
    double multi_scale_range = 0;  ///< 0 = off (config key multi_scale)
    int64_t imgsz = 640, stride = 32;
    uint64_t seed = 0;
  };
  explicit Preprocess(Options o) : o_(o) {}
  /// Throws std::invalid_argument when `images` is not in the format given (uint8, or float32 for
  /// float_channels_last).
  at::Tensor operator()(const at::Tensor& images, int64_t epoch, int64_t batch_i) const;
  const Options& options() const { return o_; }

 private:
  Options o_;
};

}  // namespace yolo11::engine
