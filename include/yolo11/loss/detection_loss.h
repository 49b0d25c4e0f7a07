#pragma once
// YOLO detection loss (Ultralytics 8.4.50 `v8DetectionLoss`): BCE class loss over task-aligned soft targets,
// CIoU box loss and distribution focal loss (DFL) on foreground anchors weighted by their target scores, all
// normalised by max(Σ target scores, 1), times the gains box/cls/dfl.
#include <ATen/Tensor.h>

#include <cstdint>
#include <optional>
#include <vector>

#include "yolo11/loss/tal.h"

namespace yolo11::loss {

struct LossGains {
  double box = 7.5, cls = 0.5, dfl = 1.5;
};

/// Padded per-image targets as the assigner receives them (M = max boxes in one image; 0 when no boxes).
struct PaddedTargets {
  at::Tensor gt_labels;  ///< (B, M, 1) int64
  at::Tensor gt_bboxes;  ///< (B, M, 4) float32, xyxy pixels of the network input; zero rows for padding
  at::Tensor mask_gt;    ///< (B, M, 1) bool, x1+y1+x2+y2 > 0
};

/// Groups flat targets per image in order of appearance and converts normalized xywh to pixel xyxy.
/// batch_idx (N) int64 in [0, B); cls (N) or (N,1) int64/float; bboxes (N, 4) normalized xywh.
/// img_h/img_w: network input size, pixels. Result on `device`. Reads batch_idx on the host (pass CPU
/// tensors to avoid a device sync). Throws std::runtime_error for batch indices outside [0, B) or bad shapes.
PaddedTargets preprocess_targets(const at::Tensor& batch_idx, const at::Tensor& cls, const at::Tensor& bboxes,
                                 int64_t batch_size, double img_h, double img_w, const at::Device& device);

class DetectionLoss {
 public:
  /// nc classes, strides of the levels fed to operator() (in order), reg_max DFL bins, loss gains.
  /// The assigner is TaskAlignedAssigner(topk=tal_topk, nc, alpha 0.5, beta 6.0, strides).
  DetectionLoss(int64_t nc, std::vector<int64_t> strides = {8, 16, 32}, int64_t reg_max = 16, LossGains gains = {},
                int64_t tal_topk = 10);

  struct Output {
    at::Tensor total;  ///< scalar: loss_vec.sum() = B·(gain_box·box + gain_cls·cls + gain_dfl·dfl); back-propagate this
    at::Tensor items;     ///< (3) detached [gain_box·box, gain_cls·cls, gain_dfl·dfl] (not × B): what is logged
    at::Tensor loss_vec;  ///< (3) items × B, with grad (the reference's first return value)
  };

  /// Intermediate tensors, filled only when requested (tests, debugging).
  struct Diagnostics {
    PaddedTargets targets;
    at::Tensor pd_bboxes;          ///< (B, A, 4) detached predicted boxes, xyxy pixels (assigner input)
    Assignment assignment;         ///< assigner outputs (target_bboxes in pixels)
    at::Tensor target_scores_sum;  ///< scalar, max(Σ target_scores, 1)
  };

  /// feats: per level (B, 4·reg_max + nc, H_l, W_l) raw head outputs (box-distribution logits side-major
  /// l,t,r,b × bins, then class logits), any device/dtype (computed in float32). Targets as in data::Batch:
  /// batch_idx (N) int64, cls (N) int64, bboxes (N, 4) float normalized xywh (CPU preferred). Image size =
  /// H_0·stride_0 × W_0·stride_0. Throws std::runtime_error on wrong level count or channel count.
  Output operator()(const std::vector<at::Tensor>& feats, const at::Tensor& batch_idx, const at::Tensor& cls,
                    const at::Tensor& bboxes, Diagnostics* diag = nullptr) const;

  /// Box/DFL (and assigner pair) evaluation: dense over all anchors (no host sync; default on CUDA) or only
  /// foreground rows / candidate pairs (default on CPU). Same values; nullopt restores the default.
  void set_dense(std::optional<bool> dense) {
    dense_override_ = dense;
    assigner_.set_dense(dense);
  }

  int64_t nc() const { return nc_; }
  int64_t reg_max() const { return reg_max_; }
  const LossGains& gains() const { return gains_; }

 private:
  int64_t nc_;
  std::vector<int64_t> strides_;
  int64_t reg_max_;
  LossGains gains_;
  TaskAlignedAssigner assigner_;
  std::optional<bool> dense_override_;
};

}  // namespace yolo11::loss
