// yolo11-bench-input: what the trainer thread spends turning a collated batch into the network input (issue 15).
// uint8 → float32 / 255 → channels_last (engine::to_input on the trainer thread, the old CPU path) against a batch the
// loader workers already converted (data::InputFormat::float_channels_last: engine::Preprocess only moves it), at
// batch 16, 640.
//   yolo11-bench-input [--benchmark_repetitions=5]
#include <benchmark/benchmark.h>
#include <torch/torch.h>

#include "yolo11/engine/inference.h"
#include "yolo11/engine/preprocess.h"

namespace {

void BM_ToInputFromUint8(benchmark::State& st) {
  torch::set_num_threads(static_cast<int>(st.range(1)));
  const auto u8 = torch::randint(0, 256, {st.range(0), 3, 640, 640}, torch::kUInt8);
  for (auto _ : st) benchmark::DoNotOptimize(yolo11::engine::to_input(u8, torch::kCPU));
  st.SetItemsProcessed(st.iterations() * st.range(0));
}
void BM_ToInputFromWorkerFloat(benchmark::State& st) {
  torch::set_num_threads(static_cast<int>(st.range(1)));
  const auto f = torch::randint(0, 256, {st.range(0), 3, 640, 640}, torch::kUInt8)
                     .to(torch::kFloat)
                     .div_(255.0)
                     .contiguous(torch::MemoryFormat::ChannelsLast);
  const yolo11::engine::Preprocess pre({.format = yolo11::data::InputFormat::float_channels_last});
  for (auto _ : st) benchmark::DoNotOptimize(pre(f, 0, 0));
  st.SetItemsProcessed(st.iterations() * st.range(0));
}
BENCHMARK(BM_ToInputFromUint8)->Args({16, 2})->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ToInputFromWorkerFloat)->Args({16, 2})->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
