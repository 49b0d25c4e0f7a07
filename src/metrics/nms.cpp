#include "yolo11/metrics/nms.h"

#include <torch/torch.h>

#include <algorithm>
#include <numeric>
#include <sstream>
#include <stdexcept>

#include "yolo11/loss/iou.h"

namespace yolo11::metrics {

at::Tensor nms(const at::Tensor& boxes_in, const at::Tensor& scores_in, double iou_threshold, int64_t limit) {
  auto boxes = boxes_in.to(torch::kCPU, torch::kFloat).contiguous();
  auto scores = scores_in.to(torch::kCPU, torch::kFloat).contiguous();
  const int64_t n = boxes.size(0);
  if (n == 0 || limit == 0) return torch::empty({0}, torch::kLong);
  const float* b = boxes.data_ptr<float>();
  const float* s = scores.data_ptr<float>();
  std::vector<int64_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [s](int64_t i, int64_t j) { return s[i] > s[j]; });
  std::vector<float> area(n);
  for (int64_t i = 0; i < n; ++i) area[i] = (b[4 * i + 2] - b[4 * i]) * (b[4 * i + 3] - b[4 * i + 1]);
  std::vector<char> suppressed(n, 0);
  std::vector<int64_t> keep;
  for (int64_t oi = 0; oi < n; ++oi) {
    const int64_t i = order[oi];
    if (suppressed[i]) continue;
    keep.push_back(i);
    if (limit > 0 && static_cast<int64_t>(keep.size()) >= limit) break;
    const float ix1 = b[4 * i], iy1 = b[4 * i + 1], ix2 = b[4 * i + 2], iy2 = b[4 * i + 3], iarea = area[i];
    for (int64_t oj = oi + 1; oj < n; ++oj) {
      const int64_t j = order[oj];
      if (suppressed[j]) continue;
      const float xx1 = std::max(ix1, b[4 * j]), yy1 = std::max(iy1, b[4 * j + 1]);
      const float xx2 = std::min(ix2, b[4 * j + 2]), yy2 = std::min(iy2, b[4 * j + 3]);
      const float w = std::max(0.f, xx2 - xx1), h = std::max(0.f, yy2 - yy1);
      const float inter = w * h;
      const float ovr = inter / (iarea + area[j] - inter);
      if (static_cast<double>(ovr) > iou_threshold) suppressed[j] = 1;
    }
  }
  return torch::tensor(keep, torch::kLong);
}

std::vector<at::Tensor> non_max_suppression(const at::Tensor& pred, const NmsOptions& o,
                                            std::vector<at::Tensor>* kept_index) {
  if (pred.dim() != 3 || pred.size(1) < 5) {
    std::ostringstream ss;
    ss << "non_max_suppression: pred must be (B, 4 + nc, A) with nc >= 1, got " << pred.sizes();
    throw std::runtime_error(ss.str());
  }
  torch::NoGradGuard no_grad;
  const int64_t bs = pred.size(0), nc = pred.size(1) - 4;
  const bool multi_label = o.multi_label && nc > 1;
  auto p = pred.detach().to(torch::kFloat).transpose(-1, -2);  // (B, A, 4 + nc), a view: input untouched
  auto boxes_all = loss::xywh2xyxy(p.narrow(-1, 0, 4));        // new tensor
  auto scores_all = p.narrow(-1, 4, nc);
  auto xc = std::get<0>(scores_all.max(-1)) > o.conf;  // (B, A)
  const auto fopts = pred.options().dtype(torch::kFloat);
  std::vector<at::Tensor> out(bs);
  if (kept_index) kept_index->assign(bs, at::Tensor());
  for (int64_t b = 0; b < bs; ++b) {
    auto idx = xc[b].nonzero().view({-1});  // candidate anchors, ascending
    auto box = boxes_all[b].index_select(0, idx), cls = scores_all[b].index_select(0, idx);
    at::Tensor x, xk;
    if (multi_label) {
      auto ij = (cls > o.conf).nonzero();  // row-major (anchor, class)
      auto i = ij.select(1, 0), j = ij.select(1, 1);
      x = torch::cat({box.index_select(0, i), cls.index({i, j}).unsqueeze(1), j.unsqueeze(1).to(torch::kFloat)}, 1);
      xk = idx.index_select(0, i);
    } else {
      auto [conf, j] = cls.max(1, true);
      auto keep = (conf.view({-1}) > o.conf).nonzero().view({-1});
      x = torch::cat({box, conf, j.to(torch::kFloat)}, 1).index_select(0, keep);
      xk = idx.index_select(0, keep);
    }
    if (x.size(0) > o.max_nms) {
      auto top = std::get<1>(x.select(1, 4).sort(/*stable=*/true, 0, /*descending=*/true)).narrow(0, 0, o.max_nms);
      x = x.index_select(0, top);
      xk = xk.index_select(0, top);
    }
    if (x.size(0) == 0) {
      out[b] = torch::zeros({0, 6}, fopts);
      if (kept_index) (*kept_index)[b] = torch::zeros({0}, fopts.dtype(torch::kLong));
      continue;
    }
    auto offset = x.narrow(1, 5, 1) * (o.agnostic ? 0.0 : o.max_wh);  // float32, as the reference
    auto i = nms(x.narrow(1, 0, 4) + offset, x.select(1, 4), o.iou, o.max_det).to(x.device());
    out[b] = x.index_select(0, i);
    if (kept_index) (*kept_index)[b] = xk.index_select(0, i);
  }
  return out;
}

}  // namespace yolo11::metrics
