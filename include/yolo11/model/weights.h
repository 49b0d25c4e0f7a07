#pragma once
// Weights in the reference (PyTorch/Ultralytics) state_dict form: ordered keys, safetensors on disk.
#include <ATen/Tensor.h>
#include <torch/nn/module.h>

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace yolo11::model {

class YOLOImpl;

/// Ordered state_dict as PyTorch builds it: per module its own parameters, then its own buffers, then its
/// children recursively, keys joined with '.'. Undefined tensors (e.g. a bias=false conv's bias) are skipped.
/// The tensors alias the module's storage (no copies): writing into them (under NoGradGuard) changes the module.
/// For YOLO the keys are `model.<i>...`, equal to Ultralytics' DetectionModel.state_dict() in order.
std::vector<std::pair<std::string, at::Tensor>> state_dict(const torch::nn::Module& m);

/// Outcome of loading weights into a module.
struct TransferReport {
  int64_t transferred = 0;            ///< model entries that received a value
  int64_t total = 0;                  ///< model entries in total
  int64_t params_transferred = 0, params_total = 0;    ///< of which parameters (weights, biases)
  int64_t buffers_transferred = 0, buffers_total = 0;  ///< and buffers (BatchNorm running stats, step counters)
  /// Why a partial transfer happened, when it is recognisable: another model scale (the first conv's width or the
  /// layer count differs), another task's head (cv4 / proto in the source's last layer), another class count.
  std::vector<std::string> notes;
  std::vector<std::string> skipped;   ///< model keys left untouched, each "key (reason)"
  std::vector<std::string> unused;    ///< source keys that matched no model entry
  std::string source;                 ///< file (or description) the values came from
  /// "Transferred 448/499 items (parameters 240/250, buffers 208/249) from yolo11n.safetensors; skipped 51:
  /// model.23.cv3.* (shape ...)", then the notes — keys
  /// that share a `model.<i>.<child>.` prefix and a reason are collapsed to `prefix.*`.
  std::string str() const;
  bool complete() const { return transferred == total; }
};

/// Copies every source tensor whose key exists in the module with the same shape (dtype converted to the
/// module's, e.g. F16/BF16 → F32; device kept). Missing keys and shape mismatches are reported, not thrown.
TransferReport transfer_weights(torch::nn::Module& m, const std::vector<std::pair<std::string, at::Tensor>>& src,
                                const std::string& source = "tensors");

/// Loads a safetensors file, or an Ultralytics .pt / .pth checkpoint (its state_dict, io::read_pt_checkpoint), into
/// `m` via transfer_weights and logs the report (info when complete, warn otherwise). Throws std::runtime_error naming
/// the file when it is missing, truncated or corrupt.
TransferReport load_weights(torch::nn::Module& m, const std::string& path);

/// Saves the module's state_dict to `path` (safetensors, atomic): floating-point entries as F32, integer
/// buffers (num_batches_tracked) as I64, reference keys and order, so Python can `load_state_dict` it.
/// `metadata` goes to `__metadata__` (plus "format": "pt" unless given). Throws std::runtime_error on I/O failure.
void save_weights(const torch::nn::Module& m, const std::string& path,
                  const std::map<std::string, std::string>& metadata = {});

/// Copies a (name, tensor) state into the tensors of `dst` with the same key (no grad; shapes must match; keys
/// missing from `dst` are ignored). Used to build the validation copy of the EMA weights.
void copy_state(const std::vector<std::pair<std::string, at::Tensor>>& src, torch::nn::Module& dst);

/// Ultralytics `freeze=[i, ...]`: the parameters of layers `model.<i>.` get requires_grad=false (the DFL conv has no
/// trainable parameters here either). Logs how many tensors were frozen; warns about indices the model lacks;
/// throws std::runtime_error when nothing trainable is left (naming the layer count and a freeze that keeps the
/// Detect head). Empty `freeze`: nothing happens.
void freeze_layers(YOLOImpl& net, const std::vector<int64_t>& freeze);

}  // namespace yolo11::model
