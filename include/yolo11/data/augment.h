#pragma once
// The training / validation transform chains of Ultralytics 8.4.50 (v8_transforms + Format), split in two layers:
//   1. make_draws(): every random value one sample needs, drawn from a per-sample generator seeded by
//      (seed, epoch, index) — always all of them, whatever the probabilities, so the stream never shifts;
//   2. train_transform() / val_transform(): pure functions of (sample source, options, draws) built on
//      transforms.h. Given the reference's draws they reproduce the golden chain bit-exactly.
// Difference to the reference (on purpose): mosaic/mixup partners are drawn uniformly from the whole dataset with
// the sample's own generator, not from a per-worker buffer of recent images, so results do not depend on
// `workers`.
#include <array>
#include <cstdint>
#include <functional>
#include <vector>

#include "yolo11/data/transforms.h"

namespace yolo11::data {

/// Augmentation hyperparameters (Ultralytics default.yaml names and defaults).
struct AugmentOptions {
  int64_t imgsz = 640;
  double hsv_h = 0.015, hsv_s = 0.7, hsv_v = 0.4;
  double degrees = 0, translate = 0.1, scale = 0.5, shear = 0, perspective = 0;
  double flipud = 0, fliplr = 0.5;
  double mosaic = 1.0, mixup = 0, cutmix = 0;
  bool augment = true;  ///< false = validation: load_image + letterbox only
  bool rect = false;    ///< validation rectangular batches (Dataset computes the batch shapes)
  double bgr = 0;       ///< probability of keeping BGR order (Ultralytics `bgr`, default 0 → always RGB)
};

/// Counter-based generator: splitmix64-seeded xoshiro256**. Same (seed, stream) → same sequence on every platform.
class Rng {
 public:
  explicit Rng(uint64_t seed = 0);
  /// A generator for one sample: deterministic function of (seed, epoch, index).
  static Rng for_sample(uint64_t seed, int64_t epoch, int64_t index);
  uint64_t next_u64();
  double uniform();                    ///< [0, 1), 53 random bits
  double uniform(double a, double b);  ///< a + (b − a)·uniform() (Python random.uniform semantics)
  int64_t randint(int64_t n);          ///< uniform in [0, n), n > 0
  double beta(double a, double b);     ///< Beta(a, b) via two Gamma draws

 private:
  uint64_t s_[4];
};

/// Draws of the "pre-transform" (Mosaic → RandomPerspective), also made for a MixUp/CutMix partner.
struct PreDraws {
  double mosaic_gate = 1.0;                ///< mosaic applied iff value ≤ p
  std::array<int64_t, 3> mosaic_idx{};     ///< dataset indices of the 3 other quadrants
  double yc = 0, xc = 0;                   ///< mosaic centre, truncated to int when used (uniform(s/2, 3s/2))
  PerspectiveDraws persp;
};
/// Every draw of one training sample, in the reference's stage order.
struct SampleDraws {
  PreDraws pre;
  double mixup_gate = 1.0;  ///< applied iff ≤ mixup
  int64_t mixup_idx = 0;
  double mixup_r = 0.5;     ///< Beta(32, 32)
  PreDraws mixup_pre;
  double cutmix_gate = 1.0;  ///< applied iff ≤ cutmix
  int64_t cutmix_idx = 0;
  double cutmix_lam = 0.5;   ///< Beta(1, 1): kept area fraction of the sample
  double cutmix_cx = 0.5, cutmix_cy = 0.5;  ///< cut centre, fraction of the image
  PreDraws cutmix_pre;
  std::array<double, 3> hsv_u{};  ///< u ∈ [−1, 1)³; gains r = u ⊙ (hsv_h, hsv_s, hsv_v)
  double flipud_u = 1.0, fliplr_u = 1.0;  ///< flip iff value < p
  double bgr_u = 1.0;                      ///< RGB iff value > bgr
};

/// Draws everything one training sample may need (always the same number of values).
SampleDraws make_draws(Rng& rng, const AugmentOptions& o, int64_t dataset_size);

/// Loads sample `index`: image resized to long side imgsz (load_image) and its normalized xywh labels.
using SampleSource = std::function<LoadedSample(int64_t index)>;

/// One transformed sample, ready for collate.
struct AugmentedSample {
  cv::Mat img;                   ///< BGR uint8, network input size
  std::vector<Box> xywhn;        ///< normalized xywh of img
  std::vector<int64_t> cls;
  std::array<double, 4> ratio_pad{1, 1, 0, 0};  ///< (ratio_h, ratio_w, pad_w, pad_h) of the final letterbox (val)
  bool rgb = true;               ///< Format's channel order draw (collate reverses channels when true)
};

/// Intermediates of the training chain for tests (golden §3.11 d); pass nullptr when not needed.
struct ChainTrace {
  bool mosaic_applied = false;
  MosaicResult mosaic;
  cv::Mat letterbox_img;          ///< close_mosaic pre-step (only when mosaic was not applied)
  std::vector<Box> rp_boxes_in;
  PerspectiveResult rp;
  std::vector<Box> flip_boxes_xywh;
};

/// Mosaic (p = o.mosaic) → RandomPerspective (letterbox pre-step when no mosaic) for sample `index`: pixel xyxy
/// labels of an imgsz × imgsz image.
void pre_transform(int64_t index, const SampleSource& src, const AugmentOptions& o, const PreDraws& d, cv::Mat& img,
                   Labels& labels, ChainTrace* trace = nullptr);

/// Full training chain: pre_transform → MixUp → CutMix → RandomHSV → flips → Format (normalized xywh).
AugmentedSample train_transform(int64_t index, const SampleSource& src, const AugmentOptions& o,
                                const SampleDraws& d, ChainTrace* trace = nullptr);

/// Validation chain: LetterBox(new_shape, scaleup=false, centre) of the loaded image; labels → normalized xywh of
/// the letterboxed image. `new_shape` = (h, w), imgsz × imgsz or the rect batch shape.
AugmentedSample val_transform(const LoadedSample& s, std::array<int, 2> new_shape);

}  // namespace yolo11::data
