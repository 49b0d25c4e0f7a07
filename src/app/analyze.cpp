// yolo11-analyze: the executable of yolo11::cli::analyze (src/cli/analyze.cpp); `yolo11 analyze ...` runs the same entry point.
#include "yolo11/cli/cli.h"

int main(int argc, char** argv) { return yolo11::cli::analyze(argc, argv); }
