// yolo11-sweep: benchmark sweeps over batch × workers × imgsz [× amp × cache], one child process per point
// (include/yolo11/bench/sweep.h, docs/sweeps.md), and --verify RUN_DIR: an A/B of a run's diagnosis advice
// (include/yolo11/bench/verify.h).
//   yolo11-sweep --cfg configs/coco128.yaml batch=8,16 workers=0,2,4 imgsz=320,640 steps=30 warmup=10
//   yolo11-sweep --verify runs/train/train rounds=3 steps=20 warmup=5 [advice=workers=4]
#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include <exception>
#include <string>
#include <vector>

#include "yolo11/bench/sweep.h"
#include "yolo11/bench/verify.h"
#include "yolo11/cli/cli.h"
#include "yolo11/io/console.h"
#include "parse.h"

namespace yolo11::cli {

namespace {

int run_verify(const std::string& run_dir, const std::vector<std::string>& args) {
  bench::VerifyOptions o;
  o.run_dir = run_dir;
  for (const auto& a : args) {
    const size_t eq = a.find('=');
    const std::string k = eq == std::string::npos ? a : a.substr(0, eq), v = eq == std::string::npos ? "" : a.substr(eq + 1);
    if (k == "rounds") o.rounds = std::stoi(v);
    else if (k == "steps") o.steps = std::stoll(v);
    else if (k == "warmup") o.warmup = std::stoll(v);
    else if (k == "point_timeout") o.point_timeout = std::stod(v);
    else if (k == "advice") o.advice = v;
    else if (k == "train_exe") o.train_exe = v;
    else if (eq != std::string::npos) o.passthrough.push_back(a);
    else throw std::runtime_error("--verify: argument '" + a + "' is not key=value");
  }
  if (o.rounds < 1 || o.steps < 2 || o.warmup < 0)
    throw std::runtime_error("--verify: expected rounds >= 1, steps >= 2, warmup >= 0");
  return bench::verify_advice(o).verdict.verified ? 0 : 3;  // 3: the advice was rejected
}

}  // namespace

int sweep(int argc, char** argv) {
  io::setup_console();  // plain lines, errors on stderr, no LibTorch notices (include/yolo11/io/console.h)
  CLI::App app{"yolo11-sweep: which batch, workers and imgsz train fastest on this machine, measured point by point in "
               "child processes.\n  yolo11-sweep --cfg configs/coco128.yaml batch=8,16 workers=0,2,4 imgsz=320,640 "
               "steps=30 warmup=10 [amp=true,false] [cache=false,ram] [data=synthetic] [point_timeout=S] [name=N] "
               "[resume=true]\n  yolo11-sweep --verify RUN_DIR [rounds=3 steps=20 warmup=5 advice=workers=8]"};
  std::string cfg_file, verify_dir;
  std::vector<std::string> args;
  app.add_option("--cfg", cfg_file, "run config YAML passed to every point's yolo11-train");
  app.add_option("--verify", verify_dir, "A/B the diagnosis advice of this finished run (writes advice_verified.json)");
  app.add_option("args", args, "grid and sweep keys (batch=8,16 workers=0,2 imgsz=320 steps= warmup= ...) and "
                               "key=value for the children");
  if (const int rc = parse(app, argc, argv); rc >= 0) return rc;
  try {
    if (!verify_dir.empty()) return run_verify(verify_dir, args);
    auto o = bench::parse_sweep_args(args);
    o.cfg_file = cfg_file;
    const auto rep = bench::run_sweep(o);
    return rep.rec.found ? 0 : 1;
  } catch (const std::exception& e) {
    return fail(argc > 0 ? argv[0] : nullptr, e);
  }
}

}  // namespace yolo11::cli
