// yolo11-synth: the executable of yolo11::cli::synth (src/cli/synth.cpp); `yolo11 synth ...` runs the same entry point.
#include "yolo11/cli/cli.h"

int main(int argc, char** argv) { return yolo11::cli::synth(argc, argv); }
