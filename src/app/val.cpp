// yolo11-val: the executable of yolo11::cli::val (src/cli/val.cpp); `yolo11 val ...` runs the same entry point.
#include "yolo11/cli/cli.h"

int main(int argc, char** argv) { return yolo11::cli::val(argc, argv); }
