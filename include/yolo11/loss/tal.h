#pragma once
// Task-aligned label assignment (TOOD) as Ultralytics 8.4.50 `ultralytics.utils.tal` does it, plus the anchor
// helpers the detection loss shares with it. All tensors may live on any device; nothing here syncs the host
// except where noted.
#include <ATen/Tensor.h>

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

namespace yolo11::loss {

/// Anchor centres of every level in anchor order (level-major, row-major inside a level).
/// feats: per level (B, C, H_l, W_l) (only shapes, dtype and device are used).
/// Returns {anchor_points (A, 2) x,y in grid units (cell + offset), stride_tensor (A, 1)}, in feats' dtype.
std::pair<at::Tensor, at::Tensor> make_anchors(const std::vector<at::Tensor>& feats,
                                               const std::vector<int64_t>& strides, double offset = 0.5);

/// distance (..., 4) ltrb → xyxy boxes around anchor_points (..., 2) (same units).
at::Tensor dist2bbox(const at::Tensor& distance, const at::Tensor& anchor_points);
/// xyxy boxes (..., 4) → ltrb distances from anchor_points (..., 2), clamped to [0, reg_max − 0.01].
at::Tensor bbox2dist(const at::Tensor& anchor_points, const at::Tensor& bbox, double reg_max);

/// What the assigner returns (B = batch, A = anchors, nc = classes).
struct Assignment {
  at::Tensor target_labels;  ///< (B, A) int64, class of the assigned GT (0 where background)
  at::Tensor target_bboxes;  ///< (B, A, 4) float, xyxy of the assigned GT (units of gt_bboxes; GT 0 on background)
  at::Tensor target_scores;  ///< (B, A, nc) float, one-hot(label) × normalized alignment; 0 on background
  at::Tensor fg_mask;        ///< (B, A) bool, foreground anchors
  at::Tensor target_gt_idx;  ///< (B, A) int64, index of the assigned GT in [0, M) (0 on background)
};

/// TaskAlignedAssigner(topk, num_classes, alpha, beta, stride, eps).
/// Candidates: anchors strictly inside a GT; GT sides < stride[0] are enlarged to stride[1] for this test only
/// (centre kept; with a single stride the target is 2·stride[0]). Metric = score^alpha · CIoU^beta (CIoU clamped
/// at 0); top-k anchors per GT; an anchor positive for several GTs keeps the GT of largest overlap (argmax over
/// all GTs); target scores normalised per GT by max overlap / (max metric + eps). Labels must lie in
/// [0, num_classes) (not checked on the device; the data pipeline validates them).
class TaskAlignedAssigner {
 public:
  TaskAlignedAssigner(int64_t topk = 10, int64_t num_classes = 80, double alpha = 0.5, double beta = 6.0,
                      std::vector<double> stride = {8, 16, 32}, double eps = 1e-9);

  /// pd_scores (B, A, nc) sigmoid scores; pd_bboxes (B, A, 4) xyxy pixels; anc_points (A, 2) pixels;
  /// gt_labels (B, M, 1) integer (int64 or float); gt_bboxes (B, M, 4) xyxy pixels; mask_gt (B, M, 1) bool/float
  /// (padding rows false). Runs without gradient. M = 0 gives the all-background assignment
  /// (labels = num_classes as the reference does). Throws std::runtime_error on inconsistent shapes.
  Assignment operator()(const at::Tensor& pd_scores, const at::Tensor& pd_bboxes, const at::Tensor& anc_points,
                        const at::Tensor& gt_labels, const at::Tensor& gt_bboxes, const at::Tensor& mask_gt) const;

  /// As operator() but pd_scores may be raw class logits (scores_are_logits = true): the sigmoid is then applied
  /// only to the (GT, anchor) scores the metric reads (identical values, a fraction of the work).
  Assignment assign(const at::Tensor& pd_scores, bool scores_are_logits, const at::Tensor& pd_bboxes,
                    const at::Tensor& anc_points, const at::Tensor& gt_labels, const at::Tensor& gt_bboxes,
                    const at::Tensor& mask_gt) const;

  /// Pair evaluation strategy: dense (every GT × anchor pair as (B, M, A) tensors, no host sync; default on CUDA)
  /// or sparse (default on CPU): only the candidate pairs (anchor centre inside the GT) are ever formed — found by
  /// binary search over the anchors sorted by x and by y — and top-k, the multi-GT resolution and the
  /// normalisation run on gathered pair lists (sort + scatter_reduce), O(pairs) instead of O(B·M·A). Both give
  /// identical results (the sparse path re-ranks with torch::topk the rare GTs whose k-th place is a tie or a
  /// zero metric); nullopt restores the default.
  void set_dense(std::optional<bool> dense) { dense_override_ = dense; }

  int64_t topk() const { return topk_; }
  int64_t num_classes() const { return num_classes_; }

 private:
  // labels (B, M) int64, mgt (B, M, 1) 0/1 in the boxes' dtype, cand_boxes (B, M, 4): the candidate-test boxes.
  Assignment assign_dense(const at::Tensor& pd_scores, bool scores_are_logits, const at::Tensor& pd_bboxes,
                          const at::Tensor& anc_points, const at::Tensor& labels, const at::Tensor& gt_bboxes,
                          const at::Tensor& mgt, const at::Tensor& cand_boxes) const;
  Assignment assign_sparse(const at::Tensor& pd_scores, bool scores_are_logits, const at::Tensor& pd_bboxes,
                           const at::Tensor& anc_points, const at::Tensor& labels, const at::Tensor& gt_bboxes,
                           const at::Tensor& mgt, const at::Tensor& cand_boxes) const;
  Assignment finish(const at::Tensor& pd_scores, const at::Tensor& labels, const at::Tensor& gt_bboxes,
                    const at::Tensor& target_gt_idx, const at::Tensor& fg_mask, const at::Tensor& norm) const;
  int64_t topk_, num_classes_;
  double alpha_, beta_;
  std::vector<double> stride_;
  double eps_;
  std::optional<bool> dense_override_;
};

}  // namespace yolo11::loss
