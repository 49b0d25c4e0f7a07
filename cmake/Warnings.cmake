function(yolo11_warnings target)
  if(CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
    target_compile_options(${target} PRIVATE -Wall -Wextra -Wno-unused-parameter)
  endif()
  # GCC 12 at -O2/-O3 in C++20 (the LibTorch 2.x build) warns about memcpy bounds inside libstdc++'s std::string
  # insert/append/copy that cannot happen (GCC bugs 105329, 105651; not seen with GCC 13): src/model/yolo.cpp
  # (with_commas), src/engine/results.cpp, src/metrics/confusion_matrix.cpp and three tests. Off for GCC 12 only.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_GREATER_EQUAL 12
     AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
    target_compile_options(${target} PRIVATE -Wno-restrict -Wno-stringop-overflow -Wno-array-bounds)
  endif()
endfunction()
