// yolo11 train / yolo11-train: trains YOLO11 from a run config plus Ultralytics-style key=value overrides.
//   yolo11-train --cfg configs/coco128.yaml epochs=3 imgsz=320
#include "yolo11/cli/cli.h"

#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "yolo11/bench/verify.h"
#include "yolo11/config/train_config.h"
#include "yolo11/dist/dist.h"
#include "yolo11/engine/interrupt.h"
#include "yolo11/engine/trainer.h"
#include "yolo11/io/console.h"
#include "parse.h"

namespace yolo11::cli {

int train(int argc, char** argv) {
  io::setup_console();  // plain lines, errors on stderr, no LibTorch notices (include/yolo11/io/console.h)
  CLI::App app{"yolo11-train: train YOLO11 (LibTorch) with every stage timed.\n"
               "Overrides use Ultralytics keys: yolo11-train --cfg configs/coco128.yaml epochs=3 imgsz=320"};
  std::string cfg_file;
  std::vector<std::string> overrides;
  app.add_option("--cfg", cfg_file, "run config YAML (merged over configs/default.yaml)");
  app.add_option("overrides", overrides, "key=value overrides (Ultralytics default.yaml keys)");
  if (const int rc = parse(app, argc, argv); rc >= 0) return rc;
  yolo11::engine::install_stop_signal_handlers();  // SIGINT/SIGTERM: stop after the step, exit 130/143
  try {
    auto cfg = yolo11::engine::prepare_resume(yolo11::config::TrainConfig::load(cfg_file, overrides), overrides);
    const bool verify = cfg.verify_advice;
    yolo11::engine::Trainer trainer(std::move(cfg));
    const auto summary = trainer.train();
    spdlog::info("Results saved to {}", summary.run_dir);
    if (summary.interrupted != 0) return 128 + summary.interrupted;
    if (verify) {  // A/B of the run's own advice in child processes (docs/sweeps.md)
      const auto env = yolo11::dist::from_env();
      if (env.distributed())
        spdlog::info("verify_advice: skipped under DDP (WORLD_SIZE={}); after the run: yolo11-sweep --verify {}",
                     env.world, summary.run_dir);
      else if (!yolo11::bench::verify_after_training(summary.run_dir))
        return 1;
    }
    return 0;
  } catch (const std::exception& e) {
    return fail(argc > 0 ? argv[0] : nullptr, e);
  }
}

}  // namespace yolo11::cli
