#pragma once
// Test-only helpers shared by the recipe tests (optimizer, schedule): the yolo11n parameter list rebuilt from
// golden model_keys_yolo11n.json (names and shapes; the frozen DFL weight without requires_grad).
#include <torch/torch.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "golden.h"

namespace yolo11::test {

inline nlohmann::json load_golden_json(const std::string& name) {
  std::ifstream f(golden_path(name));
  return nlohmann::json::parse(f);
}

/// Parameters (not buffers) of yolo11n in state_dict order, zero-filled with the reference shapes.
inline std::vector<std::pair<std::string, torch::Tensor>> yolo11n_named_params() {
  const auto j = load_golden_json("model_keys_yolo11n.json");
  std::vector<std::pair<std::string, torch::Tensor>> out;
  for (const auto& e : j.at("state_dict")) {
    const std::string name = e.at(0).get<std::string>();
    const auto leaf = name.substr(name.rfind('.') + 1);
    if (leaf == "running_mean" || leaf == "running_var" || leaf == "num_batches_tracked") continue;
    auto t = torch::zeros(e.at(1).get<std::vector<int64_t>>());
    t.set_requires_grad(name.find(".dfl.") == std::string::npos);
    out.emplace_back(name, t);
  }
  return out;
}

}  // namespace yolo11::test
