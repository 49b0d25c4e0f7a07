// libFuzzer target: the list_file entry of fuzz/entries.h.
#include "target.h"

YOLO11_FUZZ_TARGET(list_file)
