// Golden tests of the pure transforms: letterbox, load-time resize, HSV, label mapping (augment_cases, README §3.9)
// and RandomPerspective / Mosaic with the reference's draws (geometry_cases, README §3.11 a–c). Exact comparisons.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>

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
