// libFuzzer target: the safetensors entry of fuzz/entries.h.
#include "target.h"

YOLO11_FUZZ_TARGET(safetensors)
