#include "yolo11/engine/data_setup.h"

#include <spdlog/spdlog.h>

#include "yolo11/engine/preprocess.h"

namespace yolo11::engine {

data::AugmentOptions augment_options(const config::Hyperparameters& hyp, int64_t imgsz, bool augment, bool rect) {
  data::AugmentOptions a;
  a.imgsz = imgsz;
  a.hsv_h = hyp.hsv_h;
  a.hsv_s = hyp.hsv_s;
  a.hsv_v = hyp.hsv_v;
  a.degrees = hyp.degrees;
  a.translate = hyp.translate;
  a.scale = hyp.scale;
  a.shear = hyp.shear;
  a.perspective = hyp.perspective;
  a.flipud = hyp.flipud;
  a.fliplr = hyp.fliplr;
  a.mosaic = hyp.mosaic;
  a.mixup = hyp.mixup;
  a.cutmix = hyp.cutmix;
  a.bgr = hyp.bgr;
  a.augment = augment;
  a.rect = rect;
  return a;
}

data::AugmentOptions augment_options(const config::TrainConfig& cfg, bool train, bool val_rect) {
  return augment_options(cfg, cfg.imgsz, train, train ? cfg.rect : val_rect);
}

namespace {
data::DatasetOptions dataset_options(const config::TrainConfig& cfg, bool train, int64_t batch, bool val_rect) {
  data::DatasetOptions o;
  o.imgsz = cfg.imgsz;
  o.cache = cfg.cache;
  o.single_cls = cfg.single_cls;
  o.classes = cfg.classes;
  o.fraction = train ? cfg.fraction : 1.0;
  o.max_det = cfg.max_det;
  o.batch = batch;
  o.rect = train ? cfg.rect : val_rect;
  o.require_instances = train;
  return o;
}
}  // namespace

std::shared_ptr<data::Loader> make_train_loader(const data::DatasetInfo& info, const config::TrainConfig& cfg,
                                                const c10::Device& device, int rank, int world) {
  if (world > 1 && (cfg.batch < world || cfg.batch % world != 0))
    throw std::runtime_error("batch=" + std::to_string(cfg.batch) + " is the global batch and must be a multiple of "
                             "WORLD_SIZE=" + std::to_string(world) + " (each rank trains on batch / WORLD_SIZE); pass "
                             "batch=" + std::to_string(std::max<int64_t>(1, cfg.batch / world) * world));
  const int64_t batch = world > 1 ? cfg.batch / world : cfg.batch;
  auto ds = std::make_shared<data::Dataset>(info.train, info, dataset_options(cfg, true, batch, false));
  spdlog::info("train: {}", ds->summary());
  data::LoaderOptions lo;
  lo.batch = batch;
  lo.rank = rank;
  lo.world = world;
  lo.workers = static_cast<int>(cfg.workers);
  lo.shuffle = true;
  lo.seed = static_cast<uint64_t>(cfg.seed);
  const bool pin_memory = device.is_cuda();
  lo.pin_memory = pin_memory;
  lo.pin_device = pin_memory ? static_cast<int>(device.index()) : 0;
  lo.input = train_input_format(device);  // CPU: converted in the workers (engine/preprocess.h)
  return std::make_shared<data::Loader>(ds, augment_options(cfg, true, false), lo);
}

std::shared_ptr<data::Loader> make_val_loader(const data::DatasetInfo& info, const std::vector<std::string>& sources,
                                              const config::TrainConfig& cfg, int64_t batch, const std::string& label,
                                              ValShapes shapes) {
  const bool rect = shapes == ValShapes::in_training || cfg.rect;
  auto ds = std::make_shared<data::Dataset>(sources, info, dataset_options(cfg, false, batch, rect));
  spdlog::info("{}: {}", label, ds->summary());
  data::LoaderOptions lo;
  lo.batch = batch;
  lo.workers = static_cast<int>(cfg.workers);
  lo.shuffle = false;
  lo.seed = static_cast<uint64_t>(cfg.seed);
  return std::make_shared<data::Loader>(ds, augment_options(cfg, false, rect), lo);
}

}  // namespace yolo11::engine
