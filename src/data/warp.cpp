// RandomPerspective's warp for its default draws (no rotation, no shear, no perspective: a scale and a translation),
// byte-exact with cv::warpAffine(INTER_LINEAR, BORDER_CONSTANT) of OpenCV 4.6 and about twice as fast.
//
// What OpenCV computes (imgwarp.cpp): it inverts M in float64, then for every output pixel takes fixed-point source
// coordinates X = (round(b1·1024) + 16 + round(m0·x·1024)) >> 5 (likewise Y), i.e. an integer column sx = X >> 5 and a
// fraction fx = X & 31 in 1/32 pixel, and blends the four neighbours with the integer weights
// (32−fy)(32−fx)·32, (32−fy)·fx·32, fy·(32−fx)·32, fy·fx·32 (sum 2¹⁵), rounding (t + 2¹⁴) >> 15; a neighbour outside
// the source counts as the border value. Its 3-channel 8-bit blend has no vector path.
//
// With no rotation or shear, sx and fx depend only on the column and sy, fy only on the row, and the blend is exactly
// separable: t = 32·((32−fy)·H₀ + fy·H₁) with Hᵣ = (32−fx)·v(r, sx) + fx·v(r, sx+1), so (t + 2¹⁴) >> 15 equals
// ((32−fy)·H₀ + fy·H₁ + 512) >> 10. The kernel computes that per row, 8 pixels at a time (AVX2 gathers from a copy of
// the two source rows padded with the border value). Tests compare it with cv::warpAffine on random scales,
// translations, sizes and borders (tests/data/test_transforms.cpp).
#include "yolo11/data/transforms.h"

#include <opencv2/imgproc.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define YOLO11_WARP_X86 1
#endif

namespace yolo11::data {
namespace {

inline int sat_short(int v) { return std::clamp(v, -32768, 32767); }
inline int round_int(double v) {  // saturate_cast<int>(double): round half to even, saturate
  if (!(v > -2147483648.0)) return INT32_MIN;
  if (v >= 2147483647.0) return INT32_MAX;
  return static_cast<int>(std::nearbyint(v));
}

#ifdef YOLO11_WARP_X86
bool have_avx2() {
  static const bool ok = __builtin_cpu_supports("avx2");
  return ok;
}

// Byte c of every 32-bit lane.
__attribute__((target("avx2"), always_inline)) inline __m256i channel(__m256i v, __m128i shift) {
  return _mm256_and_si256(_mm256_srl_epi32(v, shift), _mm256_set1_epi32(0xFF));
}

// One output row: columns [0, n) from two padded source rows p0, p1 (byte offsets `off` of pixel sx, weights fx),
// 8 at a time. Reads 4 bytes at p + off + 3 (the row copies carry 4 bytes of slack); writes whole groups of 8 while
// 28 bytes fit, the rest through a small buffer.
__attribute__((target("avx2"))) void warp_row_avx2(const uint8_t* p0, const uint8_t* p1, const int32_t* off,
                                                   const int32_t* fx, int fy, int n, uint8_t* out) {
  const __m256i w32 = _mm256_set1_epi32(32), round = _mm256_set1_epi32(512),
                wy1 = _mm256_set1_epi32(fy), wy0 = _mm256_set1_epi32(32 - fy);
  const __m256i pack3 = _mm256_setr_epi8(0, 1, 2, 4, 5, 6, 8, 9, 10, 12, 13, 14, -1, -1, -1, -1,  //
                                         0, 1, 2, 4, 5, 6, 8, 9, 10, 12, 13, 14, -1, -1, -1, -1);
  const int* b0 = reinterpret_cast<const int*>(p0);
  const int* b1 = reinterpret_cast<const int*>(p1);
  for (int i = 0; i < n; i += 8) {
    const __m256i o = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(off + i));
    const __m256i o3 = _mm256_add_epi32(o, _mm256_set1_epi32(3));
    const __m256i f1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(fx + i)), f0 = _mm256_sub_epi32(w32, f1);
    const __m256i a0 = _mm256_i32gather_epi32(b0, o, 1), a1 = _mm256_i32gather_epi32(b0, o3, 1);
    const __m256i c0 = _mm256_i32gather_epi32(b1, o, 1), c1 = _mm256_i32gather_epi32(b1, o3, 1);
    __m256i res = _mm256_setzero_si256();
    for (int c = 0; c < 3; ++c) {
      const __m128i sh = _mm_cvtsi32_si128(8 * c);
      const __m256i h0 =
          _mm256_add_epi32(_mm256_mullo_epi32(f0, channel(a0, sh)), _mm256_mullo_epi32(f1, channel(a1, sh)));
      const __m256i h1 =
          _mm256_add_epi32(_mm256_mullo_epi32(f0, channel(c0, sh)), _mm256_mullo_epi32(f1, channel(c1, sh)));
      const __m256i u = _mm256_add_epi32(_mm256_add_epi32(_mm256_mullo_epi32(wy0, h0), _mm256_mullo_epi32(wy1, h1)), round);
      res = _mm256_or_si256(res, _mm256_sll_epi32(_mm256_srli_epi32(u, 10), sh));
    }
    const __m256i p = _mm256_shuffle_epi8(res, pack3);
    if (i + 10 <= n) {
      _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 3 * i), _mm256_castsi256_si128(p));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 3 * i + 12), _mm256_extracti128_si256(p, 1));
    } else {
      alignas(32) uint8_t buf[32];
      _mm_storeu_si128(reinterpret_cast<__m128i*>(buf), _mm256_castsi256_si128(p));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(buf + 12), _mm256_extracti128_si256(p, 1));
      std::memcpy(out + 3 * i, buf, static_cast<size_t>(3 * std::min(8, n - i)));
    }
  }
}

// The kernel (see the top of the file); false when M has a rotation or shear or the sizes do not fit.
bool warp_rows(const cv::Mat& src, cv::Mat& dst, const double* M, cv::Size dsize, const cv::Vec3b& border) {
  if (src.type() != CV_8UC3 || src.empty() || dsize.width <= 0 || dsize.height <= 0) return false;
  if (!dst.empty() && dst.data == src.data) return false;  // in place: rows are read after earlier rows are written
  // warpAffine's inversion, in its order
  double D = M[0] * M[4] - M[1] * M[3];
  D = D != 0 ? 1. / D : 0;
  const double m0 = M[4] * D, m4 = M[0] * D, m1 = M[1] * -D, m3 = M[3] * -D;
  const double b1 = -m0 * M[2] - m1 * M[5], b2 = -m3 * M[2] - m4 * M[5];
  if (m1 != 0 || m3 != 0) return false;
  const int w_in = src.cols, h_in = src.rows, w_out = dsize.width, h_out = dsize.height;
  // columns: byte offset of sx in the padded row (which starts at source column xmin) and fx
  const int X0 = round_int(b1 * 1024) + 16;
  // fx and off get 8 zero entries past w_out for the last group of 8
  std::vector<int32_t> sx(static_cast<size_t>(w_out)), fx(static_cast<size_t>(w_out) + 8, 0),
      off(static_cast<size_t>(w_out) + 8, 0);
  int xmin = INT32_MAX, xmax = INT32_MIN;
  for (int x = 0; x < w_out; ++x) {
    const int X = (X0 + round_int(m0 * x * 1024)) >> 5;
    sx[x] = sat_short(X >> 5);
    fx[x] = X & 31;
    xmin = std::min(xmin, sx[x]);
    xmax = std::max(xmax, sx[x]);
  }
  const int64_t span = static_cast<int64_t>(xmax) - xmin + 2;  // pixels sx .. sx+1
  if (span > (1 << 16)) return false;
  for (int x = 0; x < w_out; ++x) off[x] = 3 * (sx[x] - xmin);
  // padded copies of the source rows: border value outside [0, w_in), 4 bytes of slack for the 32-bit gathers
  const size_t row_bytes = static_cast<size_t>(span) * 3 + 4;
  std::vector<uint8_t> pad_border(row_bytes), rows[2] = {std::vector<uint8_t>(row_bytes), std::vector<uint8_t>(row_bytes)};
  for (size_t i = 0; i + 2 < row_bytes; i += 3) std::memcpy(&pad_border[i], border.val, 3);
  int cached[2] = {INT32_MIN, INT32_MIN};
  const int in_lo = std::max(0, xmin), in_hi = static_cast<int>(std::min<int64_t>(w_in, xmin + span));  // copied columns
  const auto source_row = [&](int r, int slot) -> const uint8_t* {
    if (r < 0 || r >= h_in) return pad_border.data();
    if (cached[slot] != r) {
      std::vector<uint8_t>& b = rows[slot];
      std::memcpy(b.data(), pad_border.data(), row_bytes);
      if (in_hi > in_lo)
        std::memcpy(&b[static_cast<size_t>(in_lo - xmin) * 3], src.ptr<uint8_t>(r) + static_cast<size_t>(in_lo) * 3,
                    static_cast<size_t>(in_hi - in_lo) * 3);
      cached[slot] = r;
    }
    return rows[slot].data();
  };
  dst.create(dsize, CV_8UC3);
  for (int y = 0; y < h_out; ++y) {
    const int Y = (round_int((m4 * y + b2) * 1024) + 16) >> 5;
    const int sy = sat_short(Y >> 5), fy = Y & 31;
    // the two slots hold rows of the same parity, so consecutive output rows reuse both copies
    const uint8_t* p0 = source_row(sy, sy & 1);
    const uint8_t* p1 = source_row(sy + 1, (sy + 1) & 1);
    warp_row_avx2(p0, p1, off.data(), fx.data(), fy, w_out, dst.ptr<uint8_t>(y));
  }
  return true;
}

// Once per process: the kernel against the installed cv::warpAffine on 64 small random scale-translate warps and one
// 1280² → 640² draw (a few ms). Another OpenCV whose warpAffine computes differently → cv::warpAffine is used.
bool kernel_matches_opencv() {
  static const bool ok = [] {
    if (!have_avx2()) return false;
    cv::RNG rng(20261201);
    for (int k = 0; k < 65; ++k) {
      const bool full = k == 64;
      const int w_in = full ? 1280 : 1 + static_cast<int>(rng.uniform(0, 80)),
                h_in = full ? 1280 : 1 + static_cast<int>(rng.uniform(0, 80));
      const int w_out = full ? 640 : 1 + static_cast<int>(rng.uniform(0, 60)),
                h_out = full ? 640 : 1 + static_cast<int>(rng.uniform(0, 60));
      cv::Mat src(h_in, w_in, CV_8UC3), want, got;
      rng.fill(src, cv::RNG::UNIFORM, 0, 256);
      const float s = static_cast<float>(rng.uniform(0.3, 1.7));
      const double M[6] = {s, 0, static_cast<float>(rng.uniform(-1.0, 1.0) * w_out), 0, s,
                           static_cast<float>(rng.uniform(-1.0, 1.0) * h_out)};
      cv::warpAffine(src, want, cv::Mat(2, 3, CV_64F, const_cast<double*>(M)), cv::Size(w_out, h_out), cv::INTER_LINEAR,
                     cv::BORDER_CONSTANT, cv::Scalar(114, 114, 114));
      if (!warp_rows(src, got, M, cv::Size(w_out, h_out), cv::Vec3b(114, 114, 114)) ||
          cv::norm(got, want, cv::NORM_INF) != 0) {
        spdlog::warn("RandomPerspective: our scale-translate warp differs from this OpenCV's cv::warpAffine (OpenCV {}); "
                     "using cv::warpAffine",
                     CV_VERSION);
        return false;
      }
    }
    return true;
  }();
  return ok;
}
#endif
}  // namespace

namespace detail {
bool warp_affine_scale_translate(const cv::Mat& src, cv::Mat& dst, const double* M, cv::Size dsize,
                                 const cv::Vec3b& border) {
#ifndef YOLO11_WARP_X86
  return false;
#else
  if (!kernel_matches_opencv()) return false;
  return warp_rows(src, dst, M, dsize, border);
#endif
}
}  // namespace detail

}  // namespace yolo11::data
