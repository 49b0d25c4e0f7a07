# Finds every dependency once and exposes them through one interface target, yolo11::deps.
find_package(Torch REQUIRED)
# LibTorch >= 2.13 requires C++20 (#error in ATen/ATen.h) but its imported target does not ask for it (issue 12).
set(YOLO11_CXX_STANDARD ${CMAKE_CXX_STANDARD})
if(Torch_VERSION VERSION_GREATER_EQUAL 2.13 AND CMAKE_CXX_STANDARD LESS 20)
  set(CMAKE_CXX_STANDARD 20)
  set(YOLO11_CXX_STANDARD "20 (LibTorch ${Torch_VERSION} requires it)")
endif()
find_package(OpenCV REQUIRED COMPONENTS core imgproc imgcodecs)
find_package(yaml-cpp REQUIRED)
find_package(spdlog REQUIRED)
find_package(nlohmann_json REQUIRED)
find_package(CLI11 REQUIRED)
find_package(Threads REQUIRED)
# libzip: data=<dataset>.zip (optional; without it a zip dataset is a clear error).
find_package(PkgConfig QUIET)
set(YOLO11_HAS_LIBZIP OFF)
if(PkgConfig_FOUND)
  pkg_check_modules(LIBZIP QUIET IMPORTED_TARGET libzip)
  if(LIBZIP_FOUND)
    set(YOLO11_HAS_LIBZIP ON)
  endif()
endif()

add_library(yolo11_deps INTERFACE)
add_library(yolo11::deps ALIAS yolo11_deps)
target_link_libraries(yolo11_deps INTERFACE ${TORCH_LIBRARIES} ${OpenCV_LIBS} yaml-cpp spdlog::spdlog
                      nlohmann_json::nlohmann_json Threads::Threads ${CMAKE_DL_LIBS})
target_include_directories(yolo11_deps SYSTEM INTERFACE ${OpenCV_INCLUDE_DIRS})
# <fmt/...> is the fmt spdlog was built with in every unit, not the copy a pip LibTorch bundles (cmake/FmtPin.cmake).
include(FmtPin)
yolo11_pin_fmt(yolo11_deps)
# Optional OpenCV modules (Debian's OpenCVConfig imports every installed module as a target; the GPU carry built by
# tools/device/prepare.sh has only core/imgproc/imgcodecs): videoio → video files and webcams as predict sources;
# freetype (libopencv-contrib-dev) → UTF-8 class names drawn with a TrueType font (fonts-dejavu-core). Absent → those
# sources are a clear error, and non-ASCII names are drawn as their class index.
set(YOLO11_HAS_VIDEOIO OFF)
set(YOLO11_HAS_FREETYPE OFF)
set(YOLO11_OPENCV_OPTIONAL "")  # the optional modules used, for yolo11Config.cmake's find_dependency(OpenCV ...)
if(YOLO11_WITH_VIDEOIO AND TARGET opencv_videoio)
  set(YOLO11_HAS_VIDEOIO ON)
  target_link_libraries(yolo11_deps INTERFACE opencv_videoio)
  string(APPEND YOLO11_OPENCV_OPTIONAL " videoio")
  target_compile_definitions(yolo11_deps INTERFACE YOLO11_HAS_VIDEOIO=1)
endif()
if(YOLO11_WITH_FREETYPE AND TARGET opencv_freetype)
  set(YOLO11_HAS_FREETYPE ON)
  target_link_libraries(yolo11_deps INTERFACE opencv_freetype)
  string(APPEND YOLO11_OPENCV_OPTIONAL " freetype")
  target_compile_definitions(yolo11_deps INTERFACE YOLO11_HAS_FREETYPE=1)
endif()
# LibTorch's flags (ABI macro) must reach every translation unit that includes torch headers.
separate_arguments(_torch_flags UNIX_COMMAND "${TORCH_CXX_FLAGS}")
target_compile_options(yolo11_deps INTERFACE ${_torch_flags})

# CUDA: only when the LibTorch found was built with it (a user's LibTorch 2.x download); Debian's is CPU-only.
set(YOLO11_HAS_CUDA OFF)
if(YOLO11_WITH_CUDA AND (TARGET torch_cuda OR TORCH_CUDA_LIBRARIES))
  set(YOLO11_HAS_CUDA ON)
  target_compile_definitions(yolo11_deps INTERFACE YOLO11_HAS_CUDA=1)
endif()

# NVTX3 is header-only: CUDA toolkit include/nvtx3 (or NVTX3_ROOT). Absent → ranges compile out.
set(YOLO11_HAS_NVTX OFF)
if(YOLO11_WITH_NVTX)
  find_path(YOLO11_NVTX_INCLUDE_DIR nvtx3/nvToolsExt.h
            HINTS $ENV{NVTX3_ROOT} $ENV{CUDA_HOME} $ENV{CUDA_PATH} /usr/local/cuda
            PATH_SUFFIXES include targets/x86_64-linux/include)
  if(YOLO11_NVTX_INCLUDE_DIR)
    set(YOLO11_HAS_NVTX ON)
    target_include_directories(yolo11_deps SYSTEM INTERFACE ${YOLO11_NVTX_INCLUDE_DIR})
    target_compile_definitions(yolo11_deps INTERFACE YOLO11_HAS_NVTX=1)
  endif()
endif()

# Distributed backends as compiled into LibTorch (c10d headers ship with it; Gloo headers from libgloo-dev).
set(YOLO11_HAS_GLOO OFF)
set(YOLO11_HAS_NCCL OFF)
find_path(YOLO11_GLOO_INCLUDE_DIR gloo/config.h)
find_path(YOLO11_C10D_GLOO_HEADER torch/csrc/distributed/c10d/ProcessGroupGloo.hpp HINTS ${TORCH_INCLUDE_DIRS})
find_path(YOLO11_C10D_NCCL_HEADER torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp HINTS ${TORCH_INCLUDE_DIRS})
if(YOLO11_GLOO_INCLUDE_DIR AND YOLO11_C10D_GLOO_HEADER)
  set(YOLO11_HAS_GLOO ON)
  target_compile_definitions(yolo11_deps INTERFACE YOLO11_HAS_GLOO=1)
endif()
# ProcessGroupNCCL.hpp includes <nccl.h>, which LibTorch does not ship: a pip torch keeps it in the NVIDIA NCCL
# wheel next to it (site-packages/nvidia/nccl/include, or nvidia/cu<N>/include); a CUDA toolkit or NCCL_ROOT
# install has it under include/. Not found → NCCL off, with a message (Gloo still serves DDP).
if(YOLO11_HAS_CUDA AND YOLO11_C10D_NCCL_HEADER)
  file(GLOB _nccl_wheel_dirs LIST_DIRECTORIES true "${TORCH_INSTALL_PREFIX}/../nvidia/*/include")
  find_path(YOLO11_NCCL_INCLUDE_DIR nccl.h
            HINTS ${NCCL_ROOT} $ENV{NCCL_ROOT} $ENV{NCCL_HOME} "${TORCH_INSTALL_PREFIX}/../nvidia/nccl" ${_nccl_wheel_dirs}
                  ${CUDAToolkit_INCLUDE_DIRS} $ENV{CUDA_HOME} $ENV{CUDA_PATH} /usr/local/cuda
            PATH_SUFFIXES include)
  if(YOLO11_NCCL_INCLUDE_DIR)
    set(YOLO11_HAS_NCCL ON)
    target_include_directories(yolo11_deps SYSTEM INTERFACE ${YOLO11_NCCL_INCLUDE_DIR})
    target_compile_definitions(yolo11_deps INTERFACE YOLO11_HAS_NCCL=1)
  else()
    message(STATUS "NCCL: LibTorch has ProcessGroupNCCL but nccl.h was not found (looked in NCCL_ROOT, the pip "
                   "wheel dir ${TORCH_INSTALL_PREFIX}/../nvidia/*/include, the CUDA toolkit): NCCL off, Gloo only. "
                   "Set NCCL_ROOT to enable it.")
  endif()
endif()
foreach(_f CUDA NVTX GLOO NCCL VIDEOIO FREETYPE)
  if(YOLO11_HAS_${_f})
    set(YOLO11_HAS_${_f}_BOOL true)
  else()
    set(YOLO11_HAS_${_f}_BOOL false)
  endif()
endforeach()
