// yolo11: the Ultralytics-style front end, `yolo11 MODE key=value ...` (yolo11::cli::dispatch, src/cli/dispatch.cpp).
#include "yolo11/cli/cli.h"

int main(int argc, char** argv) { return yolo11::cli::dispatch(argc, argv); }
