// RandomHSV (Ultralytics 8.4.50 `RandomHSV`): BGR → HSV → three lookup tables → BGR, byte for byte as the reference's
// cv2 calls, in one pass over the image.
//
// The reference runs three OpenCV 8-bit conversions: cvtColor(BGR2HSV), cv2.LUT per channel, cvtColor(HSV2BGR). This
// file fuses them into one loop (AVX2, 8 pixels per iteration) that reproduces OpenCV 4.6's arithmetic exactly:
// - BGR → HSV: OpenCV's integer formula with its two division tables (sdiv, hdiv for hue range 180); its vector and
//   scalar paths compute the same integers, so the result does not depend on where a pixel sits.
// - the tables: hue[x] = (x + K) mod 180, sat/val[x] = min(⌊x·m / 2²³⌋, 255); K and m are found per draw and checked
//   against all 256 entries of the float64 tables (hsv_lut_affine); where no (K, m) reproduces a table (rare), the
//   plain OpenCV chain runs instead.
// - HSV → BGR: OpenCV computes in float32 and its two paths differ: the vector loop (whole groups of 4 vectors, 32
//   pixels with AVX2) truncates b·255, the scalar tail of each row rounds it. The vector loop's formula is replicated
//   with the same float32 operations in the same order, including the fused multiply-adds OpenCV's AVX2 build
//   contracts `1 − s·h` to. Which columns of a row take the scalar tail is probed at run time on the installed OpenCV
//   (a 2-row image of a pixel where the two paths differ), and OpenCV itself converts those columns. When the probe
//   does not fit this model, or a once-per-process check on all 2²⁴ inputs finds a difference, the plain OpenCV
//   chain runs.
// The exhaustive tests (tests/data/test_transforms.cpp) compare all 2²⁴ HSV inputs and all 2²⁴ BGR inputs against
// cv::cvtColor.
#include "yolo11/data/transforms.h"

#include <opencv2/imgproc.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <optional>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define YOLO11_HSV_X86 1
#endif

namespace yolo11::data {

cv::Mat hsv_luts(double r0, double r1, double r2) {
  cv::Mat lut(3, 256, CV_8UC1);
  for (int x = 0; x < 256; ++x) {
    double hv = std::fmod(x + r0 * 180.0, 180.0);
    if (hv < 0) hv += 180.0;  // Python/numpy floor-modulo
    lut.at<uint8_t>(0, x) = static_cast<uint8_t>(static_cast<int>(hv));
    lut.at<uint8_t>(1, x) = static_cast<uint8_t>(static_cast<int>(std::clamp(x * (r1 + 1.0), 0.0, 255.0)));
    lut.at<uint8_t>(2, x) = static_cast<uint8_t>(static_cast<int>(std::clamp(x * (r2 + 1.0), 0.0, 255.0)));
  }
  lut.at<uint8_t>(1, 0) = 0;
  return lut;
}

namespace {

// ---- the three tables as integer maps ----------------------------------------------------------------------------
struct HsvAffine {
  uint32_t hue_add = 0;               ///< hue[x] = (x + hue_add) mod 180 (applied with two conditional subtractions)
  uint32_t sat_m = 1u << 23, val_m = 1u << 23;  ///< sat[x] = min(⌊x·sat_m / 2²³⌋, 255), likewise val
};

inline uint32_t hue_map(uint32_t x, uint32_t add) {
  uint32_t y = x + add;
  y = y >= 180 ? y - 180 : y;
  y = y >= 180 ? y - 180 : y;
  return y > 255 ? 255 : y;
}
inline uint32_t gain_map(uint32_t x, uint32_t m) {
  const uint32_t y = (x * m) >> 23;
  return y > 255 ? 255 : y;
}

// Finds K and m reproducing the float64 tables of hsv_luts, checked on every entry; nullopt when none does.
std::optional<HsvAffine> hsv_lut_affine(const cv::Mat& lut) {
  HsvAffine a;
  a.hue_add = lut.at<uint8_t>(0, 0);
  bool ok = a.hue_add < 180;
  for (int t = 0; t < 256 && ok; ++t) ok = hue_map(static_cast<uint32_t>(t), a.hue_add) == lut.at<uint8_t>(0, t);
  for (int c = 1; c < 3 && ok; ++c) {  // intersect the multipliers each entry allows, take the least
    uint64_t lo = 1, hi = 0xFFFFFFFFull / 255;  // x·m must fit 32 bits
    for (uint64_t x = 1; x < 256; ++x) {
      const uint64_t t = lut.at<uint8_t>(c, static_cast<int>(x));
      lo = std::max<uint64_t>(lo, (t * (1ull << 23) + x - 1) / x);                      // ⌊x·m/2²³⌋ ≥ t
      if (t < 255) hi = std::min<uint64_t>(hi, ((t + 1) * (1ull << 23) + x - 1) / x - 1);  // ⌊x·m/2²³⌋ < t + 1
    }
    const uint32_t m = static_cast<uint32_t>(lo);
    ok = lo <= hi && lut.at<uint8_t>(c, 0) == 0;
    for (int t = 0; t < 256 && ok; ++t) ok = gain_map(static_cast<uint32_t>(t), m) == lut.at<uint8_t>(c, t);
    (c == 1 ? a.sat_m : a.val_m) = m;
  }
  if (!ok) return std::nullopt;
  return a;
}

// ---- OpenCV 4.6's 8-bit conversions, per pixel ----------------------------------------------------------------
// RGB2HSV_b's tables for hue range 180 (saturate_cast<int> of a double = round half to even).
struct DivTables {
  alignas(32) int32_t sdiv[256];
  alignas(32) int32_t hdiv[256];
};
const DivTables& div_tables() {
  static const DivTables t = [] {
    DivTables d{};
    for (int i = 1; i < 256; ++i) {
      d.sdiv[i] = static_cast<int32_t>(std::nearbyint((255 << 12) / (1.0 * i)));
      d.hdiv[i] = static_cast<int32_t>(std::nearbyint((180 << 12) / (6.0 * i)));
    }
    return d;
  }();
  return t;
}

inline void bgr2hsv_pixel(int b, int g, int r, const DivTables& t, int& h, int& s, int& v) {
  v = std::max(b, std::max(g, r));
  const int vmin = std::min(b, std::min(g, r));
  const int diff = v - vmin;
  s = (diff * t.sdiv[v] + (1 << 11)) >> 12;
  int hr = v == r ? g - b : v == g ? b - r + 2 * diff : r - g + 4 * diff;
  hr = (hr * t.hdiv[diff] + (1 << 11)) >> 12;
  hr += hr < 0 ? 180 : 0;
  h = std::clamp(hr, 0, 255);
}

constexpr float kHscale = 6.0f / 180;  // HSV2RGB_b's hscale(6.0f / _hrange)

#ifdef YOLO11_HSV_X86
__attribute__((target("avx2,fma"), always_inline)) inline __m256 sel(__m256 mask, __m256 x) { return _mm256_and_ps(mask, x); }
// v_trunc of x·255, then the saturating packs
__attribute__((target("avx2,fma"), always_inline)) inline __m256i to_u8(__m256 x) {
  const __m256i q = _mm256_cvttps_epi32(_mm256_mul_ps(x, _mm256_set1_ps(255.0f)));
  return _mm256_min_epi32(_mm256_max_epi32(q, _mm256_setzero_si256()), _mm256_set1_epi32(255));
}

// The same arithmetic for 8 pixels: reads 28 bytes from `in` (24 used), writes 28 bytes to `out` (24 meant).
template <bool kFromBgr>
__attribute__((target("avx2,fma"), always_inline)) inline void group8(const uint8_t* in, uint8_t* out,
                                                                      const HsvAffine& a, const DivTables& t) {
  // bytes 3k + c of each 128-bit half (4 pixels) → dword k
  const __m256i sh0 = _mm256_setr_epi8(0, -1, -1, -1, 3, -1, -1, -1, 6, -1, -1, -1, 9, -1, -1, -1,  //
                                       0, -1, -1, -1, 3, -1, -1, -1, 6, -1, -1, -1, 9, -1, -1, -1);
  const __m256i sh1 = _mm256_setr_epi8(1, -1, -1, -1, 4, -1, -1, -1, 7, -1, -1, -1, 10, -1, -1, -1,  //
                                       1, -1, -1, -1, 4, -1, -1, -1, 7, -1, -1, -1, 10, -1, -1, -1);
  const __m256i sh2 = _mm256_setr_epi8(2, -1, -1, -1, 5, -1, -1, -1, 8, -1, -1, -1, 11, -1, -1, -1,  //
                                       2, -1, -1, -1, 5, -1, -1, -1, 8, -1, -1, -1, 11, -1, -1, -1);
  const __m256i pack3 = _mm256_setr_epi8(0, 1, 2, 4, 5, 6, 8, 9, 10, 12, 13, 14, -1, -1, -1, -1,  //
                                         0, 1, 2, 4, 5, 6, 8, 9, 10, 12, 13, 14, -1, -1, -1, -1);
  const __m256i zero = _mm256_setzero_si256(), i180 = _mm256_set1_epi32(180), i179 = _mm256_set1_epi32(179),
                i255 = _mm256_set1_epi32(255), round = _mm256_set1_epi32(1 << 11);
  const __m256 hscale = _mm256_set1_ps(kHscale), inv255 = _mm256_set1_ps(1.0f / 255.0f), one = _mm256_set1_ps(1.0f),
               sixth = _mm256_set1_ps(1.0f / 6.0f), six = _mm256_set1_ps(6.0f), two = _mm256_set1_ps(2.0f),
               three = _mm256_set1_ps(3.0f), four = _mm256_set1_ps(4.0f);
  const __m128i lo = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in));
  const __m128i hi = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + 12));
  const __m256i x = _mm256_inserti128_si256(_mm256_castsi128_si256(lo), hi, 1);
  __m256i h = _mm256_shuffle_epi8(x, sh0), s = _mm256_shuffle_epi8(x, sh1), v = _mm256_shuffle_epi8(x, sh2);
  if constexpr (kFromBgr) {
    const __m256i b = h, g = s, r = v;
    v = _mm256_max_epi32(b, _mm256_max_epi32(g, r));
    const __m256i diff = _mm256_sub_epi32(v, _mm256_min_epi32(b, _mm256_min_epi32(g, r)));
    const __m256i vr = _mm256_cmpeq_epi32(v, r), vg = _mm256_cmpeq_epi32(v, g);
    const __m256i sdiv = _mm256_i32gather_epi32(t.sdiv, v, 4), hdiv = _mm256_i32gather_epi32(t.hdiv, diff, 4);
    s = _mm256_srai_epi32(_mm256_add_epi32(_mm256_mullo_epi32(diff, sdiv), round), 12);
    const __m256i gb = _mm256_sub_epi32(g, b);
    const __m256i br = _mm256_add_epi32(_mm256_sub_epi32(b, r), _mm256_slli_epi32(diff, 1));
    const __m256i rg = _mm256_add_epi32(_mm256_sub_epi32(r, g), _mm256_slli_epi32(diff, 2));
    h = _mm256_blendv_epi8(_mm256_blendv_epi8(rg, br, vg), gb, vr);
    h = _mm256_srai_epi32(_mm256_add_epi32(_mm256_mullo_epi32(h, hdiv), round), 12);
    h = _mm256_add_epi32(h, _mm256_and_si256(_mm256_cmpgt_epi32(zero, h), i180));
    h = _mm256_min_epi32(_mm256_max_epi32(h, zero), i255);
    // the tables
    h = _mm256_add_epi32(h, _mm256_set1_epi32(static_cast<int>(a.hue_add)));
    h = _mm256_sub_epi32(h, _mm256_and_si256(_mm256_cmpgt_epi32(h, i179), i180));
    h = _mm256_sub_epi32(h, _mm256_and_si256(_mm256_cmpgt_epi32(h, i179), i180));
    h = _mm256_min_epi32(h, i255);
    s = _mm256_min_epu32(_mm256_srli_epi32(_mm256_mullo_epi32(s, _mm256_set1_epi32(static_cast<int>(a.sat_m))), 23),
                         i255);
    v = _mm256_min_epu32(_mm256_srli_epi32(_mm256_mullo_epi32(v, _mm256_set1_epi32(static_cast<int>(a.val_m))), 23),
                         i255);
  }
  // HSV → BGR, HSV2RGB_b's vector loop (its `one - s·h` compiled to a fused multiply-add)
  __m256 hf = _mm256_mul_ps(_mm256_cvtepi32_ps(h), hscale);
  const __m256 pre = _mm256_cvtepi32_ps(_mm256_cvttps_epi32(hf));
  hf = _mm256_sub_ps(hf, pre);
  const __m256 sf = _mm256_mul_ps(_mm256_cvtepi32_ps(s), inv255), vf = _mm256_mul_ps(_mm256_cvtepi32_ps(v), inv255);
  const __m256 tab0 = vf, tab1 = _mm256_mul_ps(vf, _mm256_sub_ps(one, sf)),
               tab2 = _mm256_mul_ps(vf, _mm256_fnmadd_ps(sf, hf, one)),
               tab3 = _mm256_mul_ps(vf, _mm256_fnmadd_ps(sf, _mm256_sub_ps(one, hf), one));
  __m256 sector = _mm256_cvtepi32_ps(_mm256_cvttps_epi32(_mm256_mul_ps(pre, sixth)));
  sector = _mm256_sub_ps(pre, _mm256_mul_ps(sector, six));
  const __m256 lt1 = _mm256_cmp_ps(sector, one, _CMP_LT_OQ), eq1 = _mm256_cmp_ps(sector, one, _CMP_EQ_OQ),
               lt2 = _mm256_cmp_ps(sector, two, _CMP_LT_OQ), eq2 = _mm256_cmp_ps(sector, two, _CMP_EQ_OQ),
               eq3 = _mm256_cmp_ps(sector, three, _CMP_EQ_OQ), gt3 = _mm256_cmp_ps(sector, three, _CMP_GT_OQ),
               eq4 = _mm256_cmp_ps(sector, four, _CMP_EQ_OQ), gt4 = _mm256_cmp_ps(sector, four, _CMP_GT_OQ);
  const __m256 bf = _mm256_or_ps(_mm256_or_ps(sel(lt2, tab1), sel(eq2, tab3)),
                                 _mm256_or_ps(_mm256_or_ps(sel(eq3, tab0), sel(eq4, tab0)), sel(gt4, tab2)));
  const __m256 gf = _mm256_or_ps(_mm256_or_ps(sel(lt1, tab3), sel(eq1, tab0)),
                                 _mm256_or_ps(_mm256_or_ps(sel(eq2, tab0), sel(eq3, tab2)), sel(gt3, tab1)));
  const __m256 rf = _mm256_or_ps(_mm256_or_ps(_mm256_or_ps(sel(lt1, tab0), sel(eq1, tab2)),
                                              _mm256_or_ps(sel(eq2, tab1), sel(eq3, tab1))),
                                 _mm256_or_ps(sel(eq4, tab3), sel(gt4, tab0)));
  const __m256i o = _mm256_or_si256(_mm256_or_si256(to_u8(bf), _mm256_slli_epi32(to_u8(gf), 8)),
                                    _mm256_slli_epi32(to_u8(rf), 16));
  const __m256i p = _mm256_shuffle_epi8(o, pack3);  // 12 bytes per half
  _mm_storeu_si128(reinterpret_cast<__m128i*>(out), _mm256_castsi256_si128(p));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 12), _mm256_extracti128_si256(p, 1));
}

// Columns [0, vec_end) of a row of n pixels, 8 at a time; the last group goes through a padded copy.
template <bool kFromBgr>
__attribute__((target("avx2,fma"))) void row_avx2(const uint8_t* in, uint8_t* out, int n, int vec_end,
                                                  const HsvAffine& a) {
  const DivTables& t = div_tables();
  int i = 0;
  for (; i + 10 <= n && i + 8 <= vec_end; i += 8) group8<kFromBgr>(in + 3 * i, out + 3 * i, a, t);
  for (; i < vec_end; i += 8) {
    const int m = std::min(8, vec_end - i);
    alignas(32) uint8_t src[32] = {}, dst[32];
    std::memcpy(src, in + 3 * i, static_cast<size_t>(3 * m));
    group8<kFromBgr>(src, dst, a, t);
    std::memcpy(out + 3 * i, dst, static_cast<size_t>(3 * m));
  }
}
#endif

bool have_avx2_fma() {
#ifdef YOLO11_HSV_X86
  static const bool ok = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return ok;
#else
  return false;
#endif
}

// Every row: the vector columns [0, vec_end) by row_avx2; the tails (fewer pixels than one OpenCV vector group) by
// OpenCV itself, on an image of their HSV values that it converts in the same scalar tail, row by row.
template <bool kFromBgr>
void run_rows(const cv::Mat& in, cv::Mat& out, int vec_end, const HsvAffine& a) {
  const int w = in.cols, tw = w - vec_end;
  for (int y = 0; y < in.rows; ++y) {
#ifdef YOLO11_HSV_X86
    row_avx2<kFromBgr>(in.ptr<uint8_t>(y), out.ptr<uint8_t>(y), w, vec_end, a);
#endif
  }
  if (tw == 0) return;
  const DivTables& t = div_tables();
  cv::Mat tail(in.rows, tw, CV_8UC3), tail_bgr;
  for (int y = 0; y < in.rows; ++y) {
    const uint8_t* p = in.ptr<uint8_t>(y) + 3 * vec_end;
    uint8_t* th = tail.ptr<uint8_t>(y);
    if constexpr (kFromBgr) {
      for (int x = 0; x < tw; ++x, p += 3, th += 3) {
        int h, s, v;
        bgr2hsv_pixel(p[0], p[1], p[2], t, h, s, v);
        th[0] = static_cast<uint8_t>(hue_map(static_cast<uint32_t>(h), a.hue_add));
        th[1] = static_cast<uint8_t>(gain_map(static_cast<uint32_t>(s), a.sat_m));
        th[2] = static_cast<uint8_t>(gain_map(static_cast<uint32_t>(v), a.val_m));
      }
    } else {
      std::memcpy(th, p, static_cast<size_t>(3 * tw));
    }
  }
  cv::cvtColor(tail, tail_bgr, cv::COLOR_HSV2BGR);
  for (int y = 0; y < in.rows; ++y)
    std::memcpy(out.ptr<uint8_t>(y) + 3 * vec_end, tail_bgr.ptr<uint8_t>(y), static_cast<size_t>(3 * tw));
}

// The first column of a row of `width` pixels that OpenCV's HSV → BGR converts in its scalar tail (width when none),
// or -1 when the installed OpenCV does not follow the model "a vector prefix, then a scalar tail, the same in every
// row". Needs AVX2 (the vector formula is computed by group8).
int probe_vector_end(int width) {
  thread_local int last_width = -1, last_end = -1;
  if (width == last_width) return last_end;
  int end = -1;
#ifdef YOLO11_HSV_X86
  // (h, s, v) = (0, 1, 1): the vector loop truncates 255·(1/255) = 0.99999994 to 0, the scalar tail rounds it to 1.
  const cv::Vec3b in(0, 1, 1);
  cv::Mat one(1, 1, CV_8UC3, cv::Scalar(in[0], in[1], in[2])), sca_m;
  cv::cvtColor(one, sca_m, cv::COLOR_HSV2BGR);
  const cv::Vec3b sca = sca_m.at<cv::Vec3b>(0, 0);
  alignas(32) uint8_t src[32], dst[32];
  for (int i = 0; i < 30; i += 3) std::memcpy(src + i, in.val, 3);
  row_avx2<false>(src, dst, 8, 1, HsvAffine{});
  const cv::Vec3b vec(dst[0], dst[1], dst[2]);
  cv::Mat probe(2, width, CV_8UC3, cv::Scalar(in[0], in[1], in[2])), got;
  cv::cvtColor(probe, got, cv::COLOR_HSV2BGR);
  if (vec != sca) {
    end = width;
    for (int x = 0; x < width; ++x)
      if (got.at<cv::Vec3b>(0, x) != vec) {
        end = x;
        break;
      }
    for (int y = 0; y < 2 && end >= 0; ++y)
      for (int x = 0; x < width; ++x)
        if (got.at<cv::Vec3b>(y, x) != (x < end ? vec : sca)) {
          end = -1;
          break;
        }
  }
#endif
  last_width = width;
  last_end = end;
  return end;
}

// Once per process: the kernel against the installed OpenCV on all 2²⁴ inputs, HSV → BGR alone and BGR → HSV → BGR
// (identity tables), in 16 images of 1024 × 1024. About 0.2 s; on any difference the OpenCV chain is used.
bool kernel_matches_opencv() {
  static const bool ok = [] {
    const int vec_end = have_avx2_fma() ? probe_vector_end(1024) : -1;
    if (vec_end < 0) return false;
    cv::Mat in(1024, 1024, CV_8UC3), got(1024, 1024, CV_8UC3), want, hsv;
    for (uint32_t chunk = 0; chunk < 16; ++chunk) {
      uint8_t* p = in.ptr<uint8_t>();
      for (uint32_t j = 0; j < (1u << 20); ++j) {
        const uint32_t i = chunk << 20 | j;
        p[3 * j] = static_cast<uint8_t>(i), p[3 * j + 1] = static_cast<uint8_t>(i >> 8);
        p[3 * j + 2] = static_cast<uint8_t>(i >> 16);
      }
      cv::cvtColor(in, want, cv::COLOR_HSV2BGR);
      run_rows<false>(in, got, vec_end, HsvAffine{});
      bool same = cv::norm(got, want, cv::NORM_INF) == 0;
      if (same) {
        cv::cvtColor(in, hsv, cv::COLOR_BGR2HSV);
        cv::cvtColor(hsv, want, cv::COLOR_HSV2BGR);
        run_rows<true>(in, got, vec_end, HsvAffine{});
        same = cv::norm(got, want, cv::NORM_INF) == 0;
      }
      if (!same) {
        spdlog::warn("RandomHSV: our fused kernel differs from this OpenCV's colour conversions (OpenCV {}); using "
                     "cv::cvtColor and cv::LUT",
                     CV_VERSION);
        return false;
      }
    }
    return true;
  }();
  return ok;
}

// The reference chain: cvtColor, one 3-channel cv::LUT, cvtColor, on the whole image.
cv::Mat opencv_chain(const cv::Mat& img, const cv::Mat& lut) {
  cv::Mat lut3(1, 256, CV_8UC3), hsv, out;
  for (int x = 0; x < 256; ++x)
    lut3.at<cv::Vec3b>(0, x) = cv::Vec3b(lut.at<uint8_t>(0, x), lut.at<uint8_t>(1, x), lut.at<uint8_t>(2, x));
  cv::cvtColor(img, hsv, cv::COLOR_BGR2HSV);
  cv::LUT(hsv, lut3, hsv);
  cv::cvtColor(hsv, out, cv::COLOR_HSV2BGR);
  return out;
}
}  // namespace

void apply_hsv(cv::Mat& img, double r0, double r1, double r2) {
  if (r0 == 0 && r1 == 0 && r2 == 0) return;
  const cv::Mat lut = hsv_luts(r0, r1, r2);
  const std::optional<HsvAffine> aff = hsv_lut_affine(lut);
  const int vec_end = img.type() == CV_8UC3 && aff && kernel_matches_opencv() ? probe_vector_end(img.cols) : -1;
  if (vec_end < 0) {
    img = opencv_chain(img, lut);
    return;
  }
  cv::Mat out(img.size(), CV_8UC3);  // a new buffer: `img` may share pixels with a cached image
  run_rows<true>(img, out, vec_end, *aff);
  img = out;
}

namespace detail {
bool hsv_kernel_active() { return kernel_matches_opencv(); }

cv::Mat hsv_by_opencv(const cv::Mat& img, double r0, double r1, double r2) {
  return opencv_chain(img, hsv_luts(r0, r1, r2));
}

cv::Mat hsv_to_bgr_like_opencv(const cv::Mat& hsv) {
  if (hsv.type() != CV_8UC3) throw std::invalid_argument("hsv_to_bgr_like_opencv: expects CV_8UC3");
  const int vec_end = kernel_matches_opencv() ? probe_vector_end(hsv.cols) : -1;
  if (vec_end < 0) return {};
  cv::Mat out(hsv.size(), CV_8UC3);
  run_rows<false>(hsv, out, vec_end, HsvAffine{});
  return out;
}
}  // namespace detail

}  // namespace yolo11::data
