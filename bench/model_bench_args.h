#pragma once
// Command line shared by the benchmarks that time a YOLO11 model step (yolo11-bench-model, yolo11-bench-amp):
//   [--scale n] [--batch B] [--imgsz S] [--iters N] [--warmup N] [--threads N (0 = all cores)] [--cuda]
//   [--profile DIR] (yolo11-bench-model: one more step per layout under LibTorch's profiler, ops.txt/ops.csv in DIR)
//   [--amp] (yolo11-bench-model: forward and loss under autocast, bfloat16 on the CPU and float16 on CUDA)
#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>

namespace yolo11::bench {

struct ModelBenchArgs {
  std::string scale = "n";
  int64_t batch = 8, imgsz = 640, iters = 3, warmup = 1, threads = 0;
  bool cuda = false;
  std::string profile;  ///< directory for an operator profile of one step per layout; empty = none
  bool amp = false;     ///< forward and loss under autocast (CPU bfloat16, CUDA float16), as the trainer's amp=true
};

/// Parses argv over `defaults`; prints help and exits on --help or a bad option (CLI11's behaviour). `amp_flag`
/// offers --amp (a benchmark that times both precisions itself, yolo11-bench-amp, leaves it out).
inline ModelBenchArgs parse_model_bench_args(int argc, char** argv, const std::string& what, ModelBenchArgs defaults,
                                             bool amp_flag = false) {
  ModelBenchArgs a = defaults;
  CLI::App app{what};
  app.add_option("--scale", a.scale, "model scale n/s/m/l/x")->capture_default_str();
  app.add_option("--batch", a.batch, "images per step")->capture_default_str();
  app.add_option("--imgsz", a.imgsz, "square input size in pixels")->capture_default_str();
  app.add_option("--iters", a.iters, "timed iterations")->capture_default_str();
  app.add_option("--warmup", a.warmup, "untimed iterations first")->capture_default_str();
  app.add_option("--threads", a.threads, "intra-op threads (0 = all cores)")->capture_default_str();
  app.add_flag("--cuda", a.cuda, "run on the first CUDA device");
  app.add_option("--profile", a.profile, "after timing, profile one step per layout into DIR/<layout>/ops.{txt,csv}");
  if (amp_flag) app.add_flag("--amp", a.amp, "forward and loss under autocast: bfloat16 on the CPU, float16 on CUDA");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    std::exit(app.exit(e));
  }
  return a;
}

}  // namespace yolo11::bench
