// yolo11-bench-model: forward+backward time of a YOLO11 model (default yolo11n, batch 8, 640) on the current
// device, NCHW vs channels_last, and eval forward fused vs unfused. A plain main (few iterations, long steps):
//   yolo11-bench-model [--scale n] [--batch 8] [--imgsz 640] [--iters 3] [--warmup 1] [--threads 0] [--cuda]
//                      [--profile DIR] [--amp]
// --amp: every forward (and the training steps' loss) under autocast (CPU bfloat16, CUDA float16; no loss scaling,
// the raw step), as tools/reference/model_step.py --amp does for the reference's model. Prints one line per
// configuration (mean and min seconds per iteration, images/s). Figures go to docs/model.md.
// Freed memory is kept for reuse (engine::tune_malloc, as yolo11-train does) and the line saying so is printed first;
// YOLO11_MALLOC_DEFAULTS=1 times the step with glibc's defaults instead (docs/benchmarks.md has both).
// --profile: one more training step per layout under LibTorch's profiler (instrument::OpsProfiler), its operators
// under the `forward` and `backward` scopes, written to DIR/nchw and DIR/channels_last (ops.txt, ops.csv), to set
// beside torch.profiler's table of the reference's model on the same input (docs/benchmarks.md, issue 31).
#include <torch/torch.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "yolo11/core/compat.h"
#include "yolo11/engine/amp.h"
#include "yolo11/engine/fp_env.h"
#include "yolo11/instrument/ops_profile.h"
#include "yolo11/instrument/stages.h"
#include "yolo11/model/yolo.h"
#include "model_bench_args.h"

using namespace yolo11;

namespace {

using Args = bench::ModelBenchArgs;

void sync(const torch::Device& d) {
  if (d.is_cuda()) torch::cuda::synchronize();
}

struct Stat {
  double mean = 0, min = 1e300;
};

template <typename F>
Stat time_it(const Args& a, const torch::Device& dev, F&& step) {
  for (int64_t i = 0; i < a.warmup; ++i) step();
  sync(dev);
  Stat s;
  for (int64_t i = 0; i < a.iters; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    step();
    sync(dev);
    const double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    s.mean += dt / static_cast<double>(a.iters);
    s.min = std::min(s.min, dt);
  }
  return s;
}

void report(const char* name, const Args& a, const Stat& s) {
  std::printf("%-36s mean %.3f s  min %.3f s  %.1f img/s\n", name, s.mean, s.min,
              static_cast<double>(a.batch) / s.mean);
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) try {
  const Args a = bench::parse_model_bench_args(argc, argv, "yolo11-bench-model: forward/backward, layouts, fusion",
                                               Args{"n", 8, 640, 3, 1, 0, false}, /*amp_flag=*/true);
  std::printf("%s\n", engine::tune_malloc().c_str());  // before the first tensor, as yolo11-train (engine/run.cpp)
  const c10::ScalarType amp_dtype = a.cuda ? c10::ScalarType::Half : c10::ScalarType::BFloat16;
  if (a.threads > 0) torch::set_num_threads(static_cast<int>(a.threads));
  const torch::Device dev = a.cuda && torch::cuda::is_available() ? torch::Device(torch::kCUDA) : torch::kCPU;
  std::printf("yolo11%s batch %lld imgsz %lld on %s, %d intra-op threads, %lld timed iters after %lld warmup, %s\n",
              a.scale.c_str(), static_cast<long long>(a.batch), static_cast<long long>(a.imgsz), dev.str().c_str(),
              torch::get_num_threads(), static_cast<long long>(a.iters), static_cast<long long>(a.warmup),
              a.amp ? (engine::AmpPolicy{true, amp_dtype}.precision() + " autocast").c_str() : "float32");
  torch::manual_seed(0);
  const auto x = torch::rand({a.batch, 3, a.imgsz, a.imgsz}, torch::TensorOptions().device(dev));

  for (const bool channels_last : {false, true}) {
    model::YOLO m(model::ModelOptions{"configs/models/yolo11.yaml", a.scale, 80, true});
    m->to(dev);
    if (channels_last) model::to_channels_last(*m);
    m->train();
    const auto in = channels_last ? x.contiguous(torch::MemoryFormat::ChannelsLast) : x;
    instrument::OpsProfiler* prof = nullptr;
    const auto step = [&] {
      m->zero_grad();
      if (prof) prof->push(instrument::stage_name(instrument::StepStage::forward));
      torch::Tensor loss;
      {
        compat::AutocastGuard ac(dev.type(), a.amp, amp_dtype);
        const auto feats = m->forward_feats(in);
        loss = feats[0].to(torch::kFloat).square().mean() + feats[1].to(torch::kFloat).square().mean() +
               feats[2].to(torch::kFloat).square().mean();
      }
      if (prof) {
        prof->pop();
        prof->push(instrument::stage_name(instrument::StepStage::backward));
      }
      loss.backward();
      if (prof) prof->pop();
    };
    const auto s = time_it(a, dev, step);
    report(channels_last ? "train fwd+bwd, channels_last" : "train fwd+bwd, NCHW", a, s);
    if (!a.profile.empty()) {
      const auto dir = a.profile + (channels_last ? "/channels_last" : "/nchw");
      std::filesystem::create_directories(dir);
      instrument::OpsProfileOptions po;
      po.start = 0;
      po.stop = 1;
      po.run_dir = dir;
      instrument::OpsProfiler p(po);
      prof = &p;
      p.begin_step(0);
      const auto t0 = std::chrono::steady_clock::now();
      step();
      sync(dev);
      // the window's last step: aggregates and writes ops.txt / ops.csv
      p.end_step(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      prof = nullptr;
      std::printf("  operator profile of one step: %s/ops.txt\n", dir.c_str());
    }
  }

  model::YOLO m(model::ModelOptions{"configs/models/yolo11.yaml", a.scale, 80, true});
  m->to(dev);
  m->eval();
  torch::NoGradGuard no_grad;
  compat::AutocastGuard ac(dev.type(), a.amp, amp_dtype);
  report("eval forward, unfused, NCHW", a, time_it(a, dev, [&] { m->forward(x); }));
  m->fuse();
  report("eval forward, fused, NCHW", a, time_it(a, dev, [&] { m->forward(x); }));
  model::to_channels_last(*m);
  const auto xl = x.contiguous(torch::MemoryFormat::ChannelsLast);
  report("eval forward, fused, channels_last", a, time_it(a, dev, [&] { m->forward(xl); }));
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "yolo11-bench-model: %s\n", e.what());
  return 1;
}
