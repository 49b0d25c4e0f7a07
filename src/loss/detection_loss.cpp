#include "yolo11/loss/detection_loss.h"

#include <torch/torch.h>

#include <sstream>
#include <stdexcept>

#include "yolo11/loss/iou.h"

namespace yolo11::loss {
namespace {

std::vector<double> to_double(const std::vector<int64_t>& v) { return {v.begin(), v.end()}; }

/// Σ BCE-with-logits(x, t) over all elements = Σ softplus(x) − Σ x·t, with the gradient (sigmoid(x) − t)·g
/// produced in one buffer (the generic graph would allocate and add several (B, A, nc) temporaries). When
/// `fg_only` is set, t is zero outside the rows selected by fg (B, A), and the x·t terms are taken there only.
struct BceWithLogitsSum : public torch::autograd::Function<BceWithLogitsSum> {
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& x, const at::Tensor& t,
                            const at::Tensor& fg, bool fg_only) {
    ctx->save_for_backward({x, t, fg});
    ctx->saved_data["fg_only"] = fg_only;
    const auto xt = fg_only ? (x.index({fg}) * t.index({fg})).sum() : (x * t).sum();
    return torch::softplus(x).sum() - xt;
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grad_out) {
    const auto saved = ctx->get_saved_variables();
    const auto &x = saved[0], &t = saved[1], &fg = saved[2];
    auto grad = torch::sigmoid(x);
    if (ctx->saved_data["fg_only"].toBool())
      grad.index_put_({fg}, grad.index({fg}) - t.index({fg}));
    else
      grad.sub_(t);
    grad.mul_(grad_out[0]);
    return {grad, at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

}  // namespace

PaddedTargets preprocess_targets(const at::Tensor& batch_idx, const at::Tensor& cls, const at::Tensor& bboxes,
                                 int64_t batch_size, double img_h, double img_w, const at::Device& device) {
  const int64_t n = batch_idx.numel();
  if (cls.numel() != n || bboxes.numel() != n * 4)
    throw std::runtime_error("preprocess_targets: batch_idx has " + std::to_string(n) + " rows but cls has " +
                             std::to_string(cls.numel()) + " elements and bboxes " + std::to_string(bboxes.numel()) +
                             " (expected N and N*4)");
  auto fopts = torch::TensorOptions().dtype(torch::kFloat).device(device);
  if (n == 0) {
    return {torch::zeros({batch_size, 0, 1}, fopts.dtype(torch::kLong)), torch::zeros({batch_size, 0, 4}, fopts),
            torch::zeros({batch_size, 0, 1}, fopts.dtype(torch::kBool))};
  }
  auto bi = batch_idx.to(torch::kCPU).to(torch::kLong).view({-1});
  const int64_t lo = bi.min().item<int64_t>(), hi = bi.max().item<int64_t>();
  if (lo < 0 || hi >= batch_size)
    throw std::runtime_error("preprocess_targets: batch_idx values must lie in [0, " + std::to_string(batch_size) +
                             "), got range [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
  auto counts = torch::bincount(bi, {}, batch_size);
  const int64_t m = counts.max().item<int64_t>();
  // Row position inside its image, in order of appearance: stable sort by image, minus the image's offset.
  auto order = std::get<1>(bi.sort(/*stable=*/true, 0, false));
  auto offsets = counts.cumsum(0) - counts;
  auto pos = torch::empty_like(bi);
  pos.index_put_({order}, torch::arange(n, bi.options()) - offsets.index({bi.index({order})}));
  auto flat = (bi * m + pos).to(device);

  auto scale = torch::tensor({img_w, img_h, img_w, img_h}, fopts);
  auto xyxy = xywh2xyxy(bboxes.to(device, torch::kFloat).view({n, 4}) * scale);
  auto gt_bboxes = torch::zeros({batch_size * m, 4}, fopts).index_copy_(0, flat, xyxy).view({batch_size, m, 4});
  auto gt_labels = torch::zeros({batch_size * m}, fopts.dtype(torch::kLong))
                       .index_copy_(0, flat, cls.to(device).to(torch::kLong).view({n}))
                       .view({batch_size, m, 1});
  auto mask_gt = gt_bboxes.sum(2, true).gt(0.0);
  return {gt_labels, gt_bboxes, mask_gt};
}

DetectionLoss::DetectionLoss(int64_t nc, std::vector<int64_t> strides, int64_t reg_max, LossGains gains,
                             int64_t tal_topk)
    : nc_(nc),
      strides_(std::move(strides)),
      reg_max_(reg_max),
      gains_(gains),
      assigner_(tal_topk, nc, 0.5, 6.0, to_double(strides_)) {
  if (nc_ < 1 || reg_max_ < 2 || strides_.empty())
    throw std::runtime_error("DetectionLoss: need nc >= 1, reg_max >= 2 and at least one stride (got nc " +
                             std::to_string(nc_) + ", reg_max " + std::to_string(reg_max_) + ")");
}

DetectionLoss::Output DetectionLoss::operator()(const std::vector<at::Tensor>& feats, const at::Tensor& batch_idx,
                                                const at::Tensor& cls, const at::Tensor& bboxes,
                                                Diagnostics* diag) const {
  if (feats.size() != strides_.size())
    throw std::runtime_error("DetectionLoss: got " + std::to_string(feats.size()) + " feature maps, expected " +
                             std::to_string(strides_.size()) + " (one per stride)");
  const int64_t no = 4 * reg_max_ + nc_;
  const int64_t bs = feats[0].size(0);
  std::vector<at::Tensor> flat;
  std::vector<at::Tensor> feats_f;
  for (size_t i = 0; i < feats.size(); ++i) {
    const auto& f = feats[i];
    if (f.dim() != 4 || f.size(0) != bs || f.size(1) != no) {
      std::ostringstream ss;
      ss << "DetectionLoss: feature map " << i << " has shape " << f.sizes() << ", expected (" << bs << ", " << no
         << " = 4*reg_max + nc, H, W)";
      throw std::runtime_error(ss.str());
    }
    auto ff = f.to(torch::kFloat);
    feats_f.push_back(ff);
    flat.push_back(ff.view({bs, no, -1}).transpose(1, 2));  // (B, H·W, no) view
  }
  // One copy into anchor-major layout, then split views (split's backward is a single concatenation; narrow's
  // would zero-fill two full-size buffers).
  auto parts = torch::cat(flat, 1).split_with_sizes({4 * reg_max_, nc_}, -1);
  const auto& pred_distri = parts[0];  // (B, A, 4·reg_max) view, last dim contiguous
  const auto& pred_scores = parts[1];  // (B, A, nc) view
  const int64_t na = pred_scores.size(1);
  const auto device = pred_scores.device();

  const double img_h = static_cast<double>(feats[0].size(2) * strides_[0]);
  const double img_w = static_cast<double>(feats[0].size(3) * strides_[0]);
  auto [anchor_points, stride_tensor] = make_anchors(feats_f, strides_, 0.5);
  auto targets = preprocess_targets(batch_idx, cls, bboxes, bs, img_h, img_w, device);

  // Decode boxes: DFL expectation per side (grid units), then xyxy around the anchor.
  auto proj = torch::arange(reg_max_, pred_distri.options().requires_grad(false));
  auto logits = pred_distri.view({bs, na, 4, reg_max_});
  auto pred_bboxes = dist2bbox(logits.softmax(3).matmul(proj), anchor_points);  // (B, A, 4) grid units

  auto pd_px = (pred_bboxes.detach() * stride_tensor);
  auto asg = assigner_.assign(pred_scores.detach(), /*scores_are_logits=*/true, pd_px, anchor_points * stride_tensor,
                              targets.gt_labels, targets.gt_bboxes, targets.mask_gt);
  auto target_scores_sum = asg.target_scores.sum().clamp_min(1.0);

  // BCE-with-logits summed over anchors and classes, written as Σ softplus(x) − Σ x·t (the same function as
  // binary_cross_entropy_with_logits; gradient sigmoid(x) − t). Targets are zero off the foreground, so on the
  // CPU the x·t term is taken over foreground rows only.
  const bool dense = dense_override_ ? *dense_override_ : pred_scores.is_cuda();
  auto loss_cls = BceWithLogitsSum::apply(pred_scores, asg.target_scores, asg.fg_mask, !dense) / target_scores_sum;

  // Box and DFL terms on foreground anchors, weighted by Σ_c target_scores. On CUDA they are evaluated on every
  // anchor (the weight is zero on background), which gives the same sums without the host sync of a boolean
  // index; on the CPU only the foreground rows are gathered, as the reference does.
  auto weight = asg.target_scores.sum(-1, true);           // (B, A, 1)
  auto target_bboxes = asg.target_bboxes / stride_tensor;  // grid units
  at::Tensor pb = pred_bboxes, tb = target_bboxes, w = weight, lg = logits, ap = anchor_points;
  if (!dense) {
    const auto& fg = asg.fg_mask;
    pb = pred_bboxes.index({fg}), tb = target_bboxes.index({fg}), w = weight.index({fg}), lg = logits.index({fg});
    ap = anchor_points.index_select(0, fg.nonzero().select(1, 1));
  }
  auto iou = bbox_iou(pb, tb, /*xywh=*/false, IouKind::CIoU);  // (..., 1)
  auto loss_box = ((1.0 - iou) * w).sum() / target_scores_sum;

  auto target_ltrb = bbox2dist(ap, tb, static_cast<double>(reg_max_ - 1))
                         .clamp(0, static_cast<double>(reg_max_ - 1) - 0.01);  // (..., 4)
  auto tl = target_ltrb.to(torch::kLong);
  auto tr = tl + 1;
  auto wl = tr.to(target_ltrb.scalar_type()) - target_ltrb;
  auto wr = 1 - wl;
  auto logp = lg.log_softmax(-1);  // (..., 4, reg_max)
  auto ce_l = -logp.gather(-1, tl.unsqueeze(-1)).squeeze(-1);
  auto ce_r = -logp.gather(-1, tr.unsqueeze(-1)).squeeze(-1);
  auto dfl = (ce_l * wl + ce_r * wr).mean(-1, true);  // (..., 1)
  auto loss_dfl = (dfl * w).sum() / target_scores_sum;

  auto items_grad = torch::stack({loss_box * gains_.box, loss_cls * gains_.cls, loss_dfl * gains_.dfl});
  auto loss_vec = items_grad * static_cast<double>(bs);
  if (diag) {
    diag->targets = targets;
    diag->pd_bboxes = pd_px;
    diag->assignment = asg;
    diag->target_scores_sum = target_scores_sum.detach();
  }
  return {loss_vec.sum(), items_grad.detach(), loss_vec};
}

}  // namespace yolo11::loss
