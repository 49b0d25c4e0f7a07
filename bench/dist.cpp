// Cost of the DDP collectives alone (no training, no waiting for a slower rank: a barrier precedes every timed call).
//   tools/launch_dist.sh 2 build/bench/yolo11-bench-dist [numel=2590409] [iters=20]
// Times all_reduce_gradients over one trainable parameter of `numel` float32 (yolo11n: 2,590,409 → 10.4 MB, one
// 25 MiB bucket) and a broadcast of the same size; rank 0 prints the median and p90 in ms.
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "yolo11/dist/dist.h"

namespace {

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

void report(const char* what, std::vector<double> v, int64_t bytes, int rank) {
  std::sort(v.begin(), v.end());
  if (rank != 0) return;
  const double med = v[v.size() / 2], p90 = v[std::min(v.size() - 1, v.size() * 9 / 10)];
  std::printf("%-22s %8.2f MB  median %7.2f ms  p90 %7.2f ms  (%zu calls)\n", what, static_cast<double>(bytes) / 1e6,
              med, p90, v.size());
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const int64_t numel = argc > 1 ? std::atoll(argv[1]) : 2590409;
    const int iters = argc > 2 ? std::atoi(argv[2]) : 20;
    torch::set_num_threads(1);
    const auto env = yolo11::dist::from_env();
    if (!env.distributed()) {
      std::fprintf(stderr, "run under tools/launch_dist.sh N (WORLD_SIZE > 1)\n");
      return 2;
    }
    yolo11::dist::ProcessGroup pg(env);
    auto p = torch::zeros({numel}).set_requires_grad(true);
    p.mutable_grad() = torch::full({numel}, static_cast<float>(env.rank + 1));
    std::vector<double> ar, bc;
    for (int i = 0; i < iters + 2; ++i) {
      pg.barrier();
      auto t0 = std::chrono::steady_clock::now();
      pg.all_reduce_gradients({p}, /*average=*/false);
      const double a = ms_since(t0);
      pg.barrier();
      t0 = std::chrono::steady_clock::now();
      pg.broadcast({p.grad()}, 0);
      const double b = ms_since(t0);
      if (i >= 2) {  // first two: warm-up (connections, allocations)
        ar.push_back(a);
        bc.push_back(b);
      }
    }
    const int64_t bytes = numel * 4;
    report("all_reduce_gradients", ar, bytes, env.rank);
    report("broadcast", bc, bytes, env.rank);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
}
