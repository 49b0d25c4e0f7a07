// engine::Validator — Ultralytics DetectionValidator semantics: predictions and ground truth are compared in
// network-input (letterboxed) pixels; NMS multi-label; val losses are the mean of the per-batch loss items.
#include "yolo11/engine/validator.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "yolo11/core/compat.h"
#include "yolo11/engine/amp.h"
#include "yolo11/plot/data_plots.h"
#include "yolo11/engine/inference.h"
#include "yolo11/engine/val_outputs.h"
#include "yolo11/io/file.h"
#include "yolo11/metrics/nms.h"

namespace yolo11::engine {
namespace {
using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }
constexpr int64_t kPlotBatches = 3;  // val_batch0..2, as the reference
}  // namespace

Validator::Validator(std::shared_ptr<data::Loader> loader, std::vector<std::string> names, ValidatorOptions opt)
    : loader_(std::move(loader)), names_(std::move(names)), opt_(std::move(opt)) {}

ValResult Validator::run(model::YOLO& model, const loss::DetectionLoss* criterion, const torch::Device& device,
                         std::optional<bool> plots_override, std::optional<bool> verbose_override,
                         std::optional<c10::ScalarType> autocast) {
  torch::NoGradGuard no_grad;
  const bool was_training = model->is_training();
  model->eval();
  metrics::DetMetrics dm(names_);
  metrics::NmsOptions nms;
  nms.conf = opt_.conf;
  nms.iou = opt_.iou;
  nms.max_det = opt_.max_det;
  nms.multi_label = true;
  nms.agnostic = opt_.agnostic_nms;
  const bool plots = plots_override.value_or(opt_.plots) && !opt_.save_dir.empty();
  const bool save_json = opt_.save_json && !opt_.save_dir.empty();
  const bool save_txt = opt_.save_txt && !opt_.save_dir.empty();
  const std::vector<int64_t> class_map =
      opt_.class_map.empty() ? coco_class_map(false, static_cast<int64_t>(names_.size())) : opt_.class_map;
  nlohmann::json jdict = nlohmann::json::array();
  if (save_txt) std::filesystem::create_directories(opt_.save_dir + "/labels");

  ValResult r;
  if (autocast) r.precision = AmpPolicy{true, *autocast}.precision();
  torch::Tensor loss_sum = torch::zeros({3}, torch::kDouble);
  int64_t batches = 0, txt_files = 0;
  loader_->start_epoch(0);
  while (auto b = loader_->next()) {
    auto t0 = Clock::now();
    auto imgs = to_input(b->images, device, opt_.channels_last);
    if (opt_.half) imgs = imgs.to(torch::kHalf);
    const auto bidx = b->batch_idx.to(device);
    const auto bcls = b->cls.to(device);
    const auto bxywh = b->bboxes.to(device);
    r.ms_preprocess += ms_since(t0);

    if (opt_.warmup && batches == 0 && device.is_cuda()) {
      (void)model->forward_feats(imgs);
      compat::synchronize(device.index());
    }
    t0 = Clock::now();
    std::vector<torch::Tensor> feats;
    {
      compat::AutocastGuard ac(device.type(), autocast.has_value(), autocast.value_or(c10::ScalarType::Half));
      feats = model->forward_feats(imgs);
    }
    if (autocast)
      for (auto& f : feats) f = f.to(torch::kFloat);
    auto preds = opt_.augment ? predict_augment(model, imgs, &feats) : model->decode(feats);
    preds = preds.to(torch::kFloat);
    if (device.is_cuda()) preds.sum().item<float>();  // finish the GPU work inside "inference"
    r.ms_inference += ms_since(t0);

    if (criterion != nullptr) {
      t0 = Clock::now();
      loss_sum += (*criterion)(feats, bidx, bcls, bxywh).items.to(torch::kCPU, torch::kDouble);  // casts to float
      r.ms_loss += ms_since(t0);
    }

    t0 = Clock::now();
    const auto dets = metrics::non_max_suppression(preds, nms);
    const double H = static_cast<double>(imgs.size(2)), W = static_cast<double>(imgs.size(3));
    const auto scale = torch::tensor({W, H, W, H}, torch::kFloat);
    const auto cpu_idx = b->batch_idx.to(torch::kCPU);
    for (int64_t j = 0; j < b->size(); ++j) {
      const auto mask = cpu_idx == j;
      const auto gt_cls = b->cls.index({mask});
      const auto xywh = b->bboxes.index({mask}) * scale;
      const auto xy = xywh.slice(1, 0, 2), wh = xywh.slice(1, 2, 4);
      const auto gt_xyxy = torch::cat({xy - wh / 2, xy + wh / 2}, 1);
      const auto det = dets[static_cast<size_t>(j)].to(torch::kCPU);
      dm.update(det, gt_cls, gt_xyxy);
      r.instances += gt_cls.size(0);
      const auto ju = static_cast<size_t>(j);
      const std::array<int64_t, 2> ori = b->ori_shapes.at(ju);
      if (opt_.keep_images)
        r.per_image.push_back({b->im_files.at(ju), {imgs.size(2), imgs.size(3)}, ori, b->ratio_pad.at(ju), gt_cls,
                               gt_xyxy, det});
      if ((save_json || save_txt) && det.size(0) > 0) {  // the reference writes nothing for an image without boxes
        auto scaled = det.clone();
        scaled.slice(1, 0, 4).copy_(scale_boxes_to_original(det.slice(1, 0, 4), b->ratio_pad.at(ju), ori));
        if (save_json) append_coco_predictions(jdict, scaled, b->im_files.at(ju), class_map);
        if (save_txt) {
          ++txt_files;
          io::write_file_atomic(opt_.save_dir + "/labels/" + std::filesystem::path(b->im_files.at(ju)).stem().string() +
                                    ".txt",
                                yolo_txt_lines(scaled, ori, opt_.save_conf));
        }
      }
    }
    r.ms_postprocess += ms_since(t0);
    if (batches < kPlotBatches && plots) {
      const std::string stem = opt_.save_dir + "/val_batch" + std::to_string(batches);
      plot::plot_images(*b, names_, stem + "_labels.jpg");
      std::vector<at::Tensor> cpu_dets;
      for (const auto& d : dets) cpu_dets.push_back(d.to(torch::kCPU));
      plot::plot_images(*b, names_, stem + "_pred.jpg", &cpu_dets);
    }
    r.images += b->size();
    ++batches;
  }
  if (batches > 0) loss_sum /= static_cast<double>(batches);
  for (int k = 0; k < 3; ++k) r.loss_items[k] = loss_sum[k].item<double>();
  if (r.images > 0) {
    const double n = static_cast<double>(r.images);
    r.ms_preprocess /= n;
    r.ms_inference /= n;
    r.ms_loss /= n;
    r.ms_postprocess /= n;
  }
  r.metrics = dm.compute();
  r.table = dm.table(r.metrics);
  if (verbose_override.value_or(opt_.verbose)) {
    spdlog::info("{}", r.table);
  } else {  // the header and the "all" row only
    size_t end = r.table.find('\n');
    if (end != std::string::npos) end = r.table.find('\n', end + 1);
    spdlog::info("{}", r.table.substr(0, end));
  }
  spdlog::info("Speed: {:.1f}ms preprocess, {:.1f}ms inference, {:.1f}ms loss, {:.1f}ms postprocess per image",
               r.ms_preprocess, r.ms_inference, r.ms_loss, r.ms_postprocess);
  if (plots) {
    dm.save_confusion_matrix_png(opt_.save_dir + "/confusion_matrix.png");
    dm.save_confusion_matrix_png(opt_.save_dir + "/confusion_matrix_normalized.png", true);
    dm.save_confusion_matrix_csv(opt_.save_dir + "/confusion_matrix.csv");
    dm.save_curves(opt_.save_dir);
  }
  if (save_json) {
    const std::string path = opt_.save_dir + "/predictions.json";
    io::write_file_atomic(path, jdict.dump());
    spdlog::info("Saving {} ({} predictions)...", path, jdict.size());
  }
  if (save_txt)
    spdlog::info("{} label file{} in {}/labels (images without a prediction get none)", txt_files,
                 txt_files == 1 ? "" : "s", opt_.save_dir);
  if (was_training) model->train();
  return r;
}

}  // namespace yolo11::engine
