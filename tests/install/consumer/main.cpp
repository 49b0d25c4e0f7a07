// Consumer of an installed yolo11-cpp: loads a config (installed configs/default.yaml), builds YOLO11n from the
// installed model YAML and runs a forward pass; registers a callback that reads the run's parts through the
// installed TrainContext (compiled, not fired: firing needs a training run).
#include <torch/torch.h>

#include <cstdio>

#include "yolo11/build_info.h"
#include "yolo11/config/train_config.h"
#include "yolo11/engine/callbacks.h"
#include "yolo11/engine/ema.h"
#include "yolo11/model/yolo.h"

int main() {
  const auto cfg = yolo11::config::TrainConfig::load("", {"epochs=3", "imgsz=64"});
  yolo11::model::ModelOptions mo;
  mo.yaml = yolo11::model::resolve_model_yaml("yolo11.yaml");
  yolo11::model::YOLO net(mo);
  yolo11::engine::Callbacks callbacks;
  callbacks.add("on_fit_epoch_end", [](yolo11::engine::TrainContext& c) {
    std::printf("epoch %lld: %zu parameters, best fitness %.4f\n", static_cast<long long>(c.epoch),
                c.model->parameters().size(), c.best_fitness);
  });
  net->eval();
  torch::NoGradGuard ng;
  const auto out = net->forward(torch::zeros({1, 3, cfg.imgsz, cfg.imgsz}));
  std::printf("yolo11 %s: epochs=%lld imgsz=%lld, forward [%lld, %lld, %lld], configs from %s\n",
              yolo11::build::kVersion, static_cast<long long>(cfg.epochs), static_cast<long long>(cfg.imgsz),
              static_cast<long long>(out.size(0)), static_cast<long long>(out.size(1)),
              static_cast<long long>(out.size(2)), yolo11::build::resource_dir().c_str());
  return 0;
}
