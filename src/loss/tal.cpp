#include "yolo11/loss/tal.h"

#include <torch/torch.h>

#include <sstream>
#include <stdexcept>

#include "yolo11/loss/iou.h"

namespace yolo11::loss {

std::pair<at::Tensor, at::Tensor> make_anchors(const std::vector<at::Tensor>& feats,
                                               const std::vector<int64_t>& strides, double offset) {
  if (feats.empty() || feats.size() != strides.size())
    throw std::runtime_error("make_anchors: got " + std::to_string(feats.size()) + " feature maps and " +
                             std::to_string(strides.size()) + " strides; they must match and be non-empty");
  std::vector<at::Tensor> points, stride_t;
  for (size_t i = 0; i < feats.size(); ++i) {
    const auto opts = feats[i].options().requires_grad(false);
    const int64_t h = feats[i].size(2), w = feats[i].size(3);
    auto sx = torch::arange(w, opts) + offset;
    auto sy = torch::arange(h, opts) + offset;
    auto grid = torch::meshgrid({sy, sx}, "ij");
    points.push_back(torch::stack({grid[1], grid[0]}, -1).view({-1, 2}));
    stride_t.push_back(torch::full({h * w, 1}, static_cast<double>(strides[i]), opts));
  }
  return {torch::cat(points), torch::cat(stride_t)};
}

at::Tensor dist2bbox(const at::Tensor& distance, const at::Tensor& anchor_points) {
  auto lt_rb = distance.chunk(2, -1);
  return torch::cat({anchor_points - lt_rb[0], anchor_points + lt_rb[1]}, -1);
}

at::Tensor bbox2dist(const at::Tensor& anchor_points, const at::Tensor& bbox, double reg_max) {
  auto xy = bbox.chunk(2, -1);
  return torch::cat({anchor_points - xy[0], xy[1] - anchor_points}, -1).clamp(0, reg_max - 0.01);
}

TaskAlignedAssigner::TaskAlignedAssigner(int64_t topk, int64_t num_classes, double alpha, double beta,
                                         std::vector<double> stride, double eps)
    : topk_(topk), num_classes_(num_classes), alpha_(alpha), beta_(beta), stride_(std::move(stride)), eps_(eps) {
  if (topk_ < 1 || num_classes_ < 1 || stride_.empty())
    throw std::runtime_error(
        "TaskAlignedAssigner: need topk >= 1, num_classes >= 1 and at least one stride (got topk " +
        std::to_string(topk_) + ", num_classes " + std::to_string(num_classes_) + ")");
  if (stride_.size() == 1) stride_.push_back(2 * stride_[0]);  // enlargement target when only one level exists
}

Assignment TaskAlignedAssigner::operator()(const at::Tensor& pd_scores, const at::Tensor& pd_bboxes,
                                           const at::Tensor& anc_points, const at::Tensor& gt_labels,
                                           const at::Tensor& gt_bboxes, const at::Tensor& mask_gt) const {
  return assign(pd_scores, false, pd_bboxes, anc_points, gt_labels, gt_bboxes, mask_gt);
}

Assignment TaskAlignedAssigner::assign(const at::Tensor& pd_scores, bool scores_are_logits, const at::Tensor& pd_bboxes,
                                       const at::Tensor& anc_points, const at::Tensor& gt_labels,
                                       const at::Tensor& gt_bboxes, const at::Tensor& mask_gt) const {
  torch::NoGradGuard no_grad;
  const int64_t bs = pd_scores.size(0), na = pd_scores.size(1), nmax = gt_bboxes.size(1);
  if (pd_scores.dim() != 3 || pd_scores.size(2) != num_classes_ || pd_bboxes.sizes() != at::IntArrayRef{bs, na, 4} ||
      anc_points.sizes() != at::IntArrayRef{na, 2} || gt_bboxes.dim() != 3 || gt_bboxes.size(0) != bs ||
      gt_labels.size(0) != bs || gt_labels.size(1) != nmax || mask_gt.size(0) != bs || mask_gt.size(1) != nmax) {
    std::ostringstream ss;
    ss << "TaskAlignedAssigner: inconsistent shapes: pd_scores " << pd_scores.sizes() << " (expected (B,A,"
       << num_classes_ << ")), pd_bboxes " << pd_bboxes.sizes() << ", anc_points " << anc_points.sizes()
       << ", gt_labels " << gt_labels.sizes() << ", gt_bboxes " << gt_bboxes.sizes() << ", mask_gt " << mask_gt.sizes();
    throw std::runtime_error(ss.str());
  }
  const auto fopts = pd_scores.options();
  if (nmax == 0) {
    auto zeros_ba = torch::zeros({bs, na}, fopts.dtype(torch::kLong));
    return {torch::full({bs, na}, num_classes_, fopts.dtype(torch::kLong)), torch::zeros_like(pd_bboxes),
            torch::zeros_like(pd_scores), torch::zeros({bs, na}, fopts.dtype(torch::kBool)), zeros_ba};
  }
  const auto dtype = pd_bboxes.scalar_type();
  auto mgt = mask_gt.to(dtype);                               // (B, M, 1) 0/1
  auto labels = gt_labels.to(torch::kLong).view({bs, nmax});  // (B, M)

  // 1. Candidates: anchor centre strictly inside the (small-side-enlarged) GT box.
  auto gxywh = xyxy2xywh(gt_bboxes.to(dtype));
  auto wh = gxywh.narrow(-1, 2, 2);
  auto small = (wh < stride_[0]).to(dtype) * mgt;
  gxywh = torch::cat(
      {gxywh.narrow(-1, 0, 2), torch::where(small.to(torch::kBool), torch::full_like(wh, stride_[1]), wh)}, -1);
  auto gxyxy = xywh2xyxy(gxywh).unsqueeze(2);  // (B, M, 1, 4)
  auto ctr = anc_points.to(dtype);             // (A, 2)
  auto cx = ctr.select(1, 0), cy = ctr.select(1, 1);
  // min of the four distances (anchor − x1, anchor − y1, x2 − anchor, y2 − anchor) > eps, without a (B,M,A,4) cat
  auto dmin = torch::minimum(torch::minimum(cx - gxyxy.select(-1, 0), cy - gxyxy.select(-1, 1)),
                             torch::minimum(gxyxy.select(-1, 2) - cx, gxyxy.select(-1, 3) - cy));  // (B, M, A)
  auto mask_in_gts = dmin.gt(eps_).to(dtype);

  // 2. Alignment metric on candidate pairs (CIoU and score only where needed; zero elsewhere).
  auto cand = (mask_in_gts * mgt).to(torch::kBool);  // (B, M, A)
  auto gtb = gt_bboxes.to(dtype);
  at::Tensor overlaps, align_metric;
  const bool dense = dense_override_ ? *dense_override_ : pd_scores.is_cuda();
  if (dense) {                                  // no host sync: evaluate every pair, mask afterwards
    auto scores_t = pd_scores.transpose(1, 2);  // (B, nc, A)
    auto bbox_scores = scores_t.gather(1, labels.clamp(0, num_classes_ - 1).unsqueeze(-1).expand({bs, nmax, na}));
    if (scores_are_logits) bbox_scores = bbox_scores.sigmoid();
    bbox_scores = bbox_scores.masked_fill(~cand, 0);
    overlaps = bbox_iou(gtb.unsqueeze(2), pd_bboxes.unsqueeze(1), /*xywh=*/false, IouKind::CIoU)
                   .squeeze(-1)
                   .clamp_min(0)
                   .masked_fill(~cand, 0);  // (B, M, A)
    align_metric = bbox_scores.pow(alpha_) * overlaps.pow(beta_);
  } else {                      // candidates only (a few % of the pairs), as the reference does
    auto idx = cand.nonzero();  // (K, 3): b, m, a
    auto ib = idx.select(1, 0), im = idx.select(1, 1), ia = idx.select(1, 2);
    auto ov = bbox_iou(gtb.index({ib, im}), pd_bboxes.index({ib, ia}), /*xywh=*/false, IouKind::CIoU)
                  .squeeze(-1)
                  .clamp_min(0);
    auto sc = pd_scores.index({ib, ia, labels.index({ib, im}).clamp(0, num_classes_ - 1)});
    if (scores_are_logits) sc = sc.sigmoid();
    overlaps = torch::zeros({bs, nmax, na}, pd_bboxes.options()).index_put_({ib, im, ia}, ov);
    align_metric =
        torch::zeros({bs, nmax, na}, pd_scores.options()).index_put_({ib, im, ia}, sc.pow(alpha_) * ov.pow(beta_));
  }

  // 3. Top-k anchors per GT (padding GTs select nothing), positives = top-k ∧ candidate ∧ valid.
  const int64_t k = std::min(topk_, na);
  auto topk_idx = std::get<1>(align_metric.topk(k, -1, /*largest=*/true));
  auto mask_topk = torch::zeros_like(align_metric).scatter_(-1, topk_idx, 1.0);
  auto mask_pos = mask_topk * mask_in_gts * mgt;  // (B, M, A)

  // 4. Anchors positive for several GTs keep the GT of largest overlap.
  auto fg = mask_pos.sum(-2);  // (B, A)
  auto multi = (fg.unsqueeze(1) > 1).expand({bs, nmax, na});
  auto is_max = torch::zeros_like(mask_pos).scatter_(1, overlaps.argmax(1).unsqueeze(1), 1.0);
  mask_pos = torch::where(multi, is_max, mask_pos);
  fg = mask_pos.sum(-2);
  auto target_gt_idx = mask_pos.argmax(-2);  // (B, A)
  auto fg_mask = fg > 0;

  // 5. Targets gathered from the assigned GT.
  auto flat_idx = target_gt_idx + torch::arange(bs, target_gt_idx.options()).unsqueeze(-1) * nmax;
  auto target_labels = labels.flatten().index({flat_idx}).clamp_min(0);         // (B, A)
  auto target_bboxes = gt_bboxes.to(dtype).reshape({-1, 4}).index({flat_idx});  // (B, A, 4)

  // 6. Normalise by per-GT best overlap / best metric; one-hot(label) × that value on foreground anchors.
  align_metric = align_metric * mask_pos;
  auto pos_align = align_metric.amax(-1, true);                             // (B, M, 1)
  auto pos_overlaps = (overlaps * mask_pos).amax(-1, true);                 // (B, M, 1)
  auto norm = (align_metric * pos_overlaps / (pos_align + eps_)).amax(-2);  // (B, A)
  auto value = norm.masked_fill(~fg_mask, 0).to(pd_scores.scalar_type()).unsqueeze(-1);
  auto target_scores = torch::zeros({bs, na, num_classes_}, fopts)
                           .scatter_(2, target_labels.clamp_max(num_classes_ - 1).unsqueeze(-1), value);
  return {target_labels, target_bboxes, target_scores, fg_mask, target_gt_idx};
}

}  // namespace yolo11::loss
