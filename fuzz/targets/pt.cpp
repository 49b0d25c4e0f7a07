// libFuzzer target: the pt entry of fuzz/entries.h.
#include "target.h"

YOLO11_FUZZ_TARGET(pt)
