#pragma once
// Test-only hooks of the training step (never set in production). Internal to the engine.
#include "yolo11/instrument/stages.h"

namespace yolo11::engine {

/// YOLO11_TEST_DELAY="stage:rank:ms[,stage:rank:ms...]" makes step stage `stage` (a StepStage name) on rank `rank`
/// sleep `ms` milliseconds inside its timed range, so tests can make a straggler. The variable is read once; an
/// entry that does not parse is ignored with a warning. A no-op when unset.
void test_delay(int rank, instrument::StepStage stage);

}  // namespace yolo11::engine
