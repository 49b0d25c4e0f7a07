// DDP gradient all-reduce overlapped with backward vs after it (issue 17), yolo11n at imgsz 160, no data loading:
//   tools/launch_dist.sh 2 build/bench/yolo11-bench-ddp_overlap [iters=10] [batch=8] [imgsz=160] [bucket_mb=25]
// Per iteration (a barrier first, so a slower rank's skew is not timed): forward, backward, then either the
// blocking all_reduce_gradients (overlap off) or GradReducer::finish (overlap on, buckets started during backward).
// Rank 0 prints, per mode, the median backward time, the median exposed communication (the time after backward
// until the gradients are reduced) and the median step; the two modes alternate so both see the same load.
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "yolo11/dist/dist.h"
#include "yolo11/dist/reducer.h"
#include "yolo11/model/yolo.h"

namespace {
using Clock = std::chrono::steady_clock;
double s_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }
double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}
}  // namespace

int main(int argc, char** argv) try {
  const int iters = argc > 1 ? std::atoi(argv[1]) : 10;
  const int64_t batch = argc > 2 ? std::atoll(argv[2]) : 8, imgsz = argc > 3 ? std::atoll(argv[3]) : 160;
  const double bucket_mb = argc > 4 ? std::atof(argv[4]) : 25;
  torch::set_num_threads(1);
  const auto env = yolo11::dist::from_env();
  if (!env.distributed()) {
    std::fprintf(stderr, "run under tools/launch_dist.sh N (WORLD_SIZE > 1)\n");
    return 2;
  }
  yolo11::dist::ProcessGroup pg(env);
  torch::manual_seed(0);
  yolo11::model::YOLO net(yolo11::model::ModelOptions{"configs/models/yolo11.yaml", "n", 80, true});
  yolo11::model::to_channels_last(*net);
  pg.broadcast_parameters(*net, 0);
  yolo11::dist::GradReducer red(pg, net->parameters(), static_cast<int64_t>(bucket_mb * 1024 * 1024));
  const auto x = torch::rand({batch, 3, imgsz, imgsz}).contiguous(torch::MemoryFormat::ChannelsLast);
  std::vector<double> bwd[2], exposed[2], step[2];
  for (int it = 0; it < 2 * iters + 2; ++it) {
    const int mode = it % 2;  // 0: blocking reduce after backward, 1: overlapped
    for (auto& p : net->parameters())
      if (p.grad().defined()) p.mutable_grad().zero_();
    pg.barrier();
    const auto t0 = Clock::now();
    auto feats = net->forward_feats(x);
    torch::Tensor loss = torch::zeros({});
    for (auto& f : feats) loss = loss + f.to(torch::kFloat).square().mean();
    if (mode == 1) red.arm();
    const auto tb = Clock::now();
    loss.backward();
    const double b = s_since(tb);
    const auto te = Clock::now();
    if (mode == 1) red.finish(/*average=*/false);
    else pg.all_reduce_gradients(net->parameters(), /*average=*/false);
    const double e = s_since(te), s = s_since(t0);
    if (it >= 2) {  // the first of each mode warms up
      bwd[mode].push_back(b);
      exposed[mode].push_back(e);
      step[mode].push_back(s);
    }
  }
  if (env.rank == 0) {
    std::printf("yolo11n, imgsz %lld, batch %lld per rank, %d ranks, %d buckets of <= %.0f MiB, %d iterations per mode\n",
                static_cast<long long>(imgsz), static_cast<long long>(batch), pg.world(),
                static_cast<int>(red.num_buckets()), bucket_mb, iters);
    std::printf("| mode | backward ms | exposed all-reduce ms | step ms |\n|---|---|---|---|\n");
    const char* names[2] = {"after backward (ddp_overlap=false)", "overlapped (ddp_overlap=true)"};
    for (int m = 0; m < 2; ++m)
      std::printf("| %s | %.1f | %.1f | %.1f |\n", names[m], median(bwd[m]) * 1e3, median(exposed[m]) * 1e3,
                  median(step[m]) * 1e3);
  }
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "yolo11-bench-ddp_overlap: %s\n", e.what());
  return 1;
}
