// libFuzzer target: the dataset_yaml entry of fuzz/entries.h.
#include "target.h"

YOLO11_FUZZ_TARGET(dataset_yaml)
