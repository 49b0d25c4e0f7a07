// libFuzzer target: the config_yaml entry of fuzz/entries.h.
#include "target.h"

YOLO11_FUZZ_TARGET(config_yaml)
