#pragma once
// Fault handling of a training run (src/engine/recovery.cpp), used by engine::Trainer (src/engine/trainer.cpp):
// the good state an epoch starts from and its restoration (non-finite recovery), and the one error message of a
// run that ran out of memory. Behaviour and tests: docs/recipe.md "Crash safety".
#include <ATen/Tensor.h>

#include <cstdint>
#include <exception>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace yolo11::config {
struct TrainConfig;
}

namespace yolo11::engine {

struct Run;
struct OptimizerStateCopy;  // src/engine/recovery.cpp
using NamedTensors = std::vector<std::pair<std::string, at::Tensor>>;

/// What an epoch starts from, kept in host memory at the start of every epoch so that the epoch can be re-run after
/// non-finite losses. The model restarts from the EMA weights (as the reference's NaN recovery), so the raw
/// weights are not kept: (1 + optimizer moments) × the model state bytes (yolo11n: 10, 20, 30 MiB for no moments yet,
/// SGD, AdamW).
struct GoodState {
  int64_t epoch = -1;  ///< 0-based epoch this state starts
  NamedTensors ema;    ///< EMA weights and buffers (CPU copies)
  int64_t ema_updates = 0;
  /// The optimizer's per-parameter state (moments, step counts; SGD, Adam, AdamW), tensors copied to the host.
  std::shared_ptr<const OptimizerStateCopy> optimizer;
  NamedTensors scaler;     ///< GradScaler::state(); empty without a loss scaler
  NamedTensors grads;      ///< gradients accumulated before the epoch began (mid-accumulation), CPU copies
  int64_t last_step = -1;  ///< Scheduler::last_step()
  int64_t bytes = 0;       ///< host memory the copies hold
};

/// Copies the run's EMA, optimizer, scaler, accumulated gradients and scheduler position to the host.
GoodState keep_good_state(const Run& r);

/// Puts `s` back: model ← EMA weights, EMA (and its update count), optimizer state, scaler, accumulated gradients,
/// the scheduler's last optimizer step. Same on every DDP rank (the replicas hold identical states).
void restore_good_state(Run& r, const GoodState& s);

/// True when every floating-point tensor of `ts` is finite. One host sync for the whole list (per-tensor flags are
/// reduced on the tensors' device first).
bool all_finite(const NamedTensors& ts);

/// True for what an exhausted allocator throws: std::bad_alloc, c10::OutOfMemoryError (the CUDA caching allocator)
/// and LibTorch's CPU allocator failure (a c10::Error "... can't allocate memory ..." / "not enough memory").
bool is_out_of_memory(const std::exception& e);

/// Where a run was when it ran out of memory, for out_of_memory_message.
enum class RunStage { build, loader, step, validation, checkpoint, other };
const char* run_stage_name(RunStage s);

/// The error that ends a run out of memory: the stage, the allocator's message (first line), this process's
/// resident set and the machine's RAM (and the CUDA device's memory on a CUDA run), batch / imgsz / cache / workers,
/// what to lower for that stage, and the last checkpoint (<run dir>/weights/last.*, which no step of the failure
/// touched: checkpoints are replaced atomically) and how to resume from it. `r` may be null (the run was not built).
std::string out_of_memory_message(const std::exception& e, RunStage stage, const config::TrainConfig& cfg,
                                  const Run* r);

}  // namespace yolo11::engine
