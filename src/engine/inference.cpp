#include "yolo11/engine/inference.h"

#include <nlohmann/json.hpp>

#include <stdexcept>

#include "yolo11/compat.h"
#include "yolo11/io/safetensors.h"

namespace yolo11::engine {

LoadedDetector load_detector(const std::string& weights, const std::string& model_yaml) {
  const auto file = io::load_safetensors(weights);
  LoadedDetector d;
  if (auto it = file.metadata.find("model_scale"); it != file.metadata.end()) d.scale = it->second;
  if (auto it = file.metadata.find("nc"); it != file.metadata.end()) d.nc = std::stoll(it->second);
  if (d.scale.empty()) {
    if (!file.contains("model.0.conv.weight"))
      throw std::runtime_error(weights + ": no tensor 'model.0.conv.weight': not YOLO11 weights under Ultralytics keys");
    const int64_t c0 = file.at("model.0.conv.weight").size(0);
    const size_t entries = file.tensors.size();
    if (c0 == 16) d.scale = "n";
    else if (c0 == 32) d.scale = "s";
    else if (c0 == 64) d.scale = entries < 800 ? "m" : "l";
    else if (c0 == 96) d.scale = "x";
    else throw std::runtime_error(weights + ": model.0 has " + std::to_string(c0) + " channels, which matches no YOLO11 scale");
  }
  if (d.nc == 0) {
    int64_t det = -1;  // the Detect layer is the last "model.<i>." whose cv3.0.2.weight exists
    for (const auto& [k, t] : file.tensors) {
      const auto p = k.find(".cv3.0.2.weight");
      if (k.rfind("model.", 0) == 0 && p != std::string::npos) {
        det = std::stoll(k.substr(6, p - 6));
        d.nc = t.size(0);
      }
    }
    if (det < 0) throw std::runtime_error(weights + ": no Detect class branch (model.<i>.cv3.0.2.weight) found");
  }
  if (auto it = file.metadata.find("names"); it != file.metadata.end()) {
    d.names = nlohmann::json::parse(it->second).get<std::vector<std::string>>();
  } else {
    for (int64_t c = 0; c < d.nc; ++c) d.names.push_back(std::to_string(c));
  }
  model::ModelOptions mo;
  mo.yaml = model::resolve_model_yaml(model_yaml);
  mo.scale = d.scale;
  mo.nc = d.nc;
  d.model = model::YOLO(mo);
  const auto report = model::transfer_weights(*d.model, file.tensors, weights);
  d.report = report.str();
  if (!report.complete()) throw std::runtime_error(weights + ": " + d.report);
  d.model->eval();
  return d;
}

at::Tensor to_input(const at::Tensor& images, const torch::Device& device, bool channels_last) {
  if (images.is_floating_point())  // converted by the loader workers already (LoaderOptions::float_images)
    return images.to(device, /*non_blocking=*/true)
        .contiguous(channels_last ? torch::MemoryFormat::ChannelsLast : torch::MemoryFormat::Contiguous);
  return images.to(device, /*non_blocking=*/true)
      .to(torch::kFloat)
      .div_(255.0)
      .contiguous(channels_last ? torch::MemoryFormat::ChannelsLast : torch::MemoryFormat::Contiguous);
}

}  // namespace yolo11::engine
