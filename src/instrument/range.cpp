// Minimal ScopedRange: NVTX push/pop only (the instrument area extends it with trace events and levels).
#include "yolo11/instrument/range.h"

#ifdef YOLO11_HAS_NVTX
#include <nvtx3/nvToolsExt.h>
#endif

namespace yolo11::instrument {

ScopedRange::ScopedRange(const char* name) : name_(name), active_(true), start_ns_(0) {
#ifdef YOLO11_HAS_NVTX
  nvtxRangePushA(name_);
#endif
}

ScopedRange::~ScopedRange() {
#ifdef YOLO11_HAS_NVTX
  if (active_) nvtxRangePop();
#endif
}

}  // namespace yolo11::instrument
