#pragma once
// The one mapping from a TrainConfig to the data pipeline's options, shared by the trainer and yolo11-val.
#include <c10/core/Device.h>

#include <memory>
#include <string>
#include <vector>

#include "yolo11/config/train_config.h"
#include "yolo11/data/dataset_info.h"
#include "yolo11/data/loader.h"

namespace yolo11::engine {

/// The augmentation gains of the Hyperparameters section (hsv_*, degrees, translate, scale, shear, perspective,
/// flips, mosaic, mixup, cutmix, bgr) at `imgsz` pixels; `augment` = false gives the validation chain (load_image +
/// letterbox), `rect` rectangular batches.
data::AugmentOptions augment_options(const config::Hyperparameters& hyp, int64_t imgsz, bool augment, bool rect);
/// The run's: the training chain (`train`, rect = cfg.rect) or the validation chain (rect batches when `val_rect`).
data::AugmentOptions augment_options(const config::TrainConfig& cfg, bool train, bool val_rect = true);

/// Training loader over info.train: verified dataset (instances required, `fraction`, `cache`, `single_cls`),
/// shuffled with `seed`, `workers` threads, batch `batch`. Logs the dataset summary. Throws what Dataset throws.
/// DDP (world > 1): this rank's shard of every epoch's order and a per-rank batch of batch / world (the config's
/// batch is the global batch, as Ultralytics); throws when batch is not divisible by world. A CUDA `device` (the
/// run's core::DevicePlan) gets pinned uint8 batches made by workers whose current CUDA device is `device`'s.
std::shared_ptr<data::Loader> make_train_loader(const data::DatasetInfo& info, const config::TrainConfig& cfg,
                                                const c10::Device& device, int rank = 0, int world = 1);

/// How a validation loader shapes its batches; the reference configures its two validators differently.
enum class ValShapes {
  in_training,  ///< the trainer's validation: rect batches (pad 0.5), as the reference trainer's val loader
  standalone,   ///< `yolo11 val`: rect batches (pad 0.5) when cfg.rect, else an imgsz × imgsz letterbox; the val
                ///< command sets rect=true unless told otherwise, as the reference's `yolo val` (Model.val)
};

/// Validation loader over `sources` (info.val for the trainer, the chosen split for yolo11-val): batches of `batch`
/// images shaped as `shapes` says, no shuffling, no augmentation. Logs the dataset summary under `label`.
std::shared_ptr<data::Loader> make_val_loader(const data::DatasetInfo& info, const std::vector<std::string>& sources,
                                              const config::TrainConfig& cfg, int64_t batch, const std::string& label,
                                              ValShapes shapes = ValShapes::in_training);

}  // namespace yolo11::engine
