#include "yolo11/model/modules.h"

#include <torch/torch.h>

#include <cmath>
#include <numeric>
#include <stdexcept>
#include <string>

namespace yolo11::model {

namespace F = torch::nn::functional;

// ---- Conv -----------------------------------------------------------------------------------------------------
ConvImpl::ConvImpl(const ConvOptions& o) : o_(o) {
  conv = register_module("conv", torch::nn::Conv2d(torch::nn::Conv2dOptions(o.c1, o.c2, o.k)
                                                       .stride(o.s)
                                                       .padding(o.k / 2)
                                                       .groups(o.g)
                                                       .bias(false)));
  bn = register_module("bn", torch::nn::BatchNorm2d(
                                 torch::nn::BatchNorm2dOptions(o.c2).eps(kBnEps).momentum(kBnMomentum)));
}

torch::Tensor ConvImpl::forward(const torch::Tensor& x) {
  torch::Tensor y = conv->forward(x);
  if (!fused_) y = bn_forward_ && is_training() ? bn_forward_(y, *bn) : bn->forward(y);
  return o_.act ? torch::silu(y) : y;
}

int64_t set_bn_forward(torch::nn::Module& m, const ConvImpl::BnForward& fn) {
  int64_t n = 0;
  for (const auto& sub : m.modules(/*include_self=*/true))
    if (auto* c = dynamic_cast<ConvImpl*>(sub.get())) {
      c->set_bn_forward(fn);
      ++n;
    }
  return n;
}

void ConvImpl::fuse() {
  if (fused_) return;
  torch::NoGradGuard no_grad;
  const auto w = conv->weight;
  const auto inv_std = (bn->running_var + bn->options.eps()).rsqrt();
  const auto gamma = bn->weight * inv_std;  // (c2,)
  auto fused = torch::nn::Conv2d(torch::nn::Conv2dOptions(o_.c1, o_.c2, o_.k)
                                     .stride(o_.s)
                                     .padding(o_.k / 2)
                                     .groups(o_.g)
                                     .bias(true));
  fused->to(w.device(), w.scalar_type());
  fused->weight.copy_(w * gamma.view({-1, 1, 1, 1}));
  fused->bias.copy_(bn->bias - bn->running_mean * gamma);
  fused->weight.set_requires_grad(false);
  fused->bias.set_requires_grad(false);
  fused->train(is_training());
  conv = replace_module("conv", fused);
  unregister_module("bn");
  bn = nullptr;
  fused_ = true;
}

Conv DWConv(int64_t c1, int64_t c2, int64_t k, int64_t s, bool act) {
  return Conv(ConvOptions{c1, c2, k, s, std::gcd(c1, c2), act});
}

// ---- Bottleneck -------------------------------------------------------------------------------------------------
BottleneckImpl::BottleneckImpl(const BottleneckOptions& o) : add_(o.shortcut && o.c1 == o.c2) {
  const auto c_ = static_cast<int64_t>(static_cast<double>(o.c2) * o.e);
  cv1 = register_module("cv1", Conv(ConvOptions{o.c1, c_, o.k1, 1}));
  cv2 = register_module("cv2", Conv(ConvOptions{c_, o.c2, o.k2, 1, o.g}));
}

torch::Tensor BottleneckImpl::forward(const torch::Tensor& x) {
  auto y = cv2->forward(cv1->forward(x));
  return add_ ? x + y : y;
}

// ---- C3k ----------------------------------------------------------------------------------------------------------
C3kImpl::C3kImpl(const C3kOptions& o) {
  const auto c_ = static_cast<int64_t>(static_cast<double>(o.c2) * o.e);
  cv1 = register_module("cv1", Conv(ConvOptions{o.c1, c_, 1, 1}));
  cv2 = register_module("cv2", Conv(ConvOptions{o.c1, c_, 1, 1}));
  cv3 = register_module("cv3", Conv(ConvOptions{2 * c_, o.c2, 1}));
  torch::nn::Sequential seq;
  for (int64_t i = 0; i < o.n; ++i)
    seq->push_back(Bottleneck(BottleneckOptions{c_, c_, o.shortcut, o.g, o.k, o.k, 1.0}));
  m = register_module("m", seq);
}

torch::Tensor C3kImpl::forward(const torch::Tensor& x) {
  return cv3->forward(torch::cat({m->forward(cv1->forward(x)), cv2->forward(x)}, 1));
}

// ---- C3k2 ---------------------------------------------------------------------------------------------------------
C3k2Impl::C3k2Impl(const C3k2Options& o) : c_(static_cast<int64_t>(static_cast<double>(o.c2) * o.e)) {
  cv1 = register_module("cv1", Conv(ConvOptions{o.c1, 2 * c_, 1, 1}));
  cv2 = register_module("cv2", Conv(ConvOptions{(2 + o.n) * c_, o.c2, 1}));
  torch::nn::ModuleList list;
  for (int64_t i = 0; i < o.n; ++i) {
    if (o.c3k) {
      C3k b(C3kOptions{c_, c_, 2, o.shortcut, o.g});
      list->push_back(b);
      blocks_.emplace_back([b](const torch::Tensor& t) mutable { return b->forward(t); });
    } else {
      Bottleneck b(BottleneckOptions{c_, c_, o.shortcut, o.g});
      list->push_back(b);
      blocks_.emplace_back([b](const torch::Tensor& t) mutable { return b->forward(t); });
    }
  }
  m = register_module("m", list);
}

torch::Tensor C3k2Impl::forward(const torch::Tensor& x) {
  std::vector<torch::Tensor> y = cv1->forward(x).chunk(2, 1);
  y.reserve(2 + blocks_.size());
  for (auto& block : blocks_) y.push_back(block(y.back()));
  return cv2->forward(torch::cat(y, 1));
}

// ---- SPPF ---------------------------------------------------------------------------------------------------------
SPPFImpl::SPPFImpl(const SPPFOptions& o) {
  const int64_t c_ = o.c1 / 2;
  cv1 = register_module("cv1", Conv(ConvOptions{o.c1, c_, 1, 1, 1, o.act}));
  cv2 = register_module("cv2", Conv(ConvOptions{c_ * 4, o.c2, 1, 1}));
  m = register_module("m", torch::nn::MaxPool2d(torch::nn::MaxPool2dOptions(o.k).stride(1).padding(o.k / 2)));
}

torch::Tensor SPPFImpl::forward(const torch::Tensor& x) {
  std::vector<torch::Tensor> y{cv1->forward(x)};
  for (int i = 0; i < 3; ++i) y.push_back(m->forward(y.back()));
  return cv2->forward(torch::cat(y, 1));
}

// ---- Attention ----------------------------------------------------------------------------------------------------
AttentionImpl::AttentionImpl(const AttentionOptions& o)
    : num_heads_(o.num_heads),
      head_dim_(o.dim / o.num_heads),
      key_dim_(static_cast<int64_t>(static_cast<double>(o.dim / o.num_heads) * o.attn_ratio)),
      scale_(std::pow(static_cast<double>(key_dim_), -0.5)) {
  if (o.num_heads <= 0 || o.dim % o.num_heads != 0)
    throw std::invalid_argument("Attention: dim " + std::to_string(o.dim) + " is not divisible by num_heads " +
                                std::to_string(o.num_heads));
  const int64_t h = o.dim + key_dim_ * num_heads_ * 2;
  qkv = register_module("qkv", Conv(ConvOptions{o.dim, h, 1, 1, 1, false}));
  proj = register_module("proj", Conv(ConvOptions{o.dim, o.dim, 1, 1, 1, false}));
  pe = register_module("pe", Conv(ConvOptions{o.dim, o.dim, 3, 1, o.dim, false}));
}

torch::Tensor AttentionImpl::forward(const torch::Tensor& x) {
  const int64_t B = x.size(0), C = x.size(1), H = x.size(2), W = x.size(3), N = H * W;
  const auto parts =
      qkv->forward(x).view({B, num_heads_, 2 * key_dim_ + head_dim_, N}).split_with_sizes({key_dim_, key_dim_, head_dim_}, 2);
  const auto& q = parts[0];
  const auto& k = parts[1];
  const auto& v = parts[2];
  const auto attn = (torch::matmul(q.transpose(-2, -1), k) * scale_).softmax(-1);  // (B, h, N, N)
  auto y = torch::matmul(v, attn.transpose(-2, -1)).view({B, C, H, W}) + pe->forward(v.reshape({B, C, H, W}));
  return proj->forward(y);
}

// ---- PSABlock / C2PSA ---------------------------------------------------------------------------------------------
PSABlockImpl::PSABlockImpl(const PSABlockOptions& o) : add_(o.shortcut) {
  attn = register_module("attn", Attention(AttentionOptions{o.c, o.num_heads, o.attn_ratio}));
  ffn = register_module("ffn", torch::nn::Sequential(Conv(ConvOptions{o.c, o.c * 2, 1}),
                                                      Conv(ConvOptions{o.c * 2, o.c, 1, 1, 1, false})));
}

torch::Tensor PSABlockImpl::forward(const torch::Tensor& x) {
  auto y = add_ ? x + attn->forward(x) : attn->forward(x);
  return add_ ? y + ffn->forward(y) : ffn->forward(y);
}

C2PSAImpl::C2PSAImpl(const C2PSAOptions& o) : c_(static_cast<int64_t>(static_cast<double>(o.c1) * o.e)) {
  if (o.c1 != o.c2)
    throw std::invalid_argument("C2PSA needs c1 == c2 (got " + std::to_string(o.c1) + ", " + std::to_string(o.c2) +
                                ")");
  cv1 = register_module("cv1", Conv(ConvOptions{o.c1, 2 * c_, 1, 1}));
  cv2 = register_module("cv2", Conv(ConvOptions{2 * c_, o.c1, 1}));
  torch::nn::Sequential seq;
  for (int64_t i = 0; i < o.n; ++i) seq->push_back(PSABlock(PSABlockOptions{c_, 0.5, c_ / 64}));
  m = register_module("m", seq);
}

torch::Tensor C2PSAImpl::forward(const torch::Tensor& x) {
  auto ab = cv1->forward(x).split_with_sizes({c_, c_}, 1);
  auto b = m->forward(ab[1]);
  return cv2->forward(torch::cat({ab[0], b}, 1));
}

// ---- Concat / Upsample ----------------------------------------------------------------------------------------------
torch::Tensor ConcatImpl::forward(const std::vector<torch::Tensor>& xs) const { return torch::cat(xs, dim_); }

torch::Tensor UpsampleImpl::forward(const torch::Tensor& x) const {
  return F::interpolate(x, F::InterpolateFuncOptions()
                               .scale_factor(std::vector<double>{static_cast<double>(factor_),
                                                                 static_cast<double>(factor_)})
                               .mode(torch::kNearest));
}

// ---- DFL ----------------------------------------------------------------------------------------------------------
DFLImpl::DFLImpl(int64_t c1) : c1_(c1) {
  conv = register_module("conv", torch::nn::Conv2d(torch::nn::Conv2dOptions(c1, 1, 1).bias(false)));
  torch::NoGradGuard no_grad;
  conv->weight.copy_(torch::arange(c1, torch::kFloat).view({1, c1, 1, 1}));
  conv->weight.set_requires_grad(false);
}

torch::Tensor DFLImpl::forward(const torch::Tensor& x) const {
  const int64_t b = x.size(0), a = x.size(2);
  const auto p = x.view({b, 4, c1_, a}).transpose(2, 1).softmax(1);  // (b, c1, 4, a)
  return torch::conv2d(p, conv->weight.to(p.scalar_type())).view({b, 4, a});
}

// ---- Detect -------------------------------------------------------------------------------------------------------
std::pair<torch::Tensor, torch::Tensor> make_anchors(const std::vector<std::pair<int64_t, int64_t>>& hw,
                                                     const std::vector<int64_t>& strides,
                                                     const torch::Device& device, double offset) {
  std::vector<torch::Tensor> points, strs;
  const auto opt = torch::TensorOptions().dtype(torch::kFloat).device(device);
  for (size_t i = 0; i < hw.size(); ++i) {
    const auto [h, w] = hw[i];
    const auto sx = torch::arange(w, opt) + offset;
    const auto sy = torch::arange(h, opt) + offset;
    const auto grid = torch::meshgrid({sy, sx}, "ij");
    points.push_back(torch::stack({grid[1], grid[0]}, -1).view({-1, 2}));
    strs.push_back(torch::full({h * w, 1}, static_cast<double>(strides.at(i)), opt));
  }
  return {torch::cat(points), torch::cat(strs)};
}

DetectImpl::DetectImpl(const DetectOptions& o) : o_(o) {
  if (o.ch.empty() || o.ch.size() != o.strides.size())
    throw std::invalid_argument("Detect: need one stride per input level (got " + std::to_string(o.ch.size()) +
                                " levels, " + std::to_string(o.strides.size()) + " strides)");
  c2_ = std::max({int64_t{16}, o.ch[0] / 4, o.reg_max * 4});
  c3_ = std::max(o.ch[0], std::min(o.nc, int64_t{100}));
  torch::nn::ModuleList box, cls;
  for (const int64_t x : o.ch) {
    box->push_back(Seq(Conv(ConvOptions{x, c2_, 3}), Conv(ConvOptions{c2_, c2_, 3}),
                                         torch::nn::Conv2d(torch::nn::Conv2dOptions(c2_, 4 * o.reg_max, 1))));
    cls->push_back(Seq(Seq(DWConv(x, x, 3), Conv(ConvOptions{x, c3_, 1})),
                       Seq(DWConv(c3_, c3_, 3), Conv(ConvOptions{c3_, c3_, 1})),
                                         torch::nn::Conv2d(torch::nn::Conv2dOptions(c3_, o.nc, 1))));
  }
  cv2 = register_module("cv2", box);
  cv3 = register_module("cv3", cls);
  dfl = register_module("dfl", DFL(o.reg_max));
  bias_init();
}

void DetectImpl::bias_init() {
  torch::NoGradGuard no_grad;
  for (size_t i = 0; i < o_.ch.size(); ++i) {
    auto& box_out = cv2->at<SeqImpl>(i).at<torch::nn::Conv2dImpl>(2);
    auto& cls_out = cv3->at<SeqImpl>(i).at<torch::nn::Conv2dImpl>(2);
    box_out.bias.fill_(1.0);
    const double s = static_cast<double>(o_.strides[i]);
    cls_out.bias.fill_(std::log(5.0 / static_cast<double>(o_.nc) / std::pow(640.0 / s, 2.0)));
  }
}

std::vector<torch::Tensor> DetectImpl::forward(const std::vector<torch::Tensor>& xs) {
  if (xs.size() != o_.ch.size())
    throw std::invalid_argument("Detect: expected " + std::to_string(o_.ch.size()) + " feature maps, got " +
                                std::to_string(xs.size()));
  std::vector<torch::Tensor> out;
  out.reserve(xs.size());
  for (size_t i = 0; i < xs.size(); ++i) {
    auto& box = cv2->at<SeqImpl>(i);
    auto& cls = cv3->at<SeqImpl>(i);
    out.push_back(torch::cat({box.forward(xs[i]), cls.forward(xs[i])}, 1));
  }
  return out;
}

torch::Tensor DetectImpl::decode(const std::vector<torch::Tensor>& feats) const {
  if (feats.size() != o_.ch.size())
    throw std::invalid_argument("Detect::decode: expected " + std::to_string(o_.ch.size()) + " levels, got " +
                                std::to_string(feats.size()));
  const int64_t b = feats[0].size(0);
  std::vector<torch::Tensor> flat;
  std::vector<std::pair<int64_t, int64_t>> hw;
  for (const auto& f : feats) {
    flat.push_back(f.reshape({b, no(), -1}));
    hw.emplace_back(f.size(2), f.size(3));
  }
  const auto x = torch::cat(flat, 2);  // (b, no, A)
  const auto parts = x.split_with_sizes({4 * o_.reg_max, o_.nc}, 1);
  auto [anchors, stride] = make_anchors(hw, o_.strides, x.device());
  anchors = anchors.transpose(0, 1).unsqueeze(0).to(x.scalar_type());  // (1, 2, A)
  stride = stride.transpose(0, 1).unsqueeze(0).to(x.scalar_type());    // (1, 1, A)
  const auto dist = dfl->forward(parts[0]);                            // (b, 4, A): l, t, r, b
  const auto lt_rb = dist.chunk(2, 1);
  const auto x1y1 = anchors - lt_rb[0];
  const auto x2y2 = anchors + lt_rb[1];
  const auto boxes = torch::cat({(x1y1 + x2y2) / 2, x2y2 - x1y1}, 1) * stride;
  return torch::cat({boxes, parts[1].sigmoid()}, 1);
}

}  // namespace yolo11::model
