#include "yolo11/loss/iou.h"

#include <torch/torch.h>

#include <cmath>

namespace yolo11::loss {

at::Tensor xywh2xyxy(const at::Tensor& x) {
  TORCH_CHECK(x.size(-1) == 4, "xywh2xyxy: last dimension must be 4, got shape ", x.sizes());
  auto xy = x.narrow(-1, 0, 2);
  auto wh = x.narrow(-1, 2, 2) / 2;
  return torch::cat({xy - wh, xy + wh}, -1);
}

at::Tensor xyxy2xywh(const at::Tensor& x) {
  TORCH_CHECK(x.size(-1) == 4, "xyxy2xywh: last dimension must be 4, got shape ", x.sizes());
  auto x1 = x.narrow(-1, 0, 1), y1 = x.narrow(-1, 1, 1), x2 = x.narrow(-1, 2, 1), y2 = x.narrow(-1, 3, 1);
  return torch::cat({(x1 + x2) / 2, (y1 + y2) / 2, x2 - x1, y2 - y1}, -1);
}

at::Tensor bbox_iou(const at::Tensor& box1, const at::Tensor& box2, bool xywh, IouKind kind, double eps) {
  TORCH_CHECK(box1.size(-1) == 4 && box2.size(-1) == 4,
              "bbox_iou: boxes must have 4 coordinates in the last "
              "dimension, got ",
              box1.sizes(), " and ", box2.sizes());
  at::Tensor b1_x1, b1_y1, b1_x2, b1_y2, b2_x1, b2_y1, b2_x2, b2_y2, w1, h1, w2, h2;
  if (xywh) {
    auto a = box1.chunk(4, -1), b = box2.chunk(4, -1);
    auto w1_ = a[2] / 2, h1_ = a[3] / 2, w2_ = b[2] / 2, h2_ = b[3] / 2;
    b1_x1 = a[0] - w1_, b1_x2 = a[0] + w1_, b1_y1 = a[1] - h1_, b1_y2 = a[1] + h1_;
    b2_x1 = b[0] - w2_, b2_x2 = b[0] + w2_, b2_y1 = b[1] - h2_, b2_y2 = b[1] + h2_;
    w1 = a[2], h1 = a[3], w2 = b[2], h2 = b[3];
  } else {
    auto a = box1.chunk(4, -1), b = box2.chunk(4, -1);
    b1_x1 = a[0], b1_y1 = a[1], b1_x2 = a[2], b1_y2 = a[3];
    b2_x1 = b[0], b2_y1 = b[1], b2_x2 = b[2], b2_y2 = b[3];
    w1 = b1_x2 - b1_x1, h1 = b1_y2 - b1_y1 + eps;
    w2 = b2_x2 - b2_x1, h2 = b2_y2 - b2_y1 + eps;
  }
  auto inter = (torch::minimum(b1_x2, b2_x2) - torch::maximum(b1_x1, b2_x1)).clamp_min(0) *
               (torch::minimum(b1_y2, b2_y2) - torch::maximum(b1_y1, b2_y1)).clamp_min(0);
  auto union_ = w1 * h1 + w2 * h2 - inter + eps;
  auto iou = inter / union_;
  if (kind == IouKind::IoU) return iou;
  auto cw = torch::maximum(b1_x2, b2_x2) - torch::minimum(b1_x1, b2_x1);  // enclosing box width
  auto ch = torch::maximum(b1_y2, b2_y2) - torch::minimum(b1_y1, b2_y1);  // enclosing box height
  if (kind == IouKind::GIoU) {
    auto c_area = cw * ch + eps;
    return iou - (c_area - union_) / c_area;
  }
  auto c2 = cw.pow(2) + ch.pow(2) + eps;  // enclosing diagonal squared
  auto rho2 = ((b2_x1 + b2_x2 - b1_x1 - b1_x2).pow(2) + (b2_y1 + b2_y2 - b1_y1 - b1_y2).pow(2)) / 4;
  if (kind == IouKind::DIoU) return iou - rho2 / c2;
  const double k = 4.0 / (M_PI * M_PI);
  auto v = k * ((w2 / h2).atan() - (w1 / h1).atan()).pow(2);
  at::Tensor alpha;
  {
    torch::NoGradGuard no_grad;
    alpha = v / (v - iou + (1 + eps));
  }
  return iou - (rho2 / c2 + v * alpha);
}

at::Tensor box_iou(const at::Tensor& box1, const at::Tensor& box2, double eps) {
  TORCH_CHECK(box1.dim() == 2 && box1.size(1) == 4 && box2.dim() == 2 && box2.size(1) == 4,
              "box_iou: expected (N,4) and (M,4) xyxy boxes, got ", box1.sizes(), " and ", box2.sizes());
  auto a = box1.to(torch::kFloat).unsqueeze(1).chunk(2, 2);  // a1, a2: (N,1,2)
  auto b = box2.to(torch::kFloat).unsqueeze(0).chunk(2, 2);  // b1, b2: (1,M,2)
  auto inter = (torch::minimum(a[1], b[1]) - torch::maximum(a[0], b[0])).clamp_min(0).prod(2);
  return inter / ((a[1] - a[0]).prod(2) + (b[1] - b[0]).prod(2) - inter + eps);
}

}  // namespace yolo11::loss
