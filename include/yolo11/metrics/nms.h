#pragma once
// Non-maximum suppression as Ultralytics 8.4.50 `ultralytics.utils.nms.non_max_suppression` (torchvision greedy
// NMS with a class offset), without its wall-clock abort and without modifying the input.
#include <ATen/Tensor.h>

#include <cstdint>
#include <vector>

namespace yolo11::metrics {

struct NmsOptions {
  double conf = 0.25;        ///< candidates need a class score strictly greater than this
  double iou = 0.45;         ///< a box is suppressed by a kept one when IoU is strictly greater than this
  int64_t max_det = 300;     ///< rows kept per image (highest confidence first)
  bool multi_label = false;  ///< every (anchor, class) with score > conf is a row (the validator uses true)
  bool agnostic = false;     ///< one NMS over all classes instead of per class
  double max_wh = 7680;      ///< class offset (pixels) that separates classes in the batched NMS
  int64_t max_nms = 30000;   ///< at most this many candidates (highest confidence) enter NMS
};

/// pred (B, 4 + nc, A): cx, cy, w, h in pixels, then nc class scores (after sigmoid); any device, not modified.
/// Returns per image a (n, 6) float32 tensor [x1, y1, x2, y2, conf, cls] in pixels, on pred's device, rows in
/// descending confidence (order of exactly equal scores: candidate order, as a stable sort gives). When
/// kept_index is given it receives per image the (n) int64 anchor index of each row. The greedy suppression
/// runs on the CPU in float32 with the reference's arithmetic. Throws std::runtime_error for a bad shape.
std::vector<at::Tensor> non_max_suppression(const at::Tensor& pred, const NmsOptions& o = {},
                                            std::vector<at::Tensor>* kept_index = nullptr);

/// Greedy NMS (torchvision.ops.nms semantics): boxes (N, 4) xyxy float, scores (N). Returns kept indices (K)
/// int64 in descending score order (stable for ties). Stops early once `limit` boxes are kept (limit < 0: no
/// limit); the kept prefix is identical to the unlimited result. CPU tensors (others are copied to CPU).
at::Tensor nms(const at::Tensor& boxes, const at::Tensor& scores, double iou_threshold, int64_t limit = -1);

}  // namespace yolo11::metrics
