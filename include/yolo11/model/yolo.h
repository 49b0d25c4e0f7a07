#pragma once
// The YOLO11 detection model, built from an Ultralytics model YAML (configs/models/yolo11.yaml).
#include <torch/nn/module.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/pimpl.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "yolo11/model/modules.h"
#include "yolo11/model/weights.h"

namespace yolo11::model {

/// How to build the model. `yaml` is the Ultralytics model YAML; `scale` one of its `scales` keys (n/s/m/l/x).
/// As in Ultralytics, a name with a scale letter that does not exist as a file ("yolo11n.yaml",
/// "configs/models/yolo11s.yaml") means the unscaled YAML at that scale (the letter wins over `scale`);
/// `nc` overrides the YAML's nc; `sppf_act` = false reproduces 8.4.50's SPPF.cv1 without activation (the
/// released YOLO11 graph and weights have it: true).
struct ModelOptions {
  std::string yaml = "configs/models/yolo11.yaml";
  std::string scale = "n";
  int64_t nc = 80;
  bool sppf_act = true;
};

/// One row of the parsed YAML, as built (for summaries and tests).
struct LayerInfo {
  int64_t index = 0;
  std::vector<int64_t> from;  ///< absolute indices of the inputs (−1 resolved)
  std::string type;           ///< YAML module name (Conv, C3k2, SPPF, C2PSA, Upsample, Concat, Detect)
  int64_t repeats = 1;        ///< after depth scaling
  int64_t c2 = 0;             ///< output channels (Detect: 4·reg_max + nc)
  int64_t stride = 1;         ///< output stride in input pixels (Detect: last level)
  int64_t params = 0;         ///< parameter elements
  std::vector<int64_t> args;  ///< resolved integer args as built (c1, c2, ... per type), for summaries
};

/// YOLO11 detector. State-dict keys equal Ultralytics' (`model.0.conv.weight` ... `model.23.dfl.conv.weight`).
/// The DFL conv weight is frozen (requires_grad = false); BN params are named `*.bn.weight` / `*.bn.bias`.
class YOLOImpl : public torch::nn::Module {
 public:
  /// Parses the YAML and builds the layers. Throws std::runtime_error naming the YAML file and the row/key for an
  /// unreadable file, unknown scale, unknown module or malformed row.
  explicit YOLOImpl(const ModelOptions& o);

  /// Raw per-level head outputs (B, 4·reg_max + nc, H/s, W/s) for s = 8, 16, 32 (golden train_feat/eval_feat
  /// layout), what the loss consumes. x: (B, 3, H, W) float in [0, 1], H and W multiples of 32 (else
  /// std::invalid_argument naming the shape).
  std::vector<torch::Tensor> forward_feats(const torch::Tensor& x);
  /// Decoded (B, 4 + nc, A): cx, cy, w, h in input pixels + sigmoid class scores (golden eval_out).
  torch::Tensor decode(const std::vector<torch::Tensor>& feats) const;
  /// decode(forward_feats(x)).
  torch::Tensor forward(const torch::Tensor& x);
  /// Output of every layer listed in `keep` (by index) after running the whole network (debugging, tests).
  std::vector<torch::Tensor> forward_layers(const torch::Tensor& x, const std::vector<int64_t>& keep);

  int64_t nc() const;
  int64_t reg_max() const;
  const std::vector<int64_t>& strides() const;
  Detect detect() const { return detect_; }
  const std::vector<LayerInfo>& layers() const { return info_; }
  const ModelOptions& options() const { return o_; }

  /// Folds every Conv's BatchNorm into its conv (inference only; BN keys leave the state_dict).
  void fuse();
  bool is_fused() const { return fused_; }
  /// Elements of all parameters (incl. the frozen DFL weight): yolo11n 2,624,080.
  int64_t num_params() const;
  /// Elements of parameters with requires_grad: yolo11n 2,624,064.
  int64_t num_gradients() const;
  /// Layer count as Ultralytics prints it: leaf modules, the shared SiLU counted once (yolo11n: 181).
  int64_t num_layers() const;
  /// "YOLO11n summary: 181 layers, 2,624,080 parameters, 2,624,064 gradients, 6.6 GFLOPs".
  std::string summary(int64_t imgsz = 640) const;
  /// Per-layer table like Ultralytics' verbose model info (index, from, n, params, module, arguments).
  std::string table() const;
  /// Analytic GFLOPs for one imgsz × imgsz image, counted as Ultralytics' thop-based get_flops does: 2 × (conv
  /// multiply-accumulates + 4 per BatchNorm output element); attention matmuls, pooling and SiLU count 0.
  /// yolo11n 6.6, s 21.7, m 68.5, l 87.6, x 195.9 (reference 196.0).
  double gflops(int64_t imgsz = 640) const;

  torch::nn::ModuleList model{nullptr};  // state_dict key: "model"

 private:
  void check_input(const torch::Tensor& x) const;
  struct Layer {
    std::vector<int64_t> from;
    std::function<torch::Tensor(const std::vector<torch::Tensor>&)> fn;  // non-Detect layers
  };
  ModelOptions o_;
  std::vector<Layer> layers_;
  std::vector<LayerInfo> info_;
  std::vector<bool> save_;  // layer outputs needed later
  Detect detect_{nullptr};
  bool fused_ = false;
};
TORCH_MODULE(YOLO);

/// Converts every 4-D parameter and buffer of `m` to channels_last memory format in place (values unchanged;
/// feed inputs with x.contiguous(torch::MemoryFormat::ChannelsLast)). Gradients follow the parameter layout.
void to_channels_last(torch::nn::Module& m);

/// Scale letter in a model name like Ultralytics' guess_model_scale: "yolo11n.yaml" → "n", "yolo11x-p2.yaml" →
/// "x"; nullopt when there is none ("yolo11.yaml").
std::optional<std::string> guess_model_scale(const std::string& path);

/// Resolves a model YAML path: as given if it exists, else relative to the repository's configs/models (compile-time
/// source dir) — so tests and apps find the default from any working directory. Throws when neither exists.
std::string resolve_model_yaml(const std::string& path);

}  // namespace yolo11::model
