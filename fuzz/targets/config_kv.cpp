// libFuzzer target: the config_kv entry of fuzz/entries.h.
#include "target.h"

YOLO11_FUZZ_TARGET(config_kv)
