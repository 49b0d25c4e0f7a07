// libFuzzer target: the labels entry of fuzz/entries.h.
#include "target.h"

YOLO11_FUZZ_TARGET(labels)
