// yolo11-predict: the executable of yolo11::cli::predict (src/cli/predict.cpp); `yolo11 predict ...` runs the same entry point.
#include "yolo11/cli/cli.h"

int main(int argc, char** argv) { return yolo11::cli::predict(argc, argv); }
