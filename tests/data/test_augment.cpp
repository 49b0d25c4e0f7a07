// The training chain (Mosaic → RandomPerspective → HSV → flips → Format) and the close_mosaic chain with the
// reference's draws substituted equal geometry_cases (README §3.11 d); the draw layer is deterministic.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>

#include "golden.h"
#include "test_util.h"
#include "yolo11/data/augment.h"

using namespace yolo11::data;
using namespace yolo11::data::testutil;
using yolo11::test::golden_path;
using yolo11::test::load_golden;

namespace {
struct GoldenDataset {
  yolo11::io::TensorFile g = load_golden("geometry_cases.safetensors");
  nlohmann::json j = [] {
    std::ifstream f(golden_path("geometry_cases.json"));
    return nlohmann::json::parse(f);
  }();
  SampleSource source() const {
    return [this](int64_t i) {
      LoadedSample s;
      s.img = resize_long_side(to_mat(g.at("ds_source" + std::to_string(i))), 160);
      s.xywhn = to_boxes(g.at("ds_labels" + std::to_string(i) + "_xywhn"));
      s.cls = to_cls(g.at("ds_labels" + std::to_string(i) + "_cls"));
      return s;
    };
  }
};

// Builds SampleDraws from the json's draw list (order of the reference code).
SampleDraws draws_from_json(const nlohmann::json& draws, bool mosaic_applied) {
  SampleDraws d;
  size_t k = 0;
  d.pre.mosaic_gate = draws[k++]["returns"];
  if (mosaic_applied) {
    auto idx = draws[k++]["returns"];
    for (int i = 0; i < 3; ++i) d.pre.mosaic_idx[i] = idx[i];
    d.pre.yc = draws[k++]["returns"];
    d.pre.xc = draws[k++]["returns"];
  }
  auto& p = d.pre.persp;
  double* v[8] = {&p.px, &p.py, &p.a, &p.s, &p.shx, &p.shy, &p.tx, &p.ty};
  for (auto* x : v) *x = draws[k++]["returns"];
  d.mixup_gate = draws[k++]["returns"];
  d.cutmix_gate = draws[k++]["returns"];
  auto u = draws[k++]["returns"];
  for (int i = 0; i < 3; ++i) d.hsv_u[i] = u[i];
  d.flipud_u = draws[k++]["returns"];
  d.fliplr_u = draws[k++]["returns"];
  d.bgr_u = draws[k++]["returns"];
  EXPECT_EQ(k, draws.size());
  return d;
}

at::Tensor chw_rgb(const AugmentedSample& s) {
  auto t = torch::empty({3, s.img.rows, s.img.cols}, torch::kUInt8);
  hwc_bgr_to_chw_rgb(s.img, t.data_ptr<uint8_t>());
  return t;
}

void check_chain(const GoldenDataset& gd, const std::string& key, const std::string& n, const AugmentOptions& o,
                 bool mosaic_applied) {
  const auto& c = gd.j[key];
  const SampleDraws d = draws_from_json(c["draws"], mosaic_applied);
  ChainTrace tr;
  const AugmentedSample s = train_transform(c["dataset_index"].get<int64_t>(), gd.source(), o, d, &tr);
  EXPECT_EQ(tr.mosaic_applied, mosaic_applied);
  if (!mosaic_applied) {
    EXPECT_ALL_CLOSE(to_tensor(tr.letterbox_img), gd.g.at("nm_letterbox_img"), 0, 0);
    EXPECT_ALL_CLOSE(boxes_tensor(tr.rp_boxes_in), gd.g.at("nm_rp_boxes_in"), 0, 0);
  }
  EXPECT_ALL_CLOSE(torch::from_blob(const_cast<float*>(tr.rp.M.data()), {3, 3}, torch::kFloat), gd.g.at(n + "_rp_M"),
                   0, 0);
  EXPECT_ALL_CLOSE(to_tensor(tr.rp.img), gd.g.at(n + "_rp_img"), 0, 0);
  EXPECT_ALL_CLOSE(boxes_tensor(tr.rp.boxes_warped), gd.g.at(n + "_rp_boxes_warped"), 0, 0);
  EXPECT_ALL_CLOSE(boxes_tensor(tr.rp.boxes_clipped), gd.g.at(n + "_rp_boxes_clipped"), 0, 0);
  EXPECT_TRUE(torch::equal(keep_tensor(tr.rp.keep), gd.g.at(n + "_rp_keep")));
  EXPECT_ALL_CLOSE(boxes_tensor(tr.rp.out.boxes), gd.g.at(n + "_rp_boxes_out"), 0, 0);
  EXPECT_ALL_CLOSE(boxes_tensor(tr.flip_boxes_xywh), gd.g.at(n + "_flip_boxes_xywh"), 0, 0);
  EXPECT_TRUE(s.rgb);
  EXPECT_ALL_CLOSE(chw_rgb(s), gd.g.at(n + "_out_img"), 0, 0);
  EXPECT_ALL_CLOSE(boxes_tensor(s.xywhn), gd.g.at(n + "_out_bboxes"), 0, 0);
  EXPECT_ALL_CLOSE(cls_tensor(s.cls), gd.g.at(n + "_out_cls"), 0, 0);
}
}  // namespace

TEST(TrainChain, MosaicChainMatchesGoldenWithFixedDraws) {
  GoldenDataset gd;
  AugmentOptions o;
  o.imgsz = 160;
  check_chain(gd, "d_train_chain", "chain", o, true);
}

TEST(TrainChain, CloseMosaicChainMatchesGoldenWithFixedDraws) {
  GoldenDataset gd;
  AugmentOptions o;
  o.imgsz = 160;
  o.mosaic = 0;  // what Loader::close_mosaic sets (with mixup = cutmix = 0)
  check_chain(gd, "d_close_mosaic_chain", "nm", o, false);
}

TEST(Draws, SameSeedEpochIndexGiveSameDrawsAndDifferentIndexDiffers) {
  AugmentOptions o;
  auto a = Rng::for_sample(7, 3, 11), b = Rng::for_sample(7, 3, 11), c = Rng::for_sample(7, 3, 12);
  const auto da = make_draws(a, o, 100), db = make_draws(b, o, 100), dc = make_draws(c, o, 100);
  EXPECT_EQ(da.pre.persp.s, db.pre.persp.s);
  EXPECT_EQ(da.hsv_u, db.hsv_u);
  EXPECT_NE(da.pre.persp.s, dc.pre.persp.s);
  // ranges follow the hyperparameters
  EXPECT_GE(da.pre.persp.s, 1 - o.scale);
  EXPECT_LT(da.pre.persp.s, 1 + o.scale);
  EXPECT_EQ(da.pre.persp.a, 0.0);  // degrees = 0 → uniform(−0, 0)
  EXPECT_GE(da.pre.yc, o.imgsz / 2.0);
  EXPECT_LT(da.pre.xc, 1.5 * o.imgsz);
}

TEST(Draws, BetaDrawHasExpectedMean) {
  Rng r(1);
  double sum = 0;
  for (int i = 0; i < 2000; ++i) sum += r.beta(32, 32);
  EXPECT_NEAR(sum / 2000, 0.5, 0.01);
}
