#pragma once
// The files `yolo11 val` writes besides its metrics, in the reference validator's formats: COCO-style
// predictions.json (save_json) and YOLO label files (save_txt / save_conf).
#include <ATen/Tensor.h>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace yolo11::engine {

/// Boxes (n, 4) xyxy in letterboxed network-input pixels → original-image pixels as the reference's scale_boxes
/// with a ratio_pad: minus the padding (ratio_pad[2] = pad_w, [3] = pad_h), divided by ratio_pad[0] (the height
/// gain), clipped to ori_hw (h, w). float32 in, float32 out (a new tensor).
at::Tensor scale_boxes_to_original(const at::Tensor& xyxy, const std::array<double, 4>& ratio_pad,
                                   std::array<int64_t, 2> ori_hw);

/// True when `source` is COCO's own val2017.txt or test-dev2017.txt list (the reference then maps the 80 class
/// ids onto COCO's 91 category ids in predictions.json).
bool is_coco_split(const std::string& source);

/// category_id per class id: COCO's 91-id list (80 entries) when `coco`, else 1..nc.
std::vector<int64_t> coco_class_map(bool coco, int64_t nc);

/// Appends one COCO result per row of `pred_original` ((n, 6) [x1, y1, x2, y2, conf, cls], original-image pixels)
/// to `out` (a JSON array): image_id (the file stem as an integer when it is all digits, else the stem),
/// file_name, category_id = class_map[cls], bbox [x, y, w, h] rounded to 3 decimals, score rounded to 5, as the
/// reference's pred_to_json. Throws std::out_of_range for a class outside class_map.
void append_coco_predictions(nlohmann::json& out, const at::Tensor& pred_original, const std::string& im_file,
                             const std::vector<int64_t>& class_map);

/// save_txt lines of one image: "cls cx cy w h[ conf]" per row of `pred_original` (original-image pixels), the
/// box normalized by ori_hw (h, w) in float32, numbers as printf %g, as the reference's Results.save_txt.
std::string yolo_txt_lines(const at::Tensor& pred_original, std::array<int64_t, 2> ori_hw, bool save_conf);

}  // namespace yolo11::engine
