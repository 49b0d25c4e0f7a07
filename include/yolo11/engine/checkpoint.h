#pragma once
// Training checkpoints: weights/<stem>.safetensors (EMA weights under the reference state_dict keys, loadable by
// Python's safetensors.torch.load_file) + weights/<stem>.state.safetensors (raw model weights, optimizer and
// scaler state, CPU and CUDA RNG, args, results so far). Both carry the same checkpoint id; a pair whose ids differ, a missing,
// empty or truncated file, or NaN/Inf weights make the checkpoint unusable and the loader falls back to
// last.prev.*. Format: docs/recipe.md.
#include <ATen/Tensor.h>

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace torch::optim {
class Optimizer;
}
namespace torch::nn {
class Module;
}
namespace torch::serialize {
class InputArchive;
}

namespace yolo11::engine {

using NamedTensors = std::vector<std::pair<std::string, at::Tensor>>;

struct Checkpoint {
  int64_t epoch = -1;                 ///< last completed epoch, 0-based (resume starts at epoch + 1)
  double best_fitness = 0.0;          ///< best fitness (mAP50-95) so far
  NamedTensors model;                 ///< raw training weights: state_dict entries incl. BN buffers
  NamedTensors ema;                   ///< EMA weights, same keys (what best/last hold for inference)
  NamedTensors grads;                 ///< gradients accumulated since the last optimizer step (parameter name →
                                      ///< .grad, loss-scaled as held); empty at a step boundary
  int64_t ema_updates = 0;
  std::string optimizer;              ///< save_optimizer_state() bytes (LibTorch archive); may be empty
  NamedTensors scaler;                ///< AMP GradScaler state, e.g. {"scale", "growth_tracker"}; empty without AMP
  std::string args_yaml;              ///< config::TrainConfig::to_yaml()
  std::string results_csv;            ///< results.csv text so far
  at::Tensor rng_cpu;                 ///< capture_rng_state() (uint8); undefined = not saved
  at::Tensor rng_cuda;                ///< compat::cuda_rng_state() of the training device; undefined on CPU runs
  std::map<std::string, std::string> extra;  ///< free-form strings (data-loader RNG states, train time, ...)
  /// model::ModelOptions::sppf_act of the trained graph; false (a model=x.pt whose SPPF.cv1 has no activation) is
  /// written to the weights' metadata as "sppf_act": "false", which engine::load_detector reads
  bool sppf_act = true;
  std::string path;                   ///< file it was loaded from (set by the loader)
};

/// Writes <weights_dir>/last.* (the newest complete pair present moved to last.prev.* first), and also best.* when
/// `is_best`, and epoch<epoch>.* when `epoch_copy`. Each file is written atomically (temp + fsync + rename).
/// Crash safety: whatever sequence of saves fails (exception or kill, at any step), the newest complete pair
/// written so far stays loadable by load_checkpoint(); see docs/recipe.md "Crash safety".
/// Returns false without writing anything (and logs a warning naming the tensor) when any floating-point
/// weight of `model` or `ema` is NaN/Inf. Throws std::runtime_error on I/O errors.
bool save_checkpoint(const std::string& weights_dir, const Checkpoint& ckpt, bool is_best, bool epoch_copy);

/// Removes the temp files of interrupted checkpoint writes from `weights_dir` (not recursive): names
/// `<x>.safetensors.tmp.<pid>` whose pid is this process or no running process. Logs each removal; returns
/// how many were removed. Called at the start of a run (new or resumed) and of every save.
int64_t remove_stale_checkpoint_temps(const std::string& weights_dir);

/// True when `name` (a file name, no directory) has the pattern `<x>.safetensors.tmp.<pid>`; sets *pid.
bool is_checkpoint_temp_file(const std::string& name, long* pid = nullptr);

namespace testing {
/// Fault injection for tests: `hook(step)` is called before each step of save_checkpoint ("rename A -> B",
/// "remove A", "write A", ..., "done"); an exception thrown from it aborts the save there, leaving the directory
/// as a kill at that moment would. An empty function removes the hook. Not thread-safe; tests only.
void set_checkpoint_fault_hook(std::function<void(const std::string& step)> hook);
}  // namespace testing

/// Reads the pair <weights_dir>/<stem>.safetensors + <stem>.state.safetensors. When it is unusable (missing,
/// empty, truncated, ids differ, NaN weights) logs a warning naming the file and the defect and, for
/// stem "last", tries last.prev.*. For "last" a weights file is completed by whichever of last.state /
/// last.prev.state carries its checkpoint id, so a kill at any point of the last → last.prev rotation
/// leaves a loadable pair. Returns nullopt when nothing usable is found.
std::optional<Checkpoint> load_checkpoint(const std::string& weights_dir, const std::string& stem = "last");

/// Reads one pair given the weights file path (<x>.safetensors; the state file is <x>.state.safetensors).
/// Throws std::runtime_error naming the file and the defect. With `weights_only` the state file is not needed.
Checkpoint read_checkpoint(const std::string& weights_file, bool weights_only = false);

/// Optimizer state as bytes (torch::serialize::OutputArchive) and back (same parameter layout required). Loading maps
/// every state tensor onto `device`, the run's (core::DevicePlan): a checkpoint saved on cuda:0 resumes on cuda:1, a
/// DDP rank > 0 or the CPU. Throws std::runtime_error for empty bytes, what LibTorch throws for a bad archive.
std::string save_optimizer_state(const torch::optim::Optimizer& opt);
void load_optimizer_state(torch::optim::Optimizer& opt, const std::string& bytes, const torch::Device& device);
/// The archive load_optimizer_state reads, every tensor of it on `device`.
void read_optimizer_archive(torch::serialize::InputArchive& ar, const std::string& bytes, const torch::Device& device);

/// Gradients accumulated since the last optimizer step, for Checkpoint::grads: every parameter's defined .grad
/// (name → tensor, as held: loss-scaled under a GradScaler). Call only off an optimizer-step boundary.
NamedTensors accumulated_gradients(const torch::nn::Module& model);
/// Puts saved gradients back as the parameters' .grad (copied into tensors laid out like each parameter, on its
/// device). Throws std::runtime_error naming the entry when a name is not a parameter or the shape differs.
void restore_gradients(torch::nn::Module& model, const NamedTensors& grads);

/// The default CPU generator state (uint8 tensor) and its restoration.
at::Tensor capture_rng_state();
void restore_rng_state(const at::Tensor& state);

/// Ultralytics rule for epoch copies: save_period > 0 and epoch % save_period == 0 (epoch 0-based).
inline bool save_period_due(int64_t epoch, int64_t save_period) { return save_period > 0 && epoch % save_period == 0; }

}  // namespace yolo11::engine
