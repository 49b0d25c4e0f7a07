// yolo11-bench-val: validation ms/image of yolo11n on coco128, the same Validator run N times in one process (the
// trainer validates once per epoch in one long-lived process; issue 15 measured its inference time growing from
// epoch to epoch). Prints each repeat's preprocess / inference / loss / postprocess ms per image and the change of
// the last repeat over the first.
//   yolo11-bench-val [repeats=5] [weights=<.safetensors>|fresh] [imgsz=640] [batch=32]
// Run with YOLO11_MALLOC_DEFAULTS=1 for glibc's malloc behaviour (A/B of engine::tune_malloc). Not a test.
#include <spdlog/spdlog.h>
#include <torch/torch.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "yolo11/config/train_config.h"
#include "yolo11/data/dataset_info.h"
#include "yolo11/engine/data_setup.h"
#include "yolo11/engine/fp_env.h"
#include "yolo11/engine/inference.h"
#include "yolo11/engine/validator.h"
#include "yolo11/model/yolo.h"

using namespace yolo11;

int main(int argc, char** argv) try {
  std::printf("%s\n", engine::tune_malloc().c_str());
  int repeats = 5;
  std::string weights = "fresh";
  std::vector<std::string> overrides{"data=configs/datasets/coco128.yaml", "mode=val", "plots=false", "batch=32"};
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a.rfind("repeats=", 0) == 0)
      repeats = std::atoi(a.c_str() + 8);
    else if (a.rfind("weights=", 0) == 0)
      weights = a.substr(8);
    else
      overrides.push_back(a);
  }
  spdlog::set_level(spdlog::level::warn);
  auto cfg = config::TrainConfig::load("", overrides);
  torch::set_num_threads(cfg.threads > 0 ? static_cast<int>(cfg.threads) : 2);
  std::printf("%s\n", engine::flush_denormals().c_str());
  model::YOLO net{nullptr};
  if (weights == "fresh") {
    torch::manual_seed(0);
    net = model::YOLO(model::ModelOptions{"configs/models/yolo11.yaml", "n", 80, true});
  } else {
    net = engine::load_detector(weights).model;
  }
  net->fuse();
  model::to_channels_last(*net);
  const auto info = data::load_dataset_yaml(cfg.data, cfg.datasets_dir);
  auto loader = engine::make_val_loader(info, info.val, cfg, cfg.batch, "val");
  engine::Validator v(loader, info.names, engine::ValidatorOptions{0.001, 0.7, 300, false, "", false, true});
  loss::DetectionLoss criterion(80, net->strides(), net->reg_max());
  std::printf("| repeat | images | preprocess ms | inference ms | loss ms | postprocess ms |\n|---|---|---|---|---|---|\n");
  double first = 0, last = 0;
  for (int r = 0; r < repeats; ++r) {
    const auto res = v.run(net, &criterion, torch::kCPU);
    std::printf("| %d | %lld | %.1f | %.1f | %.1f | %.1f |\n", r, static_cast<long long>(res.images), res.ms_preprocess,
                res.ms_inference, res.ms_loss, res.ms_postprocess);
    std::fflush(stdout);
    (r == 0 ? first : last) = res.ms_inference;
  }
  if (repeats > 1) std::printf("inference, last repeat over the first: %+.1f %%\n", (last / first - 1) * 100);
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "yolo11-bench-val: %s\n", e.what());
  return 1;
}
