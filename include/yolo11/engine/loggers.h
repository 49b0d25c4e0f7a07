#pragma once
// The trainer's observability loggers, as callbacks (registered by add_default_callbacks, after the console logger,
// results and checkpointing; each does nothing unless its config key turns it on):
//   tensorboard=true   TensorBoard event file runs/train/<name>/events.out.tfevents.<time>.<host> (rank 0)
//   metrics_port=N     Prometheus text exposition at http://metrics_host:N/metrics (rank r serves N + LOCAL_RANK)
// Neither adds a device sync to the step: per-step losses are kept on the device and read once per profiler window
// (log_every steps, when the console logger reads them too) or at the epoch's end.
//
// TensorBoard tags (step axis in brackets):
//   train/box_loss, train/cls_loss, train/dfl_loss, lr/pg0..2,            [epoch, 1-based: Ultralytics' tags]
//   metrics/precision(B), metrics/recall(B), metrics/mAP50(B), metrics/mAP50-95(B), val/box_loss, val/cls_loss,
//   val/dfl_loss (epochs that validate)                                    [epoch, 1-based]
//   step/box_loss, step/cls_loss, step/dfl_loss, step/lr_pg0..2            [global step, 0-based]
//   profiler/step_s, profiler/<stage>_s, profiler/<stage>_share, profiler/img_per_s, profiler/data_wait,
//   profiler/gpu_util, profiler/gpu_mem_mb, profiler/mfu (when known)      [global step closing the window]
// Prometheus families (every sample labelled rank="R"): yolo11_epoch, yolo11_epochs, yolo11_steps_total,
// yolo11_images_total, yolo11_step_seconds, yolo11_stage_seconds_total{stage}, yolo11_stage_share{stage},
// yolo11_images_per_second, yolo11_data_wait_ratio, yolo11_gpu_utilization_percent, yolo11_gpu_memory_used_bytes,
// yolo11_gpu_memory_peak_allocated_bytes, yolo11_mfu_ratio, yolo11_train_loss{loss}, yolo11_val_loss{loss},
// yolo11_val_metric{metric}, yolo11_lr{group}, yolo11_world_size, yolo11_up.
#include <optional>
#include <string>

#include "yolo11/engine/callbacks.h"

namespace yolo11::engine {

/// Registers the TensorBoard logger. At on_pretrain_routine_start (rank 0, tensorboard=true) it creates the event
/// file; it throws std::runtime_error there when the build has no protobuf (io::tensorboard_available()).
void add_tensorboard_callbacks(Callbacks& cbs);

/// Registers the /metrics logger. At on_pretrain_routine_start (metrics_port > 0) it starts the server; it throws
/// std::runtime_error naming the port when the port is in use or the build has no cpp-httplib.
void add_metrics_callbacks(Callbacks& cbs);

/// Model FLOPs utilisation: 3 × forward FLOPs per image (forward + backward ≈ 3 × forward) × images/s over the
/// peak dense fp16/bf16 tensor-core FLOP/s of `gpu_name` (NVML's name; a small table: H200, H100, A100, L40S, L4,
/// A10, RTX 4090, RTX 3090, V100, T4). nullopt for an unknown GPU or non-positive inputs.
std::optional<double> model_flops_utilization(const std::string& gpu_name, double forward_gflops_per_image,
                                              double images_per_s);

}  // namespace yolo11::engine
