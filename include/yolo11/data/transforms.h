#pragma once
// Image/label transforms of the Ultralytics 8.4.50 data pipeline as PURE functions of (inputs, explicit draw
// values). Nothing here draws a random number: augment.h makes the draws and chains these functions, so each
// transform can be checked against the golden cases with the reference's draws substituted.
//
// Conventions: images are OpenCV BGR uint8 HWC (cv::Mat CV_8UC3); boxes are float32 and, unless a name says
// otherwise, PIXEL xyxy of the image they accompany. Arithmetic is float32 in the reference's order, so results
// are bit-exact against the golden files (golden README §3.9, §3.11).
#include <opencv2/core.hpp>

#include <array>
#include <cstdint>
#include <vector>

namespace yolo11::data {

using Box = std::array<float, 4>;  ///< xyxy or xywh (pixels or normalized); the context says which

/// Boxes with their class ids (same length).
struct Labels {
  std::vector<Box> boxes;
  std::vector<int64_t> cls;
  size_t size() const { return boxes.size(); }
  void append(const Labels& o);
};

// ---- box format helpers (float32, Ultralytics operation order) ----------------------------------------------
/// (cx, cy, w, h) → (cx − w/2, cy − h/2, cx + w/2, cy + h/2).
Box xywh2xyxy(const Box& b);
/// (x1, y1, x2, y2) → ((x1 + x2)/2, (y1 + y2)/2, x2 − x1, y2 − y1).
Box xyxy2xywh(const Box& b);

// ---- load-time resize ----------------------------------------------------------------------------------------
/// BaseDataset.load_image: resize so that the long side is `imgsz` (up or down): r = imgsz / max(h, w), new
/// size (min(ceil(h·r), imgsz), min(ceil(w·r), imgsz)), INTER_LINEAR; returns `img` itself when r == 1.
cv::Mat resize_long_side(const cv::Mat& img, int64_t imgsz);

// ---- letterbox -------------------------------------------------------------------------------------------------
/// Geometry of a letterbox: resize ratio, unpadded size and the pads (pixels).
struct LetterboxParams {
  double ratio = 1.0;       ///< r = min(new_h/h, new_w/w), capped at 1 when !scaleup
  int new_unpad_w = 0, new_unpad_h = 0;  ///< round-half-even(w·r), round-half-even(h·r)
  int top = 0, bottom = 0, left = 0, right = 0;
};
/// Computes the letterbox geometry of an (h, w) image into (new_h, new_w) (centre padding; `auto_pad` keeps only
/// the padding modulo `stride`, as LetterBox(auto=True)).
LetterboxParams letterbox_params(int h, int w, int new_h, int new_w, bool scaleup, bool auto_pad = false,
                                 int stride = 32);
/// LetterBox.__call__: resize (INTER_LINEAR, only if the size changes) then pad with 114.
cv::Mat letterbox_image(const cv::Mat& img, const LetterboxParams& p);
/// LetterBox label update: normalized xywh of the image that was letterboxed (size w × h) → pixel xyxy of the
/// letterboxed image: xyxy · (w, h, w, h) · r + (left, top, left, top), float32 (nominal r, not the rounded size).
std::vector<Box> letterbox_boxes_from_xywhn(const std::vector<Box>& xywhn, int w, int h, const LetterboxParams& p);

// ---- HSV --------------------------------------------------------------------------------------------------------
/// RandomHSV lookup tables for gains r = u ⊙ (hsv_h, hsv_s, hsv_v): rows hue, sat, val (CV_8UC1, 3 × 256).
/// hue[x] = floor-mod(x + 180·r0, 180), sat[x] = clip(x·(1 + r1), 0, 255) with sat[0] = 0,
/// val[x] = clip(x·(1 + r2), 0, 255); float64, truncated to uint8.
cv::Mat hsv_luts(double r0, double r1, double r2);
/// Applies RandomHSV (BGR → HSV (OpenCV 8-bit) → LUTs → BGR); `img` is replaced by a new buffer (never written
/// through, so it may share pixels with a cache). No-op when r = (0, 0, 0). Byte-exact with the reference's three
/// cv2 calls on OpenCV 4.6, computed in one fused pass (src/data/hsv.cpp); other image types take OpenCV's chain.
void apply_hsv(cv::Mat& img, double r0, double r1, double r2);
namespace detail {
/// Whether apply_hsv uses its fused kernel: needs AVX2+FMA, and a once-per-process check (~0.1 s) that the kernel
/// equals the installed OpenCV on all 2^24 inputs; otherwise apply_hsv runs OpenCV's three calls.
bool hsv_kernel_active();
/// RandomHSV as the reference computes it: cvtColor(BGR2HSV), one 3-channel cv::LUT, cvtColor(HSV2BGR), on the whole
/// image (the path apply_hsv falls back to). For benchmarks.
cv::Mat hsv_by_opencv(const cv::Mat& img, double r0, double r1, double r2);
/// The kernel's HSV → BGR alone (CV_8UC3, hue range 180): equals cv::cvtColor(COLOR_HSV2BGR) byte for byte; empty
/// when the kernel is not active. For tests. Throws std::invalid_argument for another type.
cv::Mat hsv_to_bgr_like_opencv(const cv::Mat& hsv);
}  // namespace detail

namespace detail {
/// cv::warpAffine(src, dst, M, dsize, INTER_LINEAR, BORDER_CONSTANT, border) for CV_8UC3 when M (forward 2×3,
/// row-major, float64 as OpenCV converts it) has no rotation or shear: byte-exact with OpenCV 4.6 (src/data/warp.cpp).
/// Returns false and leaves dst alone when it does not apply: another type, a rotation/shear, no AVX2, or an OpenCV
/// whose warpAffine computes differently (checked once per process on 65 warps, with a warning).
bool warp_affine_scale_translate(const cv::Mat& src, cv::Mat& dst, const double* M, cv::Size dsize,
                                 const cv::Vec3b& border);
}  // namespace detail

// ---- random perspective ---------------------------------------------------------------------------------------
/// The eight values RandomPerspective draws, in the reference's order.
struct PerspectiveDraws {
  double px = 0, py = 0;  ///< perspective P[2,0], P[2,1]
  double a = 0;           ///< rotation, degrees (counter-clockwise as displayed)
  double s = 1;           ///< scale
  double shx = 0, shy = 0;  ///< shear, degrees
  double tx = 0.5, ty = 0.5;  ///< translation as a fraction of the output size
};
using Mat3f = std::array<float, 9>;  ///< row-major 3×3 float32
/// M = T·S·R·P·C in float32, products left to right (bit-exact with the reference).
Mat3f perspective_matrix(const PerspectiveDraws& d, int w_in, int h_in, int w_out, int h_out);
/// Result of RandomPerspective with every intermediate the golden file stores.
struct PerspectiveResult {
  cv::Mat img;                   ///< (h_out, w_out) BGR
  Mat3f M{};
  std::vector<Box> boxes_warped;   ///< corner-mapped boxes before clipping
  std::vector<Box> box1_scaled;    ///< input boxes × s (the candidate filter's reference)
  std::vector<Box> boxes_clipped;  ///< clipped to [0, w_out] × [0, h_out]
  std::vector<uint8_t> keep;       ///< box_candidates result per input box
  Labels out;                      ///< kept clipped boxes (pixel xyxy of the output) and their classes
};
/// RandomPerspective.__call__ on pixel-xyxy labels. `border` = (b_y, b_x): output = input + 2·border (negative
/// after mosaic). `use_perspective` = the hyperparameter perspective != 0 (selects warpPerspective and the
/// division of the corners by w'). `area_thr` 0.1 (0.01 with segments).
PerspectiveResult random_perspective(const cv::Mat& img, const Labels& labels, const PerspectiveDraws& d,
                                     bool use_perspective, std::array<int, 2> border = {0, 0},
                                     float area_thr = 0.1f);
/// box_candidates(box1, box2): w2 > 2, h2 > 2, area ratio > area_thr, aspect ratio < 100 (float32, strict).
bool box_candidate(const Box& box1, const Box& box2, float area_thr = 0.1f);

// ---- mosaic ------------------------------------------------------------------------------------------------------
/// One loaded image with normalized xywh labels (what Dataset::get_image_and_label gives).
struct LoadedSample {
  cv::Mat img;                 ///< BGR, long side imgsz (load_image)
  std::vector<Box> xywhn;      ///< normalized xywh of img
  std::vector<int64_t> cls;
};
/// Mosaic of 4 images: `s[0]` (the sample) top-left, s[1] top-right, s[2] bottom-left, s[3] bottom-right, with
/// one corner each on the centre (xc, yc) of a 2·imgsz canvas filled with 114. Labels → pixel xyxy + offsets,
/// clipped to [0, 2·imgsz], zero-area boxes removed. `padded`/`clipped`/`keep` receive intermediates if given.
struct MosaicResult {
  cv::Mat img;      ///< (2·imgsz, 2·imgsz) BGR
  Labels labels;    ///< pixel xyxy of the canvas
  std::vector<Box> boxes_padded, boxes_clipped;
  std::vector<uint8_t> keep;
};
MosaicResult mosaic4(const std::array<const LoadedSample*, 4>& s, int64_t imgsz, int yc, int xc);

// ---- mixup / cutmix ----------------------------------------------------------------------------------------------
/// MixUp: img = uint8(img·r + img2·(1 − r)) (truncation), labels concatenated. Both images must have equal size.
void mixup(cv::Mat& img, Labels& labels, const cv::Mat& img2, const Labels& labels2, double r);
/// CutMix: pastes img2[y1:y2, x1:x2] into img at the same place (`region` = pixel xyxy of img, ints). Boxes of
/// `labels` covered by the region for more than (1 − thr) of their area are dropped; boxes of `labels2` with at
/// least `thr` of their area inside the region are added, clipped to it. Both images must have equal size.
void cutmix(cv::Mat& img, Labels& labels, const cv::Mat& img2, const Labels& labels2, std::array<int, 4> region,
            float thr = 0.1f);

// ---- flips and format ------------------------------------------------------------------------------------------------
/// RandomFlip on pixel xywh boxes of an (h, w) image: vertical y = h − y, horizontal x = w − x; image mirrored.
void flip_ud(cv::Mat& img, std::vector<Box>& xywh);
void flip_lr(cv::Mat& img, std::vector<Box>& xywh);
/// Format: pixel xywh → normalized xywh of a (h, w) image (divided by float32 w, h).
std::vector<Box> normalize_xywh(const std::vector<Box>& xywh, int w, int h);
/// Format image: BGR HWC uint8 → RGB CHW uint8 written to `dst` (3·h·w bytes).
void hwc_bgr_to_chw_rgb(const cv::Mat& img, uint8_t* dst);

}  // namespace yolo11::data
