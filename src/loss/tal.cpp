#include "yolo11/loss/tal.h"

#include <torch/torch.h>

#include <array>
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

  // Candidate test boxes: GT sides < stride[0] are enlarged to stride[1] (centre kept).
  auto gxywh = xyxy2xywh(gt_bboxes.to(dtype));
  auto wh = gxywh.narrow(-1, 2, 2);
  auto small = (wh < stride_[0]).to(dtype) * mgt;
  gxywh = torch::cat(
      {gxywh.narrow(-1, 0, 2), torch::where(small.to(torch::kBool), torch::full_like(wh, stride_[1]), wh)}, -1);
  auto cand_boxes = xywh2xyxy(gxywh);  // (B, M, 4)
  const bool dense = dense_override_ ? *dense_override_ : pd_scores.is_cuda();
  if (dense) return assign_dense(pd_scores, scores_are_logits, pd_bboxes, anc_points, labels, gt_bboxes, mgt, cand_boxes);
  return assign_sparse(pd_scores, scores_are_logits, pd_bboxes, anc_points, labels, gt_bboxes, mgt, cand_boxes);
}

Assignment TaskAlignedAssigner::assign_dense(const at::Tensor& pd_scores, bool scores_are_logits,
                                             const at::Tensor& pd_bboxes, const at::Tensor& anc_points,
                                             const at::Tensor& labels, const at::Tensor& gt_bboxes,
                                             const at::Tensor& mgt, const at::Tensor& cand_boxes) const {
  const int64_t bs = pd_scores.size(0), na = pd_scores.size(1), nmax = gt_bboxes.size(1);
  const auto dtype = pd_bboxes.scalar_type();
  // 1. Candidates: anchor centre strictly inside the (small-side-enlarged) GT box.
  auto gxyxy = cand_boxes.unsqueeze(2);  // (B, M, 1, 4)
  auto ctr = anc_points.to(dtype);       // (A, 2)
  auto cx = ctr.select(1, 0), cy = ctr.select(1, 1);
  // min of the four distances (anchor − x1, anchor − y1, x2 − anchor, y2 − anchor) > eps, without a (B,M,A,4) cat
  auto dmin = torch::minimum(torch::minimum(cx - gxyxy.select(-1, 0), cy - gxyxy.select(-1, 1)),
                             torch::minimum(gxyxy.select(-1, 2) - cx, gxyxy.select(-1, 3) - cy));  // (B, M, A)
  auto mask_in_gts = dmin.gt(eps_).to(dtype);

  // 2. Alignment metric on every pair (no host sync), zero off the candidates.
  auto cand = (mask_in_gts * mgt).to(torch::kBool);  // (B, M, A)
  auto gtb = gt_bboxes.to(dtype);
  auto scores_t = pd_scores.transpose(1, 2);  // (B, nc, A)
  auto bbox_scores = scores_t.gather(1, labels.clamp(0, num_classes_ - 1).unsqueeze(-1).expand({bs, nmax, na}));
  if (scores_are_logits) bbox_scores = bbox_scores.sigmoid();
  bbox_scores = bbox_scores.masked_fill(~cand, 0);
  auto overlaps = bbox_iou(gtb.unsqueeze(2), pd_bboxes.unsqueeze(1), /*xywh=*/false, IouKind::CIoU)
                      .squeeze(-1)
                      .clamp_min(0)
                      .masked_fill(~cand, 0);  // (B, M, A)
  auto align_metric = bbox_scores.pow(alpha_) * overlaps.pow(beta_);

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

  // 6. Normalise by per-GT best overlap / best metric; one-hot(label) × that value on foreground anchors.
  align_metric = align_metric * mask_pos;
  auto pos_align = align_metric.amax(-1, true);                             // (B, M, 1)
  auto pos_overlaps = (overlaps * mask_pos).amax(-1, true);                 // (B, M, 1)
  auto norm = (align_metric * pos_overlaps / (pos_align + eps_)).amax(-2);  // (B, A)
  return finish(pd_scores, labels, gt_bboxes, target_gt_idx, fg_mask, norm);
}

Assignment TaskAlignedAssigner::finish(const at::Tensor& pd_scores, const at::Tensor& labels,
                                       const at::Tensor& gt_bboxes, const at::Tensor& target_gt_idx,
                                       const at::Tensor& fg_mask, const at::Tensor& norm) const {
  const int64_t bs = pd_scores.size(0), nmax = gt_bboxes.size(1);
  // 5. Targets gathered from the assigned GT (GT 0 of the image on background anchors, as the reference).
  auto flat_idx = target_gt_idx + torch::arange(bs, target_gt_idx.options()).unsqueeze(-1) * nmax;
  auto target_labels = labels.flatten().index({flat_idx}).clamp_min(0);                         // (B, A)
  auto target_bboxes = gt_bboxes.to(norm.scalar_type()).reshape({-1, 4}).index({flat_idx});  // (B, A, 4)
  auto value = norm.masked_fill(~fg_mask, 0).to(pd_scores.scalar_type()).unsqueeze(-1);
  auto target_scores = torch::zeros({bs, pd_scores.size(1), num_classes_}, pd_scores.options())
                           .scatter_(2, target_labels.clamp_max(num_classes_ - 1).unsqueeze(-1), value);
  return {target_labels, target_bboxes, target_scores, fg_mask, target_gt_idx};
}

Assignment TaskAlignedAssigner::assign_sparse(const at::Tensor& pd_scores, bool scores_are_logits,
                                              const at::Tensor& pd_bboxes, const at::Tensor& anc_points,
                                              const at::Tensor& labels, const at::Tensor& gt_bboxes,
                                              const at::Tensor& mgt, const at::Tensor& cand_boxes) const {
  const int64_t bs = pd_scores.size(0), na = pd_scores.size(1), nmax = gt_bboxes.size(1);
  const auto dtype = pd_bboxes.scalar_type();
  const auto lopts = pd_scores.options().dtype(torch::kLong);
  const int64_t k = std::min(topk_, na);
  auto ctr = anc_points.to(dtype);  // (A, 2)

  // 1. Candidate pairs without a (B, M, A) pass: per valid GT, the anchors whose x (or y, whichever band is
  //    narrower) lies in [x1, x2] come from a binary search over the anchors sorted along that axis; the exact
  //    test (the dense path's min of the four distances > eps, same float operations) then filters that band.
  auto valid = mgt.view({bs * nmax}).gt(0).nonzero().view({-1});  // flat GT ids g = b·M + m
  auto boxes = cand_boxes.reshape({bs * nmax, 4}).index_select(0, valid);
  at::Tensor start, count;
  std::array<at::Tensor, 2> order;
  for (int axis = 0; axis < 2; ++axis) {
    auto [sorted, ord] = ctr.select(1, axis).sort(/*stable=*/true, 0, false);
    order[axis] = ord;
    auto lo = torch::searchsorted(sorted, boxes.select(1, axis).contiguous(), false, /*right=*/false);
    auto hi = torch::searchsorted(sorted, boxes.select(1, axis + 2).contiguous(), false, /*right=*/true);
    auto n = (hi - lo).clamp_min(0);
    if (axis == 0) {
      start = lo, count = n;
    } else {
      auto use_y = n < count;
      start = torch::where(use_y, lo + na, start);  // offsets ≥ A index the y order
      count = torch::where(use_y, n, count);
    }
  }
  auto gpair = torch::repeat_interleave(torch::arange(valid.numel(), lopts), count);  // (T) row into `valid`
  auto first = count.cumsum(0) - count;
  auto pos = torch::arange(gpair.numel(), lopts) - first.index({gpair}) + start.index({gpair});
  auto ia = torch::cat(order).index({pos});  // anchor of each band pair
  auto box = boxes.index({gpair});
  auto cxy = ctr.index({ia});
  auto cx = cxy.select(1, 0), cy = cxy.select(1, 1);
  auto dmin = torch::minimum(torch::minimum(cx - box.select(1, 0), cy - box.select(1, 1)),
                             torch::minimum(box.select(1, 2) - cx, box.select(1, 3) - cy));
  auto keep = dmin.gt(eps_).nonzero().view({-1});
  ia = ia.index({keep});
  auto g = valid.index({gpair.index({keep})});  // flat GT id of each candidate pair
  // Order pairs by (g, anchor), as nonzero() of the dense mask would list them.
  {
    auto o = std::get<1>((g * na + ia).sort(/*stable=*/false, 0, false));
    g = g.index({o}), ia = ia.index({o});
  }
  auto ib = g.div(nmax, "floor");
  const int64_t npairs = g.numel();

  // 2. Alignment metric of the candidate pairs.
  auto ov = bbox_iou(gt_bboxes.to(dtype).reshape({-1, 4}).index({g}), pd_bboxes.index({ib, ia}), /*xywh=*/false,
                     IouKind::CIoU)
                .squeeze(-1)
                .clamp_min(0);
  auto sc = pd_scores.index({ib, ia, labels.flatten().index({g}).clamp(0, num_classes_ - 1)});
  if (scores_are_logits) sc = sc.sigmoid();
  auto metric = sc.pow(alpha_) * ov.pow(beta_);

  // 3. Top-k per GT among its candidates: rank by metric (descending) inside each GT's group. A non-candidate
  //    has metric 0, so the dense top-k can only differ where zeros or ties reach rank k: those GTs (rare) are
  //    re-ranked with torch::topk over their dense row, which reproduces the dense path exactly.
  auto o = std::get<1>(metric.sort(/*stable=*/true, 0, /*descending=*/true));
  o = o.index({std::get<1>(g.index({o}).sort(/*stable=*/true, 0, false))});  // by g, metric descending inside a group
  auto gs = g.index({o}), ms = metric.index({o});
  auto ngt = torch::bincount(gs, {}, bs * nmax);
  auto rank = torch::arange(npairs, lopts) - (ngt.cumsum(0) - ngt).index({gs});
  auto sel_sorted = rank < k;
  // GTs whose k-th and (k+1)-th candidate metrics tie, or with fewer than k candidates of which some score 0
  // (dense top-k would pick among zeros): evaluate as the dense path does.
  const auto bopts = lopts.dtype(torch::kBool);
  auto next_same = torch::zeros({npairs}, bopts);
  if (npairs > 1) {
    auto same = gs.narrow(0, 1, npairs - 1).eq(gs.narrow(0, 0, npairs - 1)) &
                ms.narrow(0, 1, npairs - 1).eq(ms.narrow(0, 0, npairs - 1));
    next_same.narrow(0, 0, npairs - 1).copy_(same);
  }
  auto tie_at_k = (rank == k - 1) & next_same;
  auto zero_in = (rank < k) & ms.eq(0);
  auto redo = torch::zeros({bs * nmax}, bopts);
  redo.index_put_({gs.index({tie_at_k | zero_in})}, true);
  auto pos_pair = torch::empty({npairs}, bopts);
  pos_pair.index_put_({o}, sel_sorted);
  auto redo_g = redo.nonzero().view({-1});
  if (redo_g.numel() > 0) {
    auto rows = torch::zeros({bs * nmax, na}, metric.options());  // only redo rows are read
    auto in_redo = redo.index({g});
    auto rg = g.index({in_redo}), ra = ia.index({in_redo});
    rows.index_put_({rg, ra}, metric.index({in_redo}));
    auto top = std::get<1>(rows.index({redo_g}).topk(k, -1, /*largest=*/true));  // (R, k)
    auto hit = torch::zeros({redo_g.numel(), na}, bopts).scatter_(1, top, true);
    auto row_of = torch::full({bs * nmax}, -1, lopts).index_put_({redo_g}, torch::arange(redo_g.numel(), lopts));
    pos_pair.index_put_({in_redo}, hit.index({row_of.index({rg}), ra}));
  }

  // 4. Anchors positive for several GTs keep the GT of largest overlap over all GTs of the image (first one on
  //    ties, as argmax); all-zero overlaps pick GT 0 (non-candidates have overlap 0).
  auto anc_flat = ib * na + ia;  // (b, a) of each pair
  auto pa = anc_flat.index({pos_pair}), pg = g.index({pos_pair});
  auto npos = torch::zeros({bs * na}, lopts).index_add_(0, pa, torch::ones_like(pa));
  auto best_ov = torch::zeros({bs * na}, ov.options()).scatter_reduce(0, anc_flat, ov, "amax", true);
  auto m_of = g - ib * nmax;
  auto at_best = ov.eq(best_ov.index({anc_flat})) & ov.gt(0);
  auto best_m = torch::full({bs * na}, nmax, lopts)
                    .scatter_reduce(0, anc_flat.index({at_best}), m_of.index({at_best}), "amin", true);
  best_m = torch::where(best_m == nmax, torch::zeros_like(best_m), best_m);  // no positive overlap → GT 0
  // Final positive pairs: the single positive of an anchor, or its best-overlap candidate pair when multiple.
  auto multi_pair = npos.index({anc_flat}) > 1;
  auto final_pair = (pos_pair & ~multi_pair) | (multi_pair & m_of.eq(best_m.index({anc_flat})));
  auto fg_flat = npos > 0;
  auto target_gt_idx = torch::zeros({bs * na}, lopts);
  target_gt_idx.index_put_({fg_flat}, best_m.index({fg_flat}));  // multi anchors; single ones overwritten next
  auto single = pos_pair & ~multi_pair;
  target_gt_idx.index_put_({anc_flat.index({single})}, m_of.index({single}));

  // 6. Per-GT max metric / max overlap over its final positives; value of each foreground anchor.
  auto fa = anc_flat.index({final_pair}), fgid = g.index({final_pair});
  auto fm = metric.index({final_pair}), fo = ov.index({final_pair});
  auto pos_align = torch::zeros({bs * nmax}, metric.options()).scatter_reduce(0, fgid, fm, "amax", true);
  auto pos_ov = torch::zeros({bs * nmax}, ov.options()).scatter_reduce(0, fgid, fo, "amax", true);
  auto val = fm * pos_ov.index({fgid}) / (pos_align.index({fgid}) + eps_);
  auto norm = torch::zeros({bs * na}, metric.options()).scatter_reduce(0, fa, val, "amax", true);
  return finish(pd_scores, labels, gt_bboxes, target_gt_idx.view({bs, na}), fg_flat.view({bs, na}),
                norm.view({bs, na}));
}

}  // namespace yolo11::loss
