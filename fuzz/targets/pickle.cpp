// libFuzzer target: the pickle entry of fuzz/entries.h.
#include "target.h"

YOLO11_FUZZ_TARGET(pickle)
