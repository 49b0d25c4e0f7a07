// yolo11-bench-amp: one whole training step of a YOLO11 model — forward (autocast or not), DetectionLoss (float32),
// backward, gradient clipping, AdamW step — in float32 and under autocast, interleaved in one run so both see the
// same machine load. Default: yolo11n, batch 8, imgsz 320, CPU (bfloat16 autocast); --cuda: float16 + GradScaler.
//   yolo11-bench-amp [--scale n] [--batch 8] [--imgsz 320] [--iters 5] [--warmup 2] [--threads 0] [--cuda]
// Prints mean/min seconds per step for each precision and the ratio autocast/float32 (figures: docs/recipe.md "AMP").
// Freed memory is kept for reuse as in yolo11-train (engine::tune_malloc; YOLO11_MALLOC_DEFAULTS=1 for glibc's).
#include <torch/torch.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "yolo11/core/compat.h"
#include "yolo11/engine/amp.h"
#include "yolo11/engine/fp_env.h"
#include "yolo11/engine/multi_tensor_optim.h"
#include "yolo11/loss/detection_loss.h"
#include "yolo11/model/yolo.h"
#include "model_bench_args.h"

using namespace yolo11;

namespace {

using Args = bench::ModelBenchArgs;

/// One model + optimizer + scaler trained in one precision.
struct Runner {
  model::YOLO net;
  loss::DetectionLoss criterion;
  std::unique_ptr<yolo11::engine::MultiTensorAdamW> opt;  // the trainer's AdamW
  engine::GradScaler scaler;
  bool autocast;
  c10::ScalarType dtype;

  Runner(const Args& a, const torch::Device& dev, bool autocast_, c10::ScalarType dtype_, bool use_scaler)
      : net(model::ModelOptions{"configs/models/yolo11.yaml", a.scale, 80, true}),
        criterion(80, net->strides(), net->reg_max()),
        scaler([&] {
          engine::GradScalerOptions o;
          o.enabled = use_scaler;
          return o;
        }()),
        autocast(autocast_),
        dtype(dtype_) {
    torch::manual_seed(0);
    net->to(dev);
    model::to_channels_last(*net);
    net->train();
    opt = std::make_unique<yolo11::engine::MultiTensorAdamW>(net->parameters(), torch::optim::AdamWOptions(1e-3));
  }

  void step(const torch::Tensor& x, const torch::Tensor& bi, const torch::Tensor& cls, const torch::Tensor& box) {
    std::vector<torch::Tensor> feats;
    {
      compat::AutocastGuard ac(x.device().type(), autocast, dtype);
      feats = net->forward_feats(x);
    }
    auto out = criterion(feats, bi, cls, box);
    scaler.scale(out.total).backward();
    const auto params = net->parameters();
    scaler.unscale_(params);
    yolo11::engine::clip_grad_norm(params, 10.0);  // as the trainer
    scaler.step(*opt);
    scaler.update();
    opt->zero_grad();
  }
};

}  // namespace

int main(int argc, char** argv) try {
  const Args a = bench::parse_model_bench_args(argc, argv, "yolo11-bench-amp: one training step, float32 vs autocast", Args{"n", 8, 320, 5, 2, 0, false});
  std::printf("%s\n", engine::tune_malloc().c_str());  // before the first tensor, as yolo11-train (engine/run.cpp)
  if (a.threads > 0) torch::set_num_threads(static_cast<int>(a.threads));
  const torch::Device dev = a.cuda && torch::cuda::is_available() ? torch::Device(torch::kCUDA) : torch::kCPU;
  const bool cuda = dev.is_cuda();
  const auto amp_dtype = cuda ? torch::kHalf : torch::kBFloat16;
  std::printf("yolo11%s train step (fwd + loss + bwd + clip + AdamW), batch %lld imgsz %lld on %s, %d intra-op "
              "threads, %lld timed iters after %lld warmup, cpu bf16 instructions: %s\n",
              a.scale.c_str(), static_cast<long long>(a.batch), static_cast<long long>(a.imgsz), dev.str().c_str(),
              torch::get_num_threads(), static_cast<long long>(a.iters), static_cast<long long>(a.warmup),
              engine::cpu_supports_bf16() ? "yes" : "no");

  torch::manual_seed(0);
  const auto x = torch::rand({a.batch, 3, a.imgsz, a.imgsz}, torch::TensorOptions().device(dev))
                     .contiguous(torch::MemoryFormat::ChannelsLast);
  // 4 boxes per image, normalized xywh inside the image.
  const int64_t n = 4 * a.batch;
  const auto bi = torch::arange(a.batch, torch::kLong).repeat_interleave(4);
  const auto cls = torch::randint(0, 80, {n}, torch::kLong);
  const auto xy = torch::rand({n, 2}) * 0.6 + 0.2;
  const auto wh = torch::rand({n, 2}) * 0.3 + 0.05;
  const auto box = torch::cat({xy, wh}, 1);

  Runner fp32(a, dev, false, torch::kFloat, false);
  Runner amp(a, dev, true, amp_dtype, cuda);
  auto timed = [&](Runner& r) {
    compat::synchronize();
    const auto t0 = std::chrono::steady_clock::now();
    r.step(x, bi, cls, box);
    compat::synchronize();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  for (int64_t i = 0; i < a.warmup; ++i) {
    timed(fp32);
    timed(amp);
  }
  double s32 = 0, samp = 0, m32 = 1e300, mamp = 1e300;
  for (int64_t i = 0; i < a.iters; ++i) {  // interleaved: both precisions see the same load
    const double t32 = timed(fp32), tamp = timed(amp);
    s32 += t32;
    samp += tamp;
    m32 = std::min(m32, t32);
    mamp = std::min(mamp, tamp);
  }
  s32 /= static_cast<double>(a.iters);
  samp /= static_cast<double>(a.iters);
  const char* name = cuda ? "float16 autocast + GradScaler" : "bfloat16 autocast";
  std::printf("%-32s mean %.3f s  min %.3f s  %.1f img/s\n", "float32", s32, m32, static_cast<double>(a.batch) / s32);
  std::printf("%-32s mean %.3f s  min %.3f s  %.1f img/s\n", name, samp, mamp, static_cast<double>(a.batch) / samp);
  std::printf("autocast / float32 step time: mean %.2f, min %.2f\n", samp / s32, mamp / m32);
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "yolo11-bench-amp: %s\n", e.what());
  return 1;
}
