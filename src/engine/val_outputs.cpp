#include "yolo11/engine/val_outputs.h"

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

namespace yolo11::engine {
namespace {
/// Python's round(x, digits): the correctly rounded decimal of x's exact binary value, read back as a double.
double round_decimals(double x, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, x);
  return std::strtod(buf, nullptr);
}
}  // namespace

at::Tensor scale_boxes_to_original(const at::Tensor& xyxy, const std::array<double, 4>& ratio_pad,
                                   std::array<int64_t, 2> ori_hw) {
  auto b = xyxy.to(at::kCPU, at::kFloat).clone();
  if (b.numel() == 0) return b;
  const float pad_w = static_cast<float>(ratio_pad[2]), pad_h = static_cast<float>(ratio_pad[3]);
  b.select(1, 0).sub_(pad_w);
  b.select(1, 2).sub_(pad_w);
  b.select(1, 1).sub_(pad_h);
  b.select(1, 3).sub_(pad_h);
  b.div_(ratio_pad[0]);
  b.select(1, 0).clamp_(0, static_cast<double>(ori_hw[1]));
  b.select(1, 2).clamp_(0, static_cast<double>(ori_hw[1]));
  b.select(1, 1).clamp_(0, static_cast<double>(ori_hw[0]));
  b.select(1, 3).clamp_(0, static_cast<double>(ori_hw[0]));
  return b;
}

bool is_coco_split(const std::string& source) {
  const auto name = std::filesystem::path(source).filename().string();
  return source.find("coco") != std::string::npos && (name == "val2017.txt" || name == "test-dev2017.txt");
}

std::vector<int64_t> coco_class_map(bool coco, int64_t nc) {
  std::vector<int64_t> m;
  if (coco) {
    // COCO's category ids 1..90 without the 10 ids its detection split leaves unused.
    const int64_t unused[] = {12, 26, 29, 30, 45, 66, 68, 69, 71, 83};
    for (int64_t id = 1; id <= 90; ++id)
      if (std::find(std::begin(unused), std::end(unused), id) == std::end(unused)) m.push_back(id);
    return m;
  }
  for (int64_t c = 0; c < nc; ++c) m.push_back(c + 1);
  return m;
}

void append_coco_predictions(nlohmann::json& out, const at::Tensor& pred_original, const std::string& im_file,
                             const std::vector<int64_t>& class_map) {
  const std::filesystem::path path(im_file);
  const std::string stem = path.stem().string();
  const bool numeric =
      !stem.empty() && std::all_of(stem.begin(), stem.end(), [](char c) { return c >= '0' && c <= '9'; });
  nlohmann::json image_id = numeric ? nlohmann::json(std::stoll(stem)) : nlohmann::json(stem);
  const auto p = pred_original.to(at::kCPU, at::kFloat).contiguous();
  const auto a = p.accessor<float, 2>();
  for (int64_t i = 0; i < p.size(0); ++i) {
    // float32 as the reference's tensors: xyxy → xywh, then the centre moved to the top-left corner
    const float w = a[i][2] - a[i][0], h = a[i][3] - a[i][1];
    const float cx = (a[i][0] + a[i][2]) / 2, cy = (a[i][1] + a[i][3]) / 2;
    const float x = cx - w / 2, y = cy - h / 2;
    const auto cls = static_cast<size_t>(a[i][5]);
    out.push_back({{"image_id", image_id},
                   {"file_name", path.filename().string()},
                   {"category_id", class_map.at(cls)},
                   {"bbox", {round_decimals(x, 3), round_decimals(y, 3), round_decimals(w, 3), round_decimals(h, 3)}},
                   {"score", round_decimals(a[i][4], 5)}});
  }
}

std::string yolo_txt_lines(const at::Tensor& pred_original, std::array<int64_t, 2> ori_hw, bool save_conf) {
  const auto p = pred_original.to(at::kCPU, at::kFloat).contiguous();
  const auto a = p.accessor<float, 2>();
  const float W = static_cast<float>(ori_hw[1]), H = static_cast<float>(ori_hw[0]);
  std::string s;
  char buf[160];
  for (int64_t i = 0; i < p.size(0); ++i) {
    const float cx = (a[i][0] + a[i][2]) / 2 / W, cy = (a[i][1] + a[i][3]) / 2 / H;
    const float w = (a[i][2] - a[i][0]) / W, h = (a[i][3] - a[i][1]) / H;
    int n = std::snprintf(buf, sizeof buf, "%d %g %g %g %g", static_cast<int>(a[i][5]), cx, cy, w, h);
    if (save_conf) n += std::snprintf(buf + n, sizeof buf - static_cast<size_t>(n), " %g", a[i][4]);
    s.append(buf, static_cast<size_t>(n));
    s += '\n';
  }
  return s;
}

}  // namespace yolo11::engine
