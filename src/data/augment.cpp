// Draw layer + transform chains (see augment.h).
#include "yolo11/data/augment.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <stdexcept>

#include "yolo11/data/loader_stats.h"
#include "yolo11/instrument/range.h"

namespace yolo11::data {

// ---- Rng -----------------------------------------------------------------------------------------------------------
static uint64_t splitmix64(uint64_t& x) {
  uint64_t z = (x += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

Rng::Rng(uint64_t seed) {
  uint64_t x = seed;
  for (auto& v : s_) v = splitmix64(x);
}

Rng Rng::for_sample(uint64_t seed, int64_t epoch, int64_t index) {
  uint64_t x = seed;
  uint64_t h = splitmix64(x);
  x = h ^ (static_cast<uint64_t>(epoch) * 0xD1B54A32D192ED03ull);
  h = splitmix64(x);
  x = h ^ (static_cast<uint64_t>(index) * 0xABC98388FB8FAC03ull);
  return Rng(splitmix64(x));
}

uint64_t Rng::next_u64() {
  const uint64_t result = rotl(s_[1] * 5, 7) * 9;
  const uint64_t t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = rotl(s_[3], 45);
  return result;
}

double Rng::uniform() { return static_cast<double>(next_u64() >> 11) * 0x1.0p-53; }
double Rng::uniform(double a, double b) { return a + (b - a) * uniform(); }
int64_t Rng::randint(int64_t n) {
  if (n <= 0) throw std::runtime_error("Rng::randint: n must be positive");
  return static_cast<int64_t>(uniform() * static_cast<double>(n)) % n;
}

// Marsaglia–Tsang gamma with our own normal/uniform draws (std:: distributions differ between libraries).
static double gamma_draw(Rng& rng, double k) {
  if (k < 1.0) return gamma_draw(rng, k + 1.0) * std::pow(std::max(rng.uniform(), 1e-300), 1.0 / k);
  const double d = k - 1.0 / 3.0, c = 1.0 / std::sqrt(9.0 * d);
  for (;;) {
    double x, v;
    do {
      const double u1 = std::max(rng.uniform(), 1e-300), u2 = rng.uniform();
      x = std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
      v = 1.0 + c * x;
    } while (v <= 0);
    v = v * v * v;
    const double u = rng.uniform();
    if (u < 1.0 - 0.0331 * x * x * x * x) return d * v;
    if (std::log(std::max(u, 1e-300)) < 0.5 * x * x + d * (1.0 - v + std::log(v))) return d * v;
  }
}
double Rng::beta(double a, double b) {
  const double x = gamma_draw(*this, a), y = gamma_draw(*this, b);
  return x / (x + y);
}

// ---- draws -----------------------------------------------------------------------------------------------------------
static PreDraws make_pre_draws(Rng& rng, const AugmentOptions& o, int64_t n) {
  PreDraws d;
  const double s = static_cast<double>(o.imgsz);
  d.mosaic_gate = rng.uniform();
  for (auto& i : d.mosaic_idx) i = rng.randint(n);
  d.yc = rng.uniform(s / 2, 3 * s / 2);
  d.xc = rng.uniform(s / 2, 3 * s / 2);
  d.persp.px = rng.uniform(-o.perspective, o.perspective);
  d.persp.py = rng.uniform(-o.perspective, o.perspective);
  d.persp.a = rng.uniform(-o.degrees, o.degrees);
  d.persp.s = rng.uniform(1 - o.scale, 1 + o.scale);
  d.persp.shx = rng.uniform(-o.shear, o.shear);
  d.persp.shy = rng.uniform(-o.shear, o.shear);
  d.persp.tx = rng.uniform(0.5 - o.translate, 0.5 + o.translate);
  d.persp.ty = rng.uniform(0.5 - o.translate, 0.5 + o.translate);
  return d;
}

SampleDraws make_draws(Rng& rng, const AugmentOptions& o, int64_t n) {
  if (n <= 0) throw std::runtime_error("make_draws: empty dataset");
  SampleDraws d;
  d.pre = make_pre_draws(rng, o, n);
  d.mixup_gate = rng.uniform();
  d.mixup_idx = rng.randint(n);
  d.mixup_r = rng.beta(32.0, 32.0);
  d.mixup_pre = make_pre_draws(rng, o, n);
  d.cutmix_gate = rng.uniform();
  d.cutmix_idx = rng.randint(n);
  d.cutmix_lam = rng.uniform();  // Beta(1, 1) = uniform
  d.cutmix_cx = rng.uniform();
  d.cutmix_cy = rng.uniform();
  d.cutmix_pre = make_pre_draws(rng, o, n);
  for (auto& u : d.hsv_u) u = rng.uniform(-1, 1);
  d.flipud_u = rng.uniform();
  d.fliplr_u = rng.uniform();
  d.bgr_u = rng.uniform();
  return d;
}

// ---- chains ---------------------------------------------------------------------------------------------------------
void pre_transform(int64_t index, const SampleSource& src, const AugmentOptions& o, const PreDraws& d, cv::Mat& img,
                   Labels& labels, ChainTrace* trace) {
  const int S = static_cast<int>(o.imgsz);
  std::array<int, 2> border{0, 0};
  cv::Mat base;
  Labels lab;
  const bool do_mosaic = o.mosaic > 0 && d.mosaic_gate <= o.mosaic;
  if (do_mosaic) {
    std::array<LoadedSample, 4> parts;
    {
      instrument::ScopedRange r(instrument::LoaderStage::load);
      parts[0] = src(index);
      for (int k = 0; k < 3; ++k) parts[k + 1] = src(d.mosaic_idx[k]);
    }
    instrument::ScopedRange r(instrument::LoaderStage::mosaic);
    ScopedPart t(LoaderPart::mosaic);
    MosaicResult m = mosaic4({&parts[0], &parts[1], &parts[2], &parts[3]}, o.imgsz, static_cast<int>(d.yc),
                             static_cast<int>(d.xc));
    base = m.img;
    lab = m.labels;
    border = {-S / 2, -S / 2};
    if (trace) {
      trace->mosaic_applied = true;
      trace->mosaic = std::move(m);
    }
  } else {
    LoadedSample s;
    {
      instrument::ScopedRange r(instrument::LoaderStage::load);
      s = src(index);
    }
    instrument::ScopedRange r(instrument::LoaderStage::augment);
    const LetterboxParams p = letterbox_params(s.img.rows, s.img.cols, S, S, /*scaleup=*/true);
    {
      ScopedPart t(LoaderPart::letterbox);
      base = letterbox_image(s.img, p);
    }
    lab.boxes = letterbox_boxes_from_xywhn(s.xywhn, s.img.cols, s.img.rows, p);
    lab.cls = s.cls;
    if (trace) {
      trace->mosaic_applied = false;
      trace->letterbox_img = base;
      trace->rp_boxes_in = lab.boxes;
    }
  }
  instrument::ScopedRange r(instrument::LoaderStage::augment);
  PerspectiveResult rp;
  {
    ScopedPart t(LoaderPart::perspective);
    rp = random_perspective(base, lab, d.persp, o.perspective != 0, border);
  }
  img = rp.img;
  labels = rp.out;
  if (trace) {  // later stages work in place on img: keep an unshared copy for inspection
    trace->rp = std::move(rp);
    trace->rp.img = trace->rp.img.clone();
  }
}

AugmentedSample train_transform(int64_t index, const SampleSource& src, const AugmentOptions& o,
                                const SampleDraws& d, ChainTrace* trace) {
  cv::Mat img;
  Labels labels;
  pre_transform(index, src, o, d.pre, img, labels, trace);
  if (o.mixup > 0 && d.mixup_gate <= o.mixup) {
    cv::Mat img2;
    Labels l2;
    pre_transform(d.mixup_idx, src, o, d.mixup_pre, img2, l2);
    mixup(img, labels, img2, l2, d.mixup_r);
  }
  if (o.cutmix > 0 && d.cutmix_gate <= o.cutmix) {
    cv::Mat img2;
    Labels l2;
    pre_transform(d.cutmix_idx, src, o, d.cutmix_pre, img2, l2);
    const double cut = std::sqrt(1.0 - d.cutmix_lam);
    const int cw = static_cast<int>(img.cols * cut), ch = static_cast<int>(img.rows * cut);
    const int cx = static_cast<int>(d.cutmix_cx * img.cols), cy = static_cast<int>(d.cutmix_cy * img.rows);
    cutmix(img, labels, img2, l2, {cx - cw / 2, cy - ch / 2, cx + cw / 2, cy + ch / 2});
  }
  instrument::ScopedRange r(instrument::LoaderStage::augment);
  {
    ScopedPart t(LoaderPart::hsv);
    apply_hsv(img, d.hsv_u[0] * o.hsv_h, d.hsv_u[1] * o.hsv_s, d.hsv_u[2] * o.hsv_v);
  }
  std::vector<Box> xywh;
  xywh.reserve(labels.size());
  for (const auto& b : labels.boxes) xywh.push_back(xyxy2xywh(b));
  {
    ScopedPart t(LoaderPart::flip);
    if (d.flipud_u < o.flipud) flip_ud(img, xywh);
    if (d.fliplr_u < o.fliplr) flip_lr(img, xywh);
  }
  if (trace) trace->flip_boxes_xywh = xywh;
  AugmentedSample out;
  out.xywhn = normalize_xywh(xywh, img.cols, img.rows);
  out.cls = std::move(labels.cls);
  out.img = img;
  out.rgb = d.bgr_u > o.bgr;
  return out;
}

AugmentedSample val_transform(const LoadedSample& s, std::array<int, 2> new_shape) {
  instrument::ScopedRange r(instrument::LoaderStage::augment);
  const LetterboxParams p = letterbox_params(s.img.rows, s.img.cols, new_shape[0], new_shape[1], /*scaleup=*/false);
  AugmentedSample out;
  {
    ScopedPart t(LoaderPart::letterbox);
    out.img = letterbox_image(s.img, p);
  }
  const std::vector<Box> xyxy = letterbox_boxes_from_xywhn(s.xywhn, s.img.cols, s.img.rows, p);
  std::vector<Box> xywh;
  xywh.reserve(xyxy.size());
  for (const auto& b : xyxy) xywh.push_back(xyxy2xywh(b));
  out.xywhn = normalize_xywh(xywh, out.img.cols, out.img.rows);
  out.cls = s.cls;
  out.ratio_pad = {p.ratio, p.ratio, static_cast<double>(p.left), static_cast<double>(p.top)};
  return out;
}

}  // namespace yolo11::data
