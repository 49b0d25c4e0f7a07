// yolo11 synth / yolo11-synth: writes a small synthetic detection dataset (shapes on textured backgrounds, exact labels).
//   yolo11-synth --out datasets/synth --train 64 --val 16 --imgsz 256 --seed 0
#include "yolo11/cli/cli.h"

#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include <exception>

#include "yolo11/data/synth.h"
#include "yolo11/io/console.h"
#include "parse.h"

namespace yolo11::cli {

int synth(int argc, char** argv) {
  io::setup_console();  // plain lines, errors on stderr, no LibTorch notices (include/yolo11/io/console.h)
  CLI::App app{"Write a synthetic shapes detection dataset (train/val + data.yaml)"};
  std::string out = "datasets/synth";
  yolo11::data::SynthOptions o;
  app.add_option("--out", out, "output directory")->capture_default_str();
  app.add_option("--train", o.train, "number of training images")->capture_default_str();
  app.add_option("--val", o.val, "number of validation images")->capture_default_str();
  app.add_option("--imgsz", o.imgsz, "image height in pixels")->capture_default_str();
  app.add_option("--max-objects", o.max_objects, "max shapes per image")->capture_default_str();
  app.add_option("--seed", o.seed, "random seed")->capture_default_str();
  app.add_option("--ext", o.ext, "image extension (.png or .jpg)")->capture_default_str();
  if (const int rc = parse(app, argc, argv); rc >= 0) return rc;
  try {
    const std::string yaml = yolo11::data::write_synthetic_dataset(out, o);
    spdlog::info("wrote {} train + {} val images; dataset YAML {}", o.train, o.val, yaml);
  } catch (const std::exception& e) {
    return fail(argc > 0 ? argv[0] : nullptr, e);
  }
  return 0;
}

}  // namespace yolo11::cli
