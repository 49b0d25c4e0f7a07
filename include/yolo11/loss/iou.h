#pragma once
// Box format conversions and the IoU family (IoU, GIoU, DIoU, CIoU) used by the assigner, the loss and the
// metrics. Float arithmetic follows Ultralytics 8.4.50 (`ultralytics.utils.metrics.bbox_iou`, `box_iou`,
// `ultralytics.utils.ops.xywh2xyxy/xyxy2xywh`) operation by operation, so float32 results agree to rounding.
#include <ATen/Tensor.h>

namespace yolo11::loss {

/// (..., 4) cx, cy, w, h → x1, y1, x2, y2 (same units; x1 = cx − w/2). Any float dtype/device; new tensor.
at::Tensor xywh2xyxy(const at::Tensor& x);
/// (..., 4) x1, y1, x2, y2 → cx, cy, w, h (same units). New tensor.
at::Tensor xyxy2xywh(const at::Tensor& x);

enum class IouKind { IoU, GIoU, DIoU, CIoU };

/// Elementwise (broadcasting) IoU of box1 (..., 4) and box2 (..., 4); result (..., 1).
/// `xywh` selects the input format (else xyxy). Heights get +eps in the xyxy path (reference quirk), union and
/// enclosing area/diagonal +eps. CIoU's trade-off factor α is computed without gradient, as the reference does.
/// Differentiable with respect to both inputs.
at::Tensor bbox_iou(const at::Tensor& box1, const at::Tensor& box2, bool xywh = true, IouKind kind = IouKind::IoU,
                    double eps = 1e-7);

/// Pairwise IoU matrix: box1 (N, 4) xyxy, box2 (M, 4) xyxy → (N, M) float32 (inputs cast to float32).
at::Tensor box_iou(const at::Tensor& box1, const at::Tensor& box2, double eps = 1e-7);

}  // namespace yolo11::loss
