#pragma once
// Command-line entry points. Each yolo11-<mode> executable is one of them (src/app/<mode>.cpp); the `yolo11`
// front end (Ultralytics' `yolo MODE key=value ...`) dispatches to the same functions (src/cli/dispatch.cpp).
// argc/argv are main's: argv[0] is the program name. Each returns the process exit code (0 ok, 1 error, 2 usage;
// train: 128 + signal after a graceful SIGINT/SIGTERM stop).
#include <string>
#include <vector>

namespace yolo11::cli {

int train(int argc, char** argv);    ///< yolo11-train [--cfg FILE] key=value ...
int val(int argc, char** argv);      ///< yolo11-val --weights W --data D key=value ...
int predict(int argc, char** argv);  ///< yolo11-predict --weights W --source S key=value ...
int analyze(int argc, char** argv);  ///< yolo11-analyze PATH [--json]
int synth(int argc, char** argv);    ///< yolo11-synth [--out DIR] [--train N] ...
int sweep(int argc, char** argv);    ///< yolo11-sweep [--cfg FILE] batch=8,16 workers=0,2 ... | --verify RUN_DIR

/// One mode of `yolo11`: its name, a one-line summary, the keys it takes (for `yolo11 help`) and its entry point.
struct Mode {
  std::string name;
  std::string summary;
  std::vector<std::string> keys;
  int (*run)(int argc, char** argv);
};

/// train, val, predict, analyze, synth, sweep.
const std::vector<Mode>& modes();

/// Rewrites Ultralytics-style `key=value` arguments of `mode` into the argument list of its entry point (without
/// argv[0]): val/predict take weights=W (or model=W.safetensors), data=D and source=S as their --weights/--data/
/// --source options; analyze takes path=P (or a bare P) and json=true; synth's keys become its --options
/// (max_objects → --max-objects); sweep takes cfg=F and verify=RUN_DIR as --cfg F and --verify RUN_DIR. Everything else
/// passes through (train passes all; sweep's grid keys and the children's keys). Throws std::invalid_argument
/// for an argument of analyze or synth that is not key=value of a known key.
std::vector<std::string> translate_args(const std::string& mode, const std::vector<std::string>& args);

/// `yolo11 [detect] MODE key=value ...`, `yolo11 help [MODE]`: runs the mode's entry point; an unknown mode prints
/// the list of modes and returns 2.
int dispatch(int argc, char** argv);

}  // namespace yolo11::cli
