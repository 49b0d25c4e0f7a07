// Golden tests of the pure transforms: letterbox, load-time resize, HSV, label mapping (augment_cases, README §3.9)
// and RandomPerspective / Mosaic with the reference's draws (geometry_cases, README §3.11 a–c). Exact comparisons.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <opencv2/imgproc.hpp>

#include <fstream>
#include <iostream>

#include "golden.h"
#include "test_util.h"
#include "yolo11/data/transforms.h"

using namespace yolo11::data;
using namespace yolo11::data::testutil;
using yolo11::test::golden_path;
using yolo11::test::load_golden;

namespace {
nlohmann::json golden_json(const std::string& name) {
  std::ifstream f(golden_path(name));
  return nlohmann::json::parse(f);
}
void expect_same_image(const cv::Mat& got, const at::Tensor& ref) {
  ASSERT_EQ(got.rows, ref.size(0));
  ASSERT_EQ(got.cols, ref.size(1));
  EXPECT_ALL_CLOSE(to_tensor(got), ref, 0, 0);
}
}  // namespace

TEST(Letterbox, ValLetterboxMatchesGoldenA1) {
  auto g = load_golden("augment_cases.safetensors");
  for (int i = 0; i < 2; ++i) {
    const cv::Mat in = to_mat(g.at("lb_input" + std::to_string(i)));
    const auto p = letterbox_params(in.rows, in.cols, 640, 640, /*scaleup=*/false);
    expect_same_image(letterbox_image(in, p), g.at("a1_out" + std::to_string(i)));
  }
  const auto p1 = letterbox_params(333, 500, 640, 640, false);
  EXPECT_EQ(std::vector<int>({p1.top, p1.bottom, p1.left, p1.right}), std::vector<int>({153, 154, 70, 70}));
}

TEST(Letterbox, ValPipelineLoadImageCeilThenLetterboxMatchesGoldenA2) {
  auto g = load_golden("augment_cases.safetensors");
  const cv::Mat loaded = resize_long_side(to_mat(g.at("lb_input1")), 640);
  EXPECT_EQ(loaded.rows, 427);  // ceil(333·1.28)
  EXPECT_EQ(loaded.cols, 640);
  const auto p = letterbox_params(loaded.rows, loaded.cols, 640, 640, false);
  EXPECT_EQ(p.top, 106);
  EXPECT_EQ(p.bottom, 107);
  expect_same_image(letterbox_image(loaded, p), g.at("a2_out1"));
}

TEST(Letterbox, ScaleupLetterboxMatchesGoldenA3AndRoundsHalfToEven) {
  auto g = load_golden("augment_cases.safetensors");
  const cv::Mat in = to_mat(g.at("lb_input1"));
  const auto p = letterbox_params(in.rows, in.cols, 320, 320, /*scaleup=*/true);
  EXPECT_EQ(p.new_unpad_w, 320);
  EXPECT_EQ(p.new_unpad_h, 213);
  expect_same_image(letterbox_image(in, p), g.at("a3_out1"));
  const auto p640 = letterbox_params(333, 500, 640, 640, true);  // predict path: 426 (round), pads 107/107
  EXPECT_EQ(p640.new_unpad_h, 426);
  EXPECT_EQ(p640.top, 107);
  EXPECT_EQ(p640.bottom, 107);
}

TEST(Letterbox, LabelsToPixelsAndFormatMatchGoldenC) {
  auto g = load_golden("augment_cases.safetensors");
  const auto xywhn = to_boxes(g.at("labels_xywhn"));
  // val: the 427×640 loaded image, r = 1, pad top 106
  const auto pv = letterbox_params(427, 640, 640, 640, false);
  const auto val = letterbox_boxes_from_xywhn(xywhn, 640, 427, pv);
  EXPECT_ALL_CLOSE(boxes_tensor(val), g.at("c_val_xyxy_pixels"), 0, 0);
  std::vector<Box> xywh;
  for (auto& b : val) xywh.push_back(xyxy2xywh(b));
  EXPECT_ALL_CLOSE(boxes_tensor(normalize_xywh(xywh, 640, 640)), g.at("c_val_format_xywhn"), 0, 0);
  // scaleup: the raw 333×500 image, r = 1.28
  const auto ps = letterbox_params(333, 500, 640, 640, true);
  const auto su = letterbox_boxes_from_xywhn(xywhn, 500, 333, ps);
  EXPECT_ALL_CLOSE(boxes_tensor(su), g.at("c_scaleup_xyxy_pixels"), 0, 0);
  xywh.clear();
  for (auto& b : su) xywh.push_back(xyxy2xywh(b));
  EXPECT_ALL_CLOSE(boxes_tensor(normalize_xywh(xywh, 640, 640)), g.at("c_scaleup_format_xywhn"), 0, 0);
}

TEST(RandomHSV, LutsAndImagesMatchGoldenForFixedGains) {
  auto g = load_golden("augment_cases.safetensors");
  const auto j = golden_json("augment_cases.json");
  const std::array<double, 3> gains{0.015, 0.7, 0.4};
  for (int k = 0; k < 2; ++k) {
    const auto& c = j["b_random_hsv"]["cases"][k];
    std::array<double, 3> r{};
    for (int i = 0; i < 3; ++i) r[i] = c["u"][i].get<double>() * gains[i];
    const cv::Mat lut = hsv_luts(r[0], r[1], r[2]);
    at::Tensor lut_t = torch::from_blob(lut.data, {3, 256}, torch::kUInt8).clone();
    EXPECT_ALL_CLOSE(lut_t, g.at("hsv_case" + std::to_string(k) + "_lut"), 0, 0);
    cv::Mat img = to_mat(g.at("hsv_input"));
    apply_hsv(img, r[0], r[1], r[2]);
    expect_same_image(img, g.at("hsv_case" + std::to_string(k) + "_output"));
  }
}

TEST(LoadImage, LongSideResizeWithCeilMatchesGoldenDatasetImages) {
  auto g = load_golden("geometry_cases.safetensors");
  for (int i = 1; i <= 4; ++i) {
    const cv::Mat out = resize_long_side(to_mat(g.at("ds_source" + std::to_string(i))), 160);
    expect_same_image(out, g.at("ds_loaded" + std::to_string(i)));
  }
  const cv::Mat src0 = to_mat(g.at("ds_source0"));
  EXPECT_EQ(resize_long_side(src0, 160).data, src0.data);  // r = 1: not resized
}

TEST(RandomPerspective, MatrixImageBoxesAndFilterMatchGoldenRp0To2) {
  auto g = load_golden("geometry_cases.safetensors");
  const auto j = golden_json("geometry_cases.json");
  const cv::Mat in = to_mat(g.at("rp_input"));
  Labels lab{to_boxes(g.at("rp_boxes_input")), to_cls(g.at("rp_cls_input"))};
  for (const auto& c : j["a_random_perspective"]["cases"]) {
    const std::string n = c["name"];
    SCOPED_TRACE(n);
    const auto& v = c["draw_values_in_order"];
    PerspectiveDraws d{v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]};
    const bool persp = c["hyp"]["perspective"].get<double>() != 0;
    const auto r = random_perspective(in, lab, d, persp);
    EXPECT_ALL_CLOSE(torch::from_blob(const_cast<float*>(r.M.data()), {3, 3}, torch::kFloat), g.at(n + "_M"), 0, 0);
    expect_same_image(r.img, g.at(n + "_img"));
    EXPECT_ALL_CLOSE(boxes_tensor(r.boxes_warped), g.at(n + "_boxes_warped"), 0, 0);
    EXPECT_ALL_CLOSE(boxes_tensor(r.box1_scaled), g.at(n + "_box1_scaled"), 0, 0);
    EXPECT_ALL_CLOSE(boxes_tensor(r.boxes_clipped), g.at(n + "_boxes_clipped"), 0, 0);
    EXPECT_TRUE(torch::equal(keep_tensor(r.keep), g.at(n + "_keep")));
    EXPECT_ALL_CLOSE(boxes_tensor(r.out.boxes), g.at(n + "_boxes_out"), 0, 0);
    EXPECT_ALL_CLOSE(cls_tensor(r.out.cls), g.at(n + "_cls_out"), 0, 0);
  }
}

TEST(Mosaic, CanvasAndLabelsMatchGoldenMosAAndMosB) {
  auto g = load_golden("geometry_cases.safetensors");
  const auto j = golden_json("geometry_cases.json");
  std::array<LoadedSample, 4> s;
  for (int i = 0; i < 4; ++i) {
    s[i].img = resize_long_side(to_mat(g.at("ds_source" + std::to_string(i))), 160);
    s[i].xywhn = to_boxes(g.at("ds_labels" + std::to_string(i) + "_xywhn"));
    s[i].cls = to_cls(g.at("ds_labels" + std::to_string(i) + "_cls"));
  }
  for (const auto& c : j["c_mosaic"]["cases"]) {
    const std::string n = c["name"];
    SCOPED_TRACE(n);
    const int yc = static_cast<int>(c["draws"][2]["returns"].get<double>());
    const int xc = static_cast<int>(c["draws"][3]["returns"].get<double>());
    const auto m = mosaic4({&s[0], &s[1], &s[2], &s[3]}, 160, yc, xc);
    expect_same_image(m.img, g.at(n + "_img"));
    EXPECT_ALL_CLOSE(boxes_tensor(m.boxes_padded), g.at(n + "_boxes_padded"), 0, 0);
    EXPECT_ALL_CLOSE(boxes_tensor(m.boxes_clipped), g.at(n + "_boxes_clipped"), 0, 0);
    EXPECT_TRUE(torch::equal(keep_tensor(m.keep), g.at(n + "_keep")));
    EXPECT_ALL_CLOSE(boxes_tensor(m.labels.boxes), g.at(n + "_boxes"), 0, 0);
    EXPECT_ALL_CLOSE(cls_tensor(m.labels.cls), g.at(n + "_cls"), 0, 0);
  }
}

TEST(Flip, MirrorsImageAndPixelXywhBoxes) {
  cv::Mat img(4, 6, CV_8UC3, cv::Scalar(0, 0, 0));
  img.at<cv::Vec3b>(0, 0) = cv::Vec3b(1, 2, 3);
  std::vector<Box> b{{1.5f, 0.5f, 1.0f, 1.0f}};
  flip_lr(img, b);
  EXPECT_EQ(img.at<cv::Vec3b>(0, 5), cv::Vec3b(1, 2, 3));
  EXPECT_FLOAT_EQ(b[0][0], 4.5f);
  flip_ud(img, b);
  EXPECT_EQ(img.at<cv::Vec3b>(3, 5), cv::Vec3b(1, 2, 3));
  EXPECT_FLOAT_EQ(b[0][1], 3.5f);
}

TEST(Format, HwcBgrToChwRgb) {
  cv::Mat img(2, 3, CV_8UC3);
  for (int y = 0; y < 2; ++y)
    for (int x = 0; x < 3; ++x) img.at<cv::Vec3b>(y, x) = cv::Vec3b(10 * y + x, 100, 200);
  std::vector<uint8_t> out(18);
  hwc_bgr_to_chw_rgb(img, out.data());
  EXPECT_EQ(out[0], 200);       // R plane
  EXPECT_EQ(out[6], 100);       // G plane
  EXPECT_EQ(out[12 + 4], 11);   // B plane, (y 1, x 1)
}

// RandomHSV's fused pass (src/data/hsv.cpp: integer maps instead of cv::LUT, OpenCV's conversions re-implemented)
// against the plain chain it replaces: BGR2HSV → one 3-channel cv::LUT → HSV2BGR over the whole image, byte for byte.
static cv::Mat hsv_reference(const cv::Mat& img, double r0, double r1, double r2) {
  const cv::Mat lut = hsv_luts(r0, r1, r2);
  cv::Mat hsv, out, lut3(1, 256, CV_8UC3);
  for (int x = 0; x < 256; ++x)
    lut3.at<cv::Vec3b>(0, x) = cv::Vec3b(lut.at<uint8_t>(0, x), lut.at<uint8_t>(1, x), lut.at<uint8_t>(2, x));
  cv::cvtColor(img, hsv, cv::COLOR_BGR2HSV);
  cv::LUT(hsv, lut3, hsv);
  cv::cvtColor(hsv, out, cv::COLOR_HSV2BGR);
  return out;
}

TEST(RandomHSV, FastPathEqualsThePlainChainForAnyGainsAndFillLayout) {
  cv::RNG rng(7);
  int fills = 0;
  for (int k = 0; k < 1500; ++k) {
    const int h = 1 + static_cast<int>(rng.uniform(0, 40)), w = 1 + static_cast<int>(rng.uniform(0, 70));
    cv::Mat big(h + 4, w + 6, CV_8UC3);
    rng.fill(big, cv::RNG::UNIFORM, 0, 256);
    cv::Mat img = big(cv::Rect(3, 2, w, h));  // a non-continuous view, as a crop would be
    if (k % 3 != 0) {  // mosaic-like fill (114) around or beside the content
      const int x0 = static_cast<int>(rng.uniform(0, w)), y0 = static_cast<int>(rng.uniform(0, h));
      img.setTo(cv::Scalar(114, 114, 114));
      big(cv::Rect(3 + x0, 2 + y0, std::max(1, (w - x0) / 2), std::max(1, (h - y0) / 2)))
          .forEach<cv::Vec3b>([&](cv::Vec3b& p, const int*) { p = cv::Vec3b(p[0] ^ 1, 200, 30); });
      ++fills;
    }
    if (k % 50 == 0) img.setTo(cv::Scalar(114, 114, 114));  // all fill
    // gains: the training range (hsv_h 0.015, hsv_s 0.7, hsv_v 0.4) and wider, user-set ones
    const double wide = k % 2 ? 1.0 : 0.5;
    const double r0 = rng.uniform(-1.0, 1.0) * (k % 2 ? 0.5 : 0.015), r1 = rng.uniform(-1.0, 1.0) * 0.7 * wide * 1.4,
                 r2 = rng.uniform(-1.0, 1.0) * 0.4 * wide * 2;
    const cv::Mat want = hsv_reference(img, r0, r1, r2);
    cv::Mat got = img;
    const cv::Mat before = img.clone();
    apply_hsv(got, r0, r1, r2);
    ASSERT_EQ(cv::norm(img, before, cv::NORM_INF), 0) << "the input was written through";
    ASSERT_EQ(got.size(), want.size());
    if (cv::norm(got, want, cv::NORM_INF) != 0) {
      for (int y = 0; y < got.rows; ++y)
        for (int x = 0; x < got.cols; ++x)
          if (got.at<cv::Vec3b>(y, x) != want.at<cv::Vec3b>(y, x)) {
            std::cerr << "at " << x << "," << y << " in " << img.at<cv::Vec3b>(y, x) << " got " << got.at<cv::Vec3b>(y, x)
                      << " want " << want.at<cv::Vec3b>(y, x) << " size " << got.size() << "\n";
            y = got.rows;
            break;
          }
    }
    ASSERT_EQ(cv::norm(got, want, cv::NORM_INF), 0) << "case " << k << " gains " << r0 << " " << r1 << " " << r2;
  }
  EXPECT_GT(fills, 900);
}

// Every 8-bit input, 2^24 pixels in one 4096 × 4096 image (pixel i holds the bytes of i), and the same pixels as a
// column of single-pixel rows (which OpenCV converts in its scalar tail, where the rounding differs).
static cv::Mat all_pixels() {
  cv::Mat img(4096, 4096, CV_8UC3);
  uint8_t* p = img.ptr<uint8_t>();
  for (uint32_t i = 0; i < (1u << 24); ++i) {
    p[3 * i] = static_cast<uint8_t>(i);
    p[3 * i + 1] = static_cast<uint8_t>(i >> 8);
    p[3 * i + 2] = static_cast<uint8_t>(i >> 16);
  }
  return img;
}

static int64_t count_diff(const cv::Mat& a, const cv::Mat& b) {
  cv::Mat d;
  cv::compare(a.reshape(1), b.reshape(1), d, cv::CMP_NE);
  return cv::countNonZero(d);
}

TEST(RandomHSV, HsvToBgrEqualsOpenCVForEveryInputInVectorAndTailPositions) {
  if (!yolo11::data::detail::hsv_kernel_active()) GTEST_SKIP() << "no AVX2+FMA: apply_hsv runs OpenCV's own calls";
  const cv::Mat all = all_pixels();
  // widths: whole vector groups; 31 (OpenCV's scalar tail only, with AVX2); 61 (a group of 32 or 16, then a tail)
  for (const cv::Mat& img : {all, all.reshape(3, (1 << 24) / 32).colRange(0, 31).clone(),
                             all.reshape(3, (1 << 24) / 64).colRange(0, 61).clone()}) {
    cv::Mat want;
    cv::cvtColor(img, want, cv::COLOR_HSV2BGR);
    EXPECT_EQ(count_diff(yolo11::data::detail::hsv_to_bgr_like_opencv(img), want), 0) << "width " << img.cols;
  }
}

TEST(RandomHSV, FusedPassEqualsThePlainChainForEveryBgrInput) {
  const cv::Mat all = all_pixels();
  cv::RNG rng(3);
  const double draws[][3] = {{0.015, 0.7, 0.4}, {-0.015, -0.7, -0.4}, {0.5, 1.5, 0.9}, {-0.9, 0.2, -0.05}};
  for (int k = 0; k < 6; ++k) {
    const double r0 = k < 4 ? draws[k][0] : rng.uniform(-1.0, 1.0) * 0.015,
                 r1 = k < 4 ? draws[k][1] : rng.uniform(-1.0, 1.0) * 0.7,
                 r2 = k < 4 ? draws[k][2] : rng.uniform(-1.0, 1.0) * 0.4;
    cv::Mat got = all;
    apply_hsv(got, r0, r1, r2);
    EXPECT_EQ(count_diff(got, hsv_reference(all, r0, r1, r2)), 0) << "gains " << r0 << " " << r1 << " " << r2;
  }
}

// RandomPerspective's scale-translate warp against cv::warpAffine, byte for byte: random sizes, scales (zoom in and
// out), fractional translations that leave parts of the output outside the source, random borders, and the matrices
// RandomPerspective draws for a 1280² mosaic.
TEST(RandomPerspective, ScaleTranslateWarpEqualsOpenCV) {
  cv::RNG rng(5);
  int applied = 0;
  for (int k = 0; k < 600; ++k) {
    const bool full = k < 12;
    const int w_in = full ? 1280 : 1 + static_cast<int>(rng.uniform(0, 120)),
              h_in = full ? 1280 : 1 + static_cast<int>(rng.uniform(0, 120));
    const int w_out = full ? 640 : 1 + static_cast<int>(rng.uniform(0, 100)),
              h_out = full ? 640 : 1 + static_cast<int>(rng.uniform(0, 100));
    cv::Mat src(h_in, w_in, CV_8UC3);
    rng.fill(src, cv::RNG::UNIFORM, 0, 256);
    double M[6];
    if (full) {  // the draws of the training default (degrees 0, shear 0, perspective 0, translate 0.1, scale 0.5)
      PerspectiveDraws d;
      d.s = rng.uniform(0.5, 1.5);
      d.tx = rng.uniform(0.4, 0.6);
      d.ty = rng.uniform(0.4, 0.6);
      const Mat3f m = perspective_matrix(d, w_in, h_in, w_out, h_out);
      for (int i = 0; i < 6; ++i) M[i] = m[i];
    } else {
      const float s = static_cast<float>(rng.uniform(0.1, 2.5));
      const float sy = k % 4 == 0 ? static_cast<float>(rng.uniform(0.1, 2.5)) : s;  // anisotropic too
      const double tx = rng.uniform(-1.5, 1.5) * w_out, ty = rng.uniform(-1.5, 1.5) * h_out;
      const double v[6] = {s, 0, static_cast<float>(tx), 0, sy, static_cast<float>(ty)};
      std::copy(v, v + 6, M);
    }
    const cv::Vec3b border(static_cast<uint8_t>(k % 3 ? 114 : rng.uniform(0, 256)), 114, static_cast<uint8_t>(k % 256));
    cv::Mat want, got;
    cv::warpAffine(src, want, cv::Mat(2, 3, CV_64F, M), cv::Size(w_out, h_out), cv::INTER_LINEAR, cv::BORDER_CONSTANT,
                   cv::Scalar(border[0], border[1], border[2]));
    if (!yolo11::data::detail::warp_affine_scale_translate(src, got, M, cv::Size(w_out, h_out), border)) continue;
    ++applied;
    ASSERT_EQ(got.size(), want.size());
    ASSERT_EQ(count_diff(got, want), 0) << "case " << k << " in " << src.size() << " out " << want.size() << " M "
                                        << M[0] << " " << M[2] << " " << M[4] << " " << M[5];
  }
  if (applied == 0) GTEST_SKIP() << "no AVX2: RandomPerspective runs cv::warpAffine";
  EXPECT_EQ(applied, 600);
}

TEST(RandomPerspective, WarpWithRotationOrShearIsLeftToOpenCV) {
  cv::Mat src(8, 8, CV_8UC3, cv::Scalar(1, 2, 3)), dst;
  const double rot[6] = {0.9, 0.1, 0, -0.1, 0.9, 0};
  EXPECT_FALSE(yolo11::data::detail::warp_affine_scale_translate(src, dst, rot, cv::Size(8, 8), cv::Vec3b(114, 114, 114)));
  EXPECT_TRUE(dst.empty());
  const double scale[6] = {0.5, 0, 1, 0, 0.5, 1};  // in place (dst is src): left to OpenCV, src untouched
  const cv::Mat before = src.clone();
  EXPECT_FALSE(
      yolo11::data::detail::warp_affine_scale_translate(src, src, scale, cv::Size(8, 8), cv::Vec3b(114, 114, 114)));
  EXPECT_EQ(count_diff(src, before), 0);
}

// Mosaic's canvas is filled with 114 only where no tile lands; the result must equal Ultralytics' order (a canvas
// full of 114, then the four tiles copied over it) for any centre and any tile sizes.
TEST(Mosaic, FillOnlyBetweenTilesEqualsFullFillThenCopy) {
  cv::RNG rng(11);
  const int S = 64, S2 = 2 * S;
  for (int k = 0; k < 300; ++k) {
    std::array<LoadedSample, 4> parts;
    for (auto& p : parts) {
      p.img.create(1 + static_cast<int>(rng.uniform(0, 90)), 1 + static_cast<int>(rng.uniform(0, 90)), CV_8UC3);
      rng.fill(p.img, cv::RNG::UNIFORM, 0, 256);
    }
    const int yc = static_cast<int>(rng.uniform(S / 2, 3 * S / 2)), xc = static_cast<int>(rng.uniform(S / 2, 3 * S / 2));
    const MosaicResult m = mosaic4({&parts[0], &parts[1], &parts[2], &parts[3]}, S, yc, xc);
    cv::Mat want(S2, S2, CV_8UC3, cv::Scalar(114, 114, 114));
    for (int i = 0; i < 4; ++i) {
      const int h = parts[i].img.rows, w = parts[i].img.cols;
      int x1a, y1a, x2a, y2a, x1b, y1b;
      if (i == 0) {
        x1a = std::max(xc - w, 0), y1a = std::max(yc - h, 0), x2a = xc, y2a = yc;
        x1b = w - (x2a - x1a), y1b = h - (y2a - y1a);
      } else if (i == 1) {
        x1a = xc, y1a = std::max(yc - h, 0), x2a = std::min(xc + w, S2), y2a = yc;
        x1b = 0, y1b = h - (y2a - y1a);
      } else if (i == 2) {
        x1a = std::max(xc - w, 0), y1a = yc, x2a = xc, y2a = std::min(S2, yc + h);
        x1b = w - (x2a - x1a), y1b = 0;
      } else {
        x1a = xc, y1a = yc, x2a = std::min(xc + w, S2), y2a = std::min(S2, yc + h);
        x1b = 0, y1b = 0;
      }
      if (x2a > x1a && y2a > y1a)
        parts[i].img(cv::Rect(x1b, y1b, x2a - x1a, y2a - y1a)).copyTo(want(cv::Rect(x1a, y1a, x2a - x1a, y2a - y1a)));
    }
    ASSERT_EQ(cv::norm(m.img, want, cv::NORM_INF), 0) << "case " << k << " centre " << xc << "," << yc;
  }
}
