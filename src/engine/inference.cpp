#include "yolo11/engine/inference.h"

#include <nlohmann/json.hpp>
#include <torch/nn/functional.h>

#include <cmath>
#include <filesystem>
#include <stdexcept>

#include "yolo11/core/compat.h"
#include "yolo11/io/pt_checkpoint.h"
#include "yolo11/io/safetensors.h"

namespace yolo11::engine {

LoadedDetector load_detector(const std::string& weights, const std::string& model_yaml) {
  if (!std::filesystem::exists(weights))
    throw std::runtime_error("weights=" + weights + ": no such file (relative paths are from the current directory; "
                             "a run's are runs/train/NAME/weights/best.safetensors)");
  io::TensorFile file;
  bool sppf_act = true;
  if (io::is_pt_path(weights)) {  // an Ultralytics checkpoint: scale, nc, names and SPPF form from the model record
    auto ck = io::read_pt_checkpoint(weights);
    file.tensors = std::move(ck.state_dict);
    if (!ck.scale.empty()) file.metadata["model_scale"] = ck.scale;
    file.metadata["nc"] = std::to_string(ck.nc);
    file.metadata["names"] = nlohmann::json(ck.names).dump();
    sppf_act = ck.yaml.value("sppf_act", true);
  } else {
    file = io::load_safetensors(weights);
    if (auto it = file.metadata.find("sppf_act"); it != file.metadata.end()) sppf_act = it->second != "false";
  }
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
  for (int64_t c = 0; c < d.nc; ++c) d.names.push_back(std::to_string(c));
  if (auto it = file.metadata.find("names"); it != file.metadata.end()) {
    // A JSON list (our checkpoints) or an object {"0": "person", ...} (tools/export_ultralytics_weights.py, as the
    // reference's model.names dict); ids outside [0, nc) or an unreadable value are an error naming the file.
    try {
      const auto j = nlohmann::json::parse(it->second);
      if (j.is_array()) {
        d.names = j.get<std::vector<std::string>>();
      } else if (j.is_object()) {
        for (const auto& [k, v] : j.items()) {
          const int64_t id = std::stoll(k);
          if (id < 0 || id >= d.nc) throw std::runtime_error("class id " + k + " outside [0, " + std::to_string(d.nc) + ")");
          d.names[static_cast<size_t>(id)] = v.get<std::string>();
        }
      } else {
        throw std::runtime_error("neither a list nor an object");
      }
    } catch (const std::exception& e) {
      throw std::runtime_error(weights + ": metadata 'names' is not a JSON list of names or an {id: name} object (" +
                               e.what() + ")");
    }
  }
  model::ModelOptions mo;
  mo.yaml = model::resolve_model_yaml(model_yaml);
  mo.scale = d.scale;
  mo.nc = d.nc;
  mo.sppf_act = sppf_act;
  d.model = model::YOLO(mo);
  const auto report = model::transfer_weights(*d.model, file.tensors, weights);
  d.report = report.str();
  if (!report.complete()) throw std::runtime_error(weights + ": " + d.report);
  d.model->eval();
  return d;
}

at::Tensor to_input(const at::Tensor& images, const torch::Device& device, bool channels_last) {
  if (images.scalar_type() != torch::kUInt8)
    throw std::invalid_argument("to_input: expected uint8 images, got " +
                                std::string(c10::toString(images.scalar_type())));
  return images.to(device, /*non_blocking=*/true)
      .to(torch::kFloat)
      .div_(255.0)
      .contiguous(channels_last ? torch::MemoryFormat::ChannelsLast : torch::MemoryFormat::Contiguous);
}

at::Tensor predict_augment(model::YOLO& model, const at::Tensor& x, const std::vector<at::Tensor>* feats) {
  namespace F = torch::nn::functional;
  const int64_t H = x.size(2), W = x.size(3);
  const int64_t gs = model->strides().back();
  const int64_t nl = static_cast<int64_t>(model->strides().size());
  int64_t g = 0;  // anchors per largest-stride cell summed over levels: 1 + 4 + 16 for strides 32, 16, 8
  for (int64_t l = 0; l < nl; ++l) g += int64_t{1} << (2 * l);
  const double scales[3] = {1.0, 0.83, 0.67};
  const bool flip_lr[3] = {false, true, false};
  std::vector<at::Tensor> ys;
  for (int k = 0; k < 3; ++k) {
    at::Tensor xi = flip_lr[k] ? x.flip({3}) : x;
    const double s = scales[k];
    if (s != 1.0) {
      const int64_t h = static_cast<int64_t>(H * s), w = static_cast<int64_t>(W * s);
      xi = F::interpolate(xi, F::InterpolateFuncOptions()
                                  .size(std::vector<int64_t>{h, w})
                                  .mode(torch::kBilinear)
                                  .align_corners(false));
      const int64_t hp = static_cast<int64_t>(std::ceil(H * s / gs)) * gs;
      const int64_t wp = static_cast<int64_t>(std::ceil(W * s / gs)) * gs;
      xi = F::pad(xi, F::PadFuncOptions({0, wp - w, 0, hp - h}).value(0.447));
      xi = xi.contiguous(x.suggest_memory_format());
    }
    at::Tensor yi = (k == 0 && feats != nullptr) ? model->decode(*feats) : model->decode(model->forward_feats(xi));
    auto box = yi.slice(1, 0, 4);
    box.div_(s);
    if (flip_lr[k]) {
      auto cx = yi.slice(1, 0, 1);
      cx.copy_(static_cast<double>(W) - cx);
    }
    ys.push_back(yi);
  }
  // Clip the tails: the full scale loses its coarsest level (large objects), the smallest its finest level.
  const int64_t big = ys.front().size(2) / g;                             // anchors of the coarsest level
  ys.front() = ys.front().slice(2, 0, ys.front().size(2) - big);
  const int64_t fine = (ys.back().size(2) / g) * (int64_t{1} << (2 * (nl - 1)));  // anchors of the finest level
  ys.back() = ys.back().slice(2, fine);
  return torch::cat(ys, 2);
}

}  // namespace yolo11::engine
