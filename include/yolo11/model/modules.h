#pragma once
// YOLO11 building blocks (reference: Ultralytics 8.4.50 `ultralytics/nn/modules`). Every block registers its
// children under the names the reference state_dict uses, so `model.<i>.<child>...` keys line up exactly.
// Tensors are NCHW float; H, W are the block's input spatial size. No block throws at forward time except
// through LibTorch's own shape checks.
#include <torch/nn/module.h>
#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/pooling.h>
#include <torch/nn/pimpl.h>

#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

namespace yolo11::model {

/// BatchNorm settings every block uses (Ultralytics `initialize_weights`): eps 1e-3, momentum 0.03.
inline constexpr double kBnEps = 1e-3;
inline constexpr double kBnMomentum = 0.03;

/// nn.Sequential with a plain Tensor → Tensor forward, so it can nest inside another Sequential (LibTorch's
/// templated Sequential::forward cannot be stored in one). Children are named "0", "1", ... as in PyTorch.
class SeqImpl : public torch::nn::SequentialImpl {
 public:
  using SequentialImpl::SequentialImpl;
  torch::Tensor forward(torch::Tensor x) { return SequentialImpl::forward(std::move(x)); }
};
TORCH_MODULE(Seq);

// ---- Conv -----------------------------------------------------------------------------------------------------
/// Conv2d (kernel k, stride s, padding k/2, groups g, no bias) → BatchNorm2d → SiLU (or identity when !act).
/// Input (B, c1, H, W); output (B, c2, ceil(H/s), ceil(W/s)). Reference: `Conv` (`DWConv` = g = gcd(c1, c2)).
/// State-dict children: `conv`, `bn` (after fuse(): `conv` with bias, no `bn`).
struct ConvOptions {
  int64_t c1, c2, k = 1, s = 1, g = 1;
  bool act = true;
};
class ConvImpl : public torch::nn::Module {
 public:
  explicit ConvImpl(const ConvOptions& o);
  torch::Tensor forward(const torch::Tensor& x);
  /// Folds BN into the conv (weight·γ/√(var+eps), bias β − μ·γ/√(var+eps)); removes `bn`. Idempotent.
  void fuse();
  bool fused() const { return fused_; }
  const ConvOptions& options() const { return o_; }

  torch::nn::Conv2d conv{nullptr};
  torch::nn::BatchNorm2d bn{nullptr};

  /// Replaces bn's forward while training (SyncBatchNorm, dist/sync_bn.h): fn(y, *bn) instead of bn(y). Empty: off.
  using BnForward = std::function<torch::Tensor(const torch::Tensor&, torch::nn::BatchNorm2dImpl&)>;
  void set_bn_forward(BnForward fn) { bn_forward_ = std::move(fn); }

 private:
  ConvOptions o_;
  bool fused_ = false;
  BnForward bn_forward_;
};
TORCH_MODULE(Conv);

/// Sets ConvImpl::set_bn_forward on every Conv inside `m`; returns how many.
int64_t set_bn_forward(torch::nn::Module& m, const ConvImpl::BnForward& fn);

/// Depthwise-style Conv: groups = gcd(c1, c2). Reference: `DWConv`.
Conv DWConv(int64_t c1, int64_t c2, int64_t k = 1, int64_t s = 1, bool act = true);

// ---- Bottleneck ---------------------------------------------------------------------------------------------------
/// x + cv2(cv1(x)) (residual only when shortcut and c1 == c2); cv1: k1×k1 Conv c1 → c_ = int(c2·e),
/// cv2: k2×k2 Conv c_ → c2. (B, c1, H, W) → (B, c2, H, W). Reference: `Bottleneck`.
struct BottleneckOptions {
  int64_t c1, c2;
  bool shortcut = true;
  int64_t g = 1, k1 = 3, k2 = 3;
  double e = 0.5;
};
class BottleneckImpl : public torch::nn::Module {
 public:
  explicit BottleneckImpl(const BottleneckOptions& o);
  torch::Tensor forward(const torch::Tensor& x);
  Conv cv1{nullptr}, cv2{nullptr};
  bool add() const { return add_; }  ///< residual connection (shortcut and c1 == c2)

 private:
  bool add_;
};
TORCH_MODULE(Bottleneck);

// ---- C3k ----------------------------------------------------------------------------------------------------------
/// CSP block with n Bottlenecks of kernel k: cv3(cat(m(cv1(x)), cv2(x))), hidden c_ = int(c2·e).
/// (B, c1, H, W) → (B, c2, H, W). Reference: `C3k` (children cv1, cv2, cv3, m).
struct C3kOptions {
  int64_t c1, c2, n = 1;
  bool shortcut = true;
  int64_t g = 1;
  double e = 0.5;
  int64_t k = 3;
};
class C3kImpl : public torch::nn::Module {
 public:
  explicit C3kImpl(const C3kOptions& o);
  torch::Tensor forward(const torch::Tensor& x);
  Conv cv1{nullptr}, cv2{nullptr}, cv3{nullptr};
  torch::nn::Sequential m{nullptr};
};
TORCH_MODULE(C3k);

// ---- C3k2 ---------------------------------------------------------------------------------------------------------
/// C2f-style block: cv1 1×1 c1 → 2c (c = int(c2·e)), split in halves, n blocks each appending its output
/// (Bottleneck(c, c, e=0.5) or, with c3k, C3k(c, c, n=2)), cv2 1×1 (2 + n)·c → c2 on the concatenation.
/// (B, c1, H, W) → (B, c2, H, W). Reference: `C3k2` (children cv1, cv2, m).
struct C3k2Options {
  int64_t c1, c2, n = 1;
  bool c3k = false;
  double e = 0.5;
  int64_t g = 1;
  bool shortcut = true;
};
class C3k2Impl : public torch::nn::Module {
 public:
  explicit C3k2Impl(const C3k2Options& o);
  torch::Tensor forward(const torch::Tensor& x);
  Conv cv1{nullptr}, cv2{nullptr};
  torch::nn::ModuleList m{nullptr};
  int64_t hidden() const { return c_; }

 private:
  int64_t c_;
  std::vector<std::function<torch::Tensor(const torch::Tensor&)>> blocks_;
};
TORCH_MODULE(C3k2);

// ---- SPPF ---------------------------------------------------------------------------------------------------------
/// Spatial pyramid pooling, fast: cv1 1×1 c1 → c1/2 (SiLU when act, BN only when !act = 8.4.50's variant),
/// three chained k×k max-pools (stride 1, pad k/2), cv2 1×1 on the 4-way concatenation → c2.
/// (B, c1, H, W) → (B, c2, H, W). Reference: `SPPF` (children cv1, cv2, m).
struct SPPFOptions {
  int64_t c1, c2, k = 5;
  bool act = true;
};
class SPPFImpl : public torch::nn::Module {
 public:
  explicit SPPFImpl(const SPPFOptions& o);
  torch::Tensor forward(const torch::Tensor& x);
  Conv cv1{nullptr}, cv2{nullptr};
  torch::nn::MaxPool2d m{nullptr};
};
TORCH_MODULE(SPPF);

// ---- Attention / PSABlock / C2PSA ---------------------------------------------------------------------------------
/// Multi-head self-attention over the H·W positions with a depthwise positional conv.
/// heads h, head_dim = dim/h, key_dim = int(head_dim·attn_ratio); qkv 1×1 (no act) dim → dim + 2·key_dim·h with
/// head-major channels [q, k, v]; out = proj(v·softmax(qᵀk·key_dim^-½)ᵀ + pe(v)). (B, dim, H, W) → same.
/// Reference: `Attention` (children qkv, proj, pe).
struct AttentionOptions {
  int64_t dim, num_heads = 8;
  double attn_ratio = 0.5;
};
class AttentionImpl : public torch::nn::Module {
 public:
  explicit AttentionImpl(const AttentionOptions& o);
  torch::Tensor forward(const torch::Tensor& x);
  Conv qkv{nullptr}, proj{nullptr}, pe{nullptr};
  int64_t num_heads() const { return num_heads_; }
  int64_t key_dim() const { return key_dim_; }
  int64_t head_dim() const { return head_dim_; }
  double scale() const { return scale_; }  ///< key_dim^-0.5

 private:
  int64_t num_heads_, head_dim_, key_dim_;
  double scale_;
};
TORCH_MODULE(Attention);

/// x + attn(x), then + ffn(x) with ffn = Conv 1×1 c → 2c (SiLU), Conv 1×1 2c → c (no act). (B, c, H, W) → same.
/// Reference: `PSABlock` (children attn, ffn).
struct PSABlockOptions {
  int64_t c;
  double attn_ratio = 0.5;
  int64_t num_heads = 4;
  bool shortcut = true;
};
class PSABlockImpl : public torch::nn::Module {
 public:
  explicit PSABlockImpl(const PSABlockOptions& o);
  torch::Tensor forward(const torch::Tensor& x);
  Attention attn{nullptr};
  torch::nn::Sequential ffn{nullptr};
  bool add() const { return add_; }

 private:
  bool add_;
};
TORCH_MODULE(PSABlock);

/// cv1 1×1 c1 → 2c (c = int(c1·e)), split [a, b], b through n PSABlocks (heads c/64), cv2 1×1 2c → c1.
/// (B, c1, H, W) → (B, c1, H, W); requires c1 == c2. Reference: `C2PSA` (children cv1, cv2, m).
struct C2PSAOptions {
  int64_t c1, c2, n = 1;
  double e = 0.5;
};
class C2PSAImpl : public torch::nn::Module {
 public:
  explicit C2PSAImpl(const C2PSAOptions& o);
  torch::Tensor forward(const torch::Tensor& x);
  Conv cv1{nullptr}, cv2{nullptr};
  torch::nn::Sequential m{nullptr};
  int64_t hidden() const { return c_; }

 private:
  int64_t c_;
};
TORCH_MODULE(C2PSA);

// ---- Concat / Upsample (parameter-free layers, present so layer indices match the reference) -------------------
/// Concatenates its inputs along `dim` (channels). Reference: `Concat`.
class ConcatImpl : public torch::nn::Module {
 public:
  explicit ConcatImpl(int64_t dim = 1) : dim_(dim) {}
  torch::Tensor forward(const std::vector<torch::Tensor>& xs) const;
  int64_t dim() const { return dim_; }

 private:
  int64_t dim_;
};
TORCH_MODULE(Concat);

/// Nearest-neighbour upsampling by an integer factor. (B, C, H, W) → (B, C, H·f, W·f). Reference: `nn.Upsample`.
class UpsampleImpl : public torch::nn::Module {
 public:
  explicit UpsampleImpl(int64_t factor = 2) : factor_(factor) {}
  torch::Tensor forward(const torch::Tensor& x) const;
  int64_t factor() const { return factor_; }

 private:
  int64_t factor_;
};
TORCH_MODULE(Upsample);

// ---- DFL / Detect -------------------------------------------------------------------------------------------------
/// Distribution focal loss integral: a frozen 1×1 conv with weights 0..c1−1 (requires_grad = false) applied to
/// the softmax over each side's c1 bins. (B, 4·c1, A) → (B, 4, A), in bins (grid units). Reference: `DFL`.
class DFLImpl : public torch::nn::Module {
 public:
  explicit DFLImpl(int64_t c1 = 16);
  torch::Tensor forward(const torch::Tensor& x) const;
  torch::nn::Conv2d conv{nullptr};
  int64_t c1() const { return c1_; }  ///< bins per box side (reg_max)

 private:
  int64_t c1_;
};
TORCH_MODULE(DFL);

/// YOLO11 detection head. Per level l: box branch cv2[l] = Conv 3×3 ch_l → c2, Conv 3×3 c2 → c2, Conv2d 1×1
/// c2 → 4·reg_max; class branch cv3[l] = [DWConv 3×3 ch_l, Conv 1×1 ch_l → c3], [DWConv 3×3 c3, Conv 1×1 c3 → c3],
/// Conv2d 1×1 c3 → nc; c2 = max(16, ch0/4, 4·reg_max), c3 = max(ch0, min(nc, 100)). Reference: `Detect`
/// (children cv2, cv3, dfl).
struct DetectOptions {
  int64_t nc = 80;
  std::vector<int64_t> ch;       ///< input channels per level
  std::vector<int64_t> strides;  ///< pixels per grid cell per level (8, 16, 32)
  int64_t reg_max = 16;
};
class DetectImpl : public torch::nn::Module {
 public:
  explicit DetectImpl(const DetectOptions& o);
  /// Raw per-level outputs (B, 4·reg_max + nc, H_l, W_l): [box-branch logits (side-major l,t,r,b × bins), class
  /// logits].
  std::vector<torch::Tensor> forward(const std::vector<torch::Tensor>& xs);
  /// Decodes raw per-level outputs to (B, 4 + nc, A): cx, cy, w, h in input pixels, then sigmoid class scores.
  /// Anchor order: level-major, row-major inside a level. Throws std::invalid_argument on a wrong level count.
  torch::Tensor decode(const std::vector<torch::Tensor>& feats) const;
  /// Reference bias_init: box biases 1.0; class biases log(5 / nc / (640 / stride)²).
  void bias_init();

  int64_t nc() const { return o_.nc; }
  int64_t reg_max() const { return o_.reg_max; }
  int64_t no() const { return o_.nc + 4 * o_.reg_max; }
  int64_t c2() const { return c2_; }
  int64_t c3() const { return c3_; }
  const std::vector<int64_t>& strides() const { return o_.strides; }

  torch::nn::ModuleList cv2{nullptr}, cv3{nullptr};
  DFL dfl{nullptr};

 private:
  DetectOptions o_;
  int64_t c2_, c3_;
};
TORCH_MODULE(Detect);

/// Anchor centres (A, 2) in grid units (x + 0.5, y + 0.5) and per-anchor strides (A, 1) for level grids
/// `hw` = {(H_l, W_l)}, in the level-major, row-major anchor order. Float32 on `device`.
std::pair<torch::Tensor, torch::Tensor> make_anchors(const std::vector<std::pair<int64_t, int64_t>>& hw,
                                                     const std::vector<int64_t>& strides,
                                                     const torch::Device& device,
                                                     double offset = 0.5);

}  // namespace yolo11::model
