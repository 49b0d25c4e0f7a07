// yolo11-sweep: the executable of yolo11::cli::sweep (src/cli/sweep.cpp); `yolo11 sweep ...` runs the same entry point.
#include "yolo11/cli/cli.h"

int main(int argc, char** argv) { return yolo11::cli::sweep(argc, argv); }
