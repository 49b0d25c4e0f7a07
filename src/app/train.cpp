// yolo11-train: the executable of yolo11::cli::train (src/cli/train.cpp); `yolo11 train ...` runs the same entry point.
#include "yolo11/cli/cli.h"

int main(int argc, char** argv) { return yolo11::cli::train(argc, argv); }
