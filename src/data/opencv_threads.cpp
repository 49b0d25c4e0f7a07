// One process-wide cv::setNumThreads(0) (see opencv_threads.h).
#include "yolo11/data/opencv_threads.h"

#include <opencv2/core.hpp>

#include <mutex>

namespace yolo11::data {

void disable_opencv_threads() {
  static std::once_flag once;
  std::call_once(once, [] { cv::setNumThreads(0); });
}

}  // namespace yolo11::data
