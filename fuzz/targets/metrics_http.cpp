// libFuzzer target: the metrics_http entry of fuzz/entries.h.
#include "target.h"

YOLO11_FUZZ_TARGET(metrics_http)
