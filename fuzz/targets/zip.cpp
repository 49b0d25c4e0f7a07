// libFuzzer target: the zip entry of fuzz/entries.h.
#include "target.h"

YOLO11_FUZZ_TARGET(zip)
