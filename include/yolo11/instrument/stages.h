#pragma once
// The stage vocabulary. Every name a stage has (timers, NVTX ranges, trace.json, breakdown.csv, summary.json,
// Prometheus labels, TensorBoard tags, the straggler report, the diagnosis, test delays) comes from this header.
// Product code names a stage by its enum; tools/check_layers.py fails the build's Architecture test on a stage
// name spelled as a string literal anywhere else in src/, include/ or bench/ (docs/architecture.md).
// No torch dependency.
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace yolo11::instrument {

/// A stage the trainer thread times through Profiler::stage (profiler.h). The first seven are the step stages
/// in log/table order; `allreduce` runs inside the optimizer step of distributed runs only; `val`, `checkpoint`,
/// `log` are epoch stages (timed once per epoch, outside the step loop).
enum class StepStage : std::uint8_t {
  dataloader,  ///< waiting for the loader's next batch
  h2d,         ///< uint8 batch → float input on the device (engine/inference.h to_input)
  forward,     ///< model forward
  loss,        ///< detection loss
  backward,    ///< autograd backward (and AMP scaling)
  optimizer,   ///< unscale, clip, optimizer step, zero_grad (engine/multi_tensor_optim.h)
  ema,         ///< EMA update
  allreduce,   ///< DDP: gradient all-reduce before the optimizer step
  val,         ///< epoch: validation
  checkpoint,  ///< epoch: weights/last.*, best.* written
  log,         ///< epoch: results.csv row, logs, plots
};

/// Names of StepStage values, in enum order.
inline constexpr std::array<const char*, 11> kStepStageNames = {
    "dataloader", "h2d", "forward", "loss", "backward", "optimizer", "ema", "allreduce", "val", "checkpoint", "log"};

/// The name of `s` (a string literal: it outlives everything).
constexpr const char* stage_name(StepStage s) { return kStepStageNames[static_cast<std::size_t>(s)]; }

/// The stage named `name`, or nullopt for a name outside the vocabulary.
constexpr std::optional<StepStage> parse_step_stage(std::string_view name) {
  for (std::size_t i = 0; i < kStepStageNames.size(); ++i)
    if (name == kStepStageNames[i]) return static_cast<StepStage>(i);
  return std::nullopt;
}

/// Step stages always listed in windows and tables (zero when they did not run), in log/table order.
inline constexpr std::array<const char*, 7> kStepStages = {
    stage_name(StepStage::dataloader), stage_name(StepStage::h2d),      stage_name(StepStage::forward),
    stage_name(StepStage::loss),       stage_name(StepStage::backward), stage_name(StepStage::optimizer),
    stage_name(StepStage::ema)};
/// Stages outside the step loop (per epoch).
inline constexpr std::array<const char*, 3> kEpochStages = {
    stage_name(StepStage::val), stage_name(StepStage::checkpoint), stage_name(StepStage::log)};

/// The compute part of a step (what "compute-bound" measures): forward, loss, backward.
inline constexpr std::array<StepStage, 3> kComputeStages = {StepStage::forward, StepStage::loss, StepStage::backward};

/// NVTX ranges the loader's worker threads open (ScopedRange, range.h). Their timed parts are
/// data::kLoaderParts (data/loader_stats.h).
enum class LoaderStage : std::uint8_t {
  load,      ///< read and decode one image (or take it from the cache)
  mosaic,    ///< build a mosaic of four
  augment,   ///< perspective, HSV, flip, letterbox
  collate,   ///< stack samples into a batch
  to_float,  ///< the batch converted to float input in the worker (data::LoaderOptions)
};
inline constexpr std::array<const char*, 5> kLoaderStages = {"load", "mosaic", "augment", "collate", "to_float"};
constexpr const char* stage_name(LoaderStage s) { return kLoaderStages[static_cast<std::size_t>(s)]; }

}  // namespace yolo11::instrument
