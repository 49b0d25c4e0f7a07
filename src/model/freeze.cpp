// copy_state and freeze_layers (include/yolo11/model/weights.h): state-level operations the trainer applies to the
// model (Ultralytics BaseTrainer._setup_train's freeze list; the EMA → validation model copy).
#include <spdlog/fmt/ranges.h>
#include <spdlog/spdlog.h>
#include <torch/torch.h>

#include <stdexcept>
#include <unordered_map>

#include "yolo11/model/weights.h"
#include "yolo11/model/yolo.h"

namespace yolo11::model {

void copy_state(const std::vector<std::pair<std::string, at::Tensor>>& src, torch::nn::Module& dst) {
  torch::NoGradGuard ng;
  auto dst_state = state_dict(dst);
  std::unordered_map<std::string, torch::Tensor> by_name(dst_state.begin(), dst_state.end());
  for (const auto& [k, v] : src) {
    auto it = by_name.find(k);
    if (it != by_name.end()) it->second.copy_(v);
  }
}

void freeze_layers(YOLOImpl& net, const std::vector<int64_t>& freeze) {
  if (freeze.empty()) return;
  const int64_t nl = static_cast<int64_t>(net.layers().size());
  std::vector<int64_t> missing;
  for (int64_t i : freeze)
    if (i < 0 || i >= nl) missing.push_back(i);
  if (!missing.empty())
    spdlog::warn("freeze: the model has {} layers (0-{}); {} of the requested indices do not exist (e.g. {})", nl,
                 nl - 1, missing.size(), missing.front());
  int64_t n = 0;
  for (auto& p : net.named_parameters()) {
    for (int64_t i : freeze) {
      if (p.key().rfind("model." + std::to_string(i) + ".", 0) == 0) {
        p.value().set_requires_grad(false);
        ++n;
      }
    }
  }
  spdlog::info("freeze: {} parameter tensors of layers {} frozen", n, fmt::join(freeze, ","));
  bool any_trainable = false;
  for (const auto& p : net.parameters()) any_trainable = any_trainable || p.requires_grad();
  if (!any_trainable)
    throw std::runtime_error(fmt::format("freeze: layers {} froze the entire model (it has {} layers, 0-{}): nothing "
                                         "is left to train; freeze fewer layers (freeze={} keeps the Detect head trainable)",
                                         fmt::join(freeze, ","), nl, nl - 1, nl - 1));
}

}  // namespace yolo11::model
