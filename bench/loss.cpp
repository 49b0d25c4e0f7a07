// Benchmark: TaskAlignedAssigner + DetectionLoss cost for one training batch, as a fraction of the yolo11n
// forward + backward of the same batch, and the sparse (candidate pairs) vs dense (B×M×A) assigner, interleaved.
//
//   yolo11-bench-loss [--batch 16] [--imgsz 640] [--iters 5] [--model-iters 2] [--no-model] [--device cpu|cuda]
//                     [--targets mosaic|labels|dense1000] [--dataset <coco128 root>] [--labels <dir>]
//                     [--yaml configs/models/yolo11.yaml]
//
// Targets: `mosaic` (default) = batch 0 of the real training chain on coco128 (mosaic + perspective, 200–300
// instances per batch of 16); `labels` = the first `batch` label files as they are (≈7 boxes/image); `dense1000`
// = image 0 holds 1,000 boxes (8–64 px, a crowd), the others are the mosaic batch's.
// Prints median wall times (ms) of: the assigner sparse vs dense, loss forward (assigner + loss), loss forward +
// backward to the feature maps (sparse and dense), model forward + backward (with the loss), and the loss share.
#include <torch/csrc/autograd/profiler_legacy.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "yolo11/data/loader.h"
#include "yolo11/loss/detection_loss.h"
#include "yolo11/model/yolo.h"

namespace fs = std::filesystem;
using yolo11::loss::DetectionLoss;

namespace {

struct Targets {
  at::Tensor batch_idx, cls, bboxes;
};

Targets load_labels(const std::string& dir, int64_t batch) {
  std::vector<std::string> files;
  if (fs::is_directory(dir))
    for (const auto& e : fs::directory_iterator(dir))
      if (e.path().extension() == ".txt") files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  std::vector<int64_t> bi, cl;
  std::vector<float> bx;
  for (int64_t b = 0; b < batch; ++b) {
    if (files.empty()) {  // no dataset: 7 random boxes per image
      auto r = torch::rand({7, 4});
      for (int i = 0; i < 7; ++i) {
        bi.push_back(b), cl.push_back(static_cast<int64_t>(i * 11 % 80));
        const float w = 0.05f + 0.4f * r[i][2].item<float>(), h = 0.05f + 0.4f * r[i][3].item<float>();
        bx.insert(bx.end(), {0.25f + 0.5f * r[i][0].item<float>(), 0.25f + 0.5f * r[i][1].item<float>(), w, h});
      }
      continue;
    }
    std::ifstream in(files[b % files.size()]);
    int64_t c;
    float x, y, w, h;
    while (in >> c >> x >> y >> w >> h) bi.push_back(b), cl.push_back(c), bx.insert(bx.end(), {x, y, w, h});
  }
  const auto n = static_cast<int64_t>(bi.size());
  return {torch::tensor(bi, torch::kLong), torch::tensor(cl, torch::kLong), torch::tensor(bx).view({n, 4})};
}

// Batch 0 (epoch 0, seed 0) of the training chain at imgsz on the dataset at `root` (its train2017 images).
Targets mosaic_batch(const std::string& root, int64_t batch, int64_t imgsz) {
  namespace d = yolo11::data;
  d::DatasetInfo info;
  info.root = root;
  info.nc = 80;
  d::DatasetOptions dopt;
  dopt.imgsz = imgsz;
  dopt.batch = batch;
  auto ds = std::make_shared<d::Dataset>(std::vector<std::string>{root + "/images/train2017"}, info, dopt);
  d::AugmentOptions aug;
  aug.imgsz = imgsz;
  d::Loader l(ds, aug, d::LoaderOptions{.batch = batch, .workers = 0, .seed = 0, .prefetch = 1});
  l.start_epoch(0);
  auto b = l.next();
  if (!b) throw std::runtime_error("no batch from " + root);
  return {b->batch_idx, b->cls, b->bboxes};
}

// Image 0's targets replaced by 1,000 boxes of 8–64 px spread over the image (seeded).
Targets with_dense_image(const Targets& t) {
  torch::manual_seed(1000);
  const int64_t n = 1000;
  auto wh = torch::rand({n, 2}) * (56.0 / 640) + 8.0 / 640;
  auto xy = wh / 2 + torch::rand({n, 2}) * (1 - wh);
  auto keep = t.batch_idx != 0;
  return {torch::cat({torch::zeros({n}, torch::kLong), t.batch_idx.index({keep})}),
          torch::cat({torch::randint(80, {n}, torch::kLong), t.cls.index({keep})}),
          torch::cat({torch::cat({xy, wh}, 1), t.bboxes.index({keep})})};
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

template <class F>
std::vector<double> time_ms(int iters, const at::Device& dev, F&& f) {
  std::vector<double> out;
  for (int i = 0; i < iters; ++i) {
    if (dev.is_cuda()) torch::cuda::synchronize();
    const auto t0 = std::chrono::steady_clock::now();
    f();
    if (dev.is_cuda()) torch::cuda::synchronize();
    out.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  int64_t batch = 16, imgsz = 640;
  int iters = 5, model_iters = 2;
  bool with_model = true;
  std::string profile;  // --profile <trace.json>: legacy autograd profiler trace of one loss fwd+bwd
  std::string targets = "mosaic", dataset = "../shared/datasets/coco128";
  std::string device = "cpu", labels = "../shared/datasets/coco128/labels/train2017",
              yaml = "configs/models/yolo11.yaml";
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) throw std::runtime_error("missing value after " + a);
      return argv[++i];
    };
    if (a == "--batch")
      batch = std::stoll(next());
    else if (a == "--imgsz")
      imgsz = std::stoll(next());
    else if (a == "--iters")
      iters = std::stoi(next());
    else if (a == "--model-iters")
      model_iters = std::stoi(next());
    else if (a == "--no-model")
      with_model = false;
    else if (a == "--device")
      device = next();
    else if (a == "--targets")
      targets = next();
    else if (a == "--dataset")
      dataset = next();
    else if (a == "--labels")
      labels = next();
    else if (a == "--yaml")
      yaml = next();
    else if (a == "--profile")
      profile = next();
    else {
      std::cerr << "unknown argument " << a << "\n";
      return 2;
    }
  }
  const at::Device dev(device);
  torch::manual_seed(0);
  if (targets != "mosaic" && targets != "labels" && targets != "dense1000") {
    std::cerr << "--targets must be mosaic, labels or dense1000\n";
    return 2;
  }
  auto t = targets == "labels" ? load_labels(labels, batch) : mosaic_batch(dataset, batch, imgsz);
  if (targets == "dense1000") t = with_dense_image(t);
  std::printf("targets %s, batch %lld, imgsz %lld, %lld targets (%.1f / image), device %s, %d threads\n",
              targets.c_str(), static_cast<long long>(batch), static_cast<long long>(imgsz),
              static_cast<long long>(t.cls.numel()),
              static_cast<double>(t.cls.numel()) / batch, device.c_str(), at::get_num_threads());

  DetectionLoss crit(80);
  std::vector<at::Tensor> feats;
  for (int64_t s : {8, 16, 32})
    feats.push_back((torch::randn({batch, 64 + 80, imgsz / s, imgsz / s}) * 2 - 1).to(dev).requires_grad_(true));
  // Warm-up (also captures the assigner inputs), then timed.
  DetectionLoss::Diagnostics diag;
  crit(feats, t.batch_idx, t.cls, t.bboxes, &diag).total.backward();
  std::printf("max boxes in one image (M)          : %9lld\n", static_cast<long long>(diag.targets.gt_bboxes.size(1)));
  {
    yolo11::loss::TaskAlignedAssigner tal(10, 80);
    std::vector<at::Tensor> f0;
    for (auto& f : feats) f0.push_back(f.detach());
    auto [anc, st] = yolo11::loss::make_anchors(f0, {8, 16, 32});
    auto scores = torch::cat({f0[0].flatten(2), f0[1].flatten(2), f0[2].flatten(2)}, 2)
                      .narrow(1, 64, 80)
                      .transpose(1, 2)
                      .sigmoid()
                      .contiguous();
    yolo11::loss::TaskAlignedAssigner tal_dense(10, 80);
    tal.set_dense(false);
    tal_dense.set_dense(true);
    std::vector<double> ts, td;  // interleaved
    for (int i = 0; i < iters; ++i) {
      ts.push_back(time_ms(1, dev, [&] {
        tal(scores, diag.pd_bboxes, anc * st, diag.targets.gt_labels, diag.targets.gt_bboxes, diag.targets.mask_gt);
      })[0]);
      td.push_back(time_ms(1, dev, [&] {
        tal_dense(scores, diag.pd_bboxes, anc * st, diag.targets.gt_labels, diag.targets.gt_bboxes,
                  diag.targets.mask_gt);
      })[0]);
    }
    std::printf("assigner alone, sparse              : %9.2f ms\n", median(ts));
    std::printf("assigner alone, dense (reference)   : %9.2f ms  (dense / sparse %.1fx)\n", median(td),
                median(td) / median(ts));
    DetectionLoss crit_dense(80);
    crit_dense.set_dense(true);
    std::vector<double> ls, ld;
    for (int i = 0; i < iters; ++i) {
      ls.push_back(time_ms(1, dev, [&] {
        for (auto& f : feats) f.mutable_grad().reset();
        crit(feats, t.batch_idx, t.cls, t.bboxes).total.backward();
      })[0]);
      ld.push_back(time_ms(1, dev, [&] {
        for (auto& f : feats) f.mutable_grad().reset();
        crit_dense(feats, t.batch_idx, t.cls, t.bboxes).total.backward();
      })[0]);
    }
    std::printf("loss fwd+bwd, sparse                : %9.2f ms\n", median(ls));
    std::printf("loss fwd+bwd, dense (reference)     : %9.2f ms  (dense / sparse %.1fx)\n", median(ld),
                median(ld) / median(ls));
  }
  const auto fwd = time_ms(iters, dev, [&] {
    torch::NoGradGuard ng;
    crit(feats, t.batch_idx, t.cls, t.bboxes);
  });
  const auto fwdbwd = time_ms(iters, dev, [&] {
    for (auto& f : feats) f.mutable_grad().reset();  // as in training: the gradient flows on, nothing accumulates
    crit(feats, t.batch_idx, t.cls, t.bboxes).total.backward();
  });
  std::printf("loss forward (assigner + loss)      : %9.2f ms (median of %d)\n", median(fwd), iters);
  std::printf("loss forward + backward             : %9.2f ms\n", median(fwdbwd));
  if (!profile.empty()) {
    for (auto& f : feats) f.mutable_grad().reset();
    torch::autograd::profiler::RecordProfile guard(profile);
    crit(feats, t.batch_idx, t.cls, t.bboxes).total.backward();
  }

  if (with_model) {
    yolo11::model::ModelOptions mo;
    mo.yaml = yaml;
    yolo11::model::YOLO model(mo);
    model->to(dev);
    model->train();
    auto img = torch::rand({batch, 3, imgsz, imgsz}).to(dev);
    auto step = [&] {
      auto f = model->forward_feats(img);
      crit(f, t.batch_idx, t.cls, t.bboxes).total.backward();
      model->zero_grad();
    };
    step();
    // Interleave model steps and loss-only runs so both see the same machine load.
    std::vector<double> full, loss_only;
    for (int i = 0; i < model_iters; ++i) {
      full.push_back(time_ms(1, dev, step)[0]);
      loss_only.push_back(time_ms(1, dev, [&] {
        for (auto& f : feats) f.mutable_grad().reset();
        crit(feats, t.batch_idx, t.cls, t.bboxes).total.backward();
      })[0]);
    }
    const double share = median(loss_only) / median(full);
    std::printf("yolo11n forward + loss + backward   : %9.2f ms (median of %d)\n", median(full), model_iters);
    std::printf("loss fwd+bwd, interleaved           : %9.2f ms\n", median(loss_only));
    std::printf("loss (fwd+bwd) share of the step    : %9.2f %%\n", 100 * share);
  }
  return 0;
}
