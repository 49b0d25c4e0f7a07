#pragma once
// OpenCV's own threading, set once per process (issue 10, the intermittent SIGSEGV at start).

namespace yolo11::data {

/// Makes OpenCV run its functions serially in this process (cv::setNumThreads(0), as Ultralytics does when it is
/// imported): the parallelism is the loader's workers. The first call does it, later calls do nothing (std::call_once).
/// Call it from the main thread before any thread that uses OpenCV starts; Dataset, Loader and scan_images do.
/// Why once and not per thread: cv::setNumThreads is process-wide, and with the TBB backend of Debian's OpenCV every
/// call terminates the global task arena. Loader workers that called it at the same moment (or beside a running
/// cv::resize) crashed with SIGSEGV: 6-10 in 300 runs of a 8-thread reproducer, none with one early call.
void disable_opencv_threads();

}  // namespace yolo11::data
