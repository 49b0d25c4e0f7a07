# Finds every dependency once and exposes them through one interface target, yolo11::deps.

# LibTorch. YOLO11_LIBTORCH names its root (the directory holding share/cmake/Torch and lib/): site-packages/torch of
# a pip `torch` (what tools/fetch_libtorch.sh unpacks and tools/setup.sh passes by default), or an unzipped libtorch
# download. The root goes first in CMAKE_PREFIX_PATH so TorchConfig's find_library(c10 ...) takes the root's lib/
# ahead of /usr/lib: with Debian's libtorch-dev installed too, a bare Torch_DIR would mix 2.x headers with 1.13's
# libc10. Unset → find_package's usual search (Debian's LibTorch 1.13 under /usr, or Torch_DIR/CMAKE_PREFIX_PATH).
set(YOLO11_LIBTORCH "" CACHE PATH "LibTorch root (site-packages/torch or an unzipped libtorch); empty: search")
set(YOLO11_LIBTORCH_SOURCE "find_package search")
if(YOLO11_LIBTORCH)
  if(NOT EXISTS "${YOLO11_LIBTORCH}/share/cmake/Torch/TorchConfig.cmake")
    message(FATAL_ERROR "YOLO11_LIBTORCH=${YOLO11_LIBTORCH} holds no share/cmake/Torch/TorchConfig.cmake: pass the "
                        "LibTorch root (site-packages/torch, as printed by tools/fetch_libtorch.sh, or libtorch/).")
  endif()
  list(PREPEND CMAKE_PREFIX_PATH "${YOLO11_LIBTORCH}")
  set(Torch_DIR "${YOLO11_LIBTORCH}/share/cmake/Torch" CACHE PATH "" FORCE)
  set(YOLO11_LIBTORCH_SOURCE "YOLO11_LIBTORCH")
  if(EXISTS "${YOLO11_LIBTORCH}/version.py")
    set(YOLO11_LIBTORCH_SOURCE "pip wheel")
    file(STRINGS "${YOLO11_LIBTORCH}/version.py" _tv REGEX "^__version__ = ")
    string(REGEX REPLACE "^__version__ = '([^']*)'.*" "\\1" YOLO11_TORCH_WHEEL_VERSION "${_tv}")
    string(APPEND YOLO11_LIBTORCH_SOURCE " torch ${YOLO11_TORCH_WHEEL_VERSION}")
  endif()
endif()
find_package(Torch REQUIRED)
if(YOLO11_LIBTORCH)
  # Only LibTorch comes from its root: later finds (protobuf for TensorBoard) would take the copies a pip LibTorch
  # bundles (torch/include/google/protobuf) and put that include root ahead of the fmt pin on every compile line.
  list(REMOVE_ITEM CMAKE_PREFIX_PATH "${YOLO11_LIBTORCH}")
endif()
# Every LibTorch library must come from the install whose headers we compile against (a mix builds, then crashes).
foreach(_lib ${TORCH_LIBRARIES} ${C10_LIBRARY})
  set(_path "${_lib}")
  if(TARGET ${_lib})
    get_target_property(_path ${_lib} IMPORTED_LOCATION)
    if(NOT _path)
      get_target_property(_path ${_lib} IMPORTED_LOCATION_RELEASE)
    endif()
  endif()
  if(_path AND _path MATCHES "/lib(c10|torch|torch_cpu|torch_cuda|c10_cuda)\\.so$")
    get_filename_component(_real "${_path}" REALPATH)
    get_filename_component(_root "${TORCH_INSTALL_PREFIX}" REALPATH)
    string(FIND "${_real}" "${_root}/" _at)
    if(NOT _at EQUAL 0)
      message(FATAL_ERROR "LibTorch mix: headers from ${TORCH_INSTALL_PREFIX} but ${_path} from elsewhere. Pass "
                          "-DYOLO11_LIBTORCH=${TORCH_INSTALL_PREFIX} (it puts that root first in the search).")
    endif()
  endif()
endforeach()
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
# Build-tree only: the installed package gets OpenCV's directories from its imported targets (find_dependency), and
# CMake refuses an exported path inside the source tree (the device carry's .device/usr/include/opencv4).
foreach(_dir IN LISTS OpenCV_INCLUDE_DIRS)
  target_include_directories(yolo11_deps SYSTEM INTERFACE "$<BUILD_INTERFACE:${_dir}>")
endforeach()
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
  # A pip LibTorch finds its NVIDIA libraries (NCCL, cuDNN, ...) through its RPATH, site-packages/nvidia/*/lib,
  # ahead of the CUDA toolkit's. The linker searches the link line's -rpath (the toolkit's lib/) first, and the
  # toolkit's older libnccl.so.2 lacks symbols libtorch_cuda.so needs: -rpath-link puts the wheels' first for it too.
  file(GLOB _nv_wheel_libs LIST_DIRECTORIES true "${TORCH_INSTALL_PREFIX}/../nvidia/*/lib")
  if(_nv_wheel_libs)
    list(JOIN _nv_wheel_libs ":" _nv_wheel_libs)
    target_link_options(yolo11_deps INTERFACE "LINKER:-rpath-link,${_nv_wheel_libs}")
  endif()
endif()
# For the build summary: the CUDA LibTorch was built with, the toolkit whose libraries it runs on, cuDNN's version.
set(YOLO11_CUDA_SUMMARY "")
if(YOLO11_HAS_CUDA)
  if(EXISTS "${TORCH_INSTALL_PREFIX}/version.py")
    file(STRINGS "${TORCH_INSTALL_PREFIX}/version.py" _cv REGEX "^cuda")
    string(REGEX REPLACE ".*'([^']*)'.*" "\\1" _cv "${_cv}")
    string(APPEND YOLO11_CUDA_SUMMARY "LibTorch built with CUDA ${_cv}; ")
  endif()
  string(APPEND YOLO11_CUDA_SUMMARY "toolkit ${CUDAToolkit_VERSION} (${CUDAToolkit_LIBRARY_DIR})")
  # a pip LibTorch loads cuDNN from its RPATH first (site-packages/nvidia/cudnn/lib), so that one is reported first
  find_file(YOLO11_CUDNN_VERSION_H cudnn_version.h HINTS "${TORCH_INSTALL_PREFIX}/../nvidia/cudnn/include"
            ${CUDAToolkit_INCLUDE_DIRS} NO_CACHE)
  find_library(YOLO11_CUDNN_LIBRARY NAMES libcudnn.so.9 cudnn HINTS "${TORCH_INSTALL_PREFIX}/../nvidia/cudnn/lib"
               ${CUDAToolkit_LIBRARY_DIR} NO_CACHE)
  set(YOLO11_CUDNN_SUMMARY "not found (libtorch_cuda needs libcudnn.so.9 at run time)")
  if(YOLO11_CUDNN_VERSION_H AND YOLO11_CUDNN_LIBRARY)
    file(STRINGS "${YOLO11_CUDNN_VERSION_H}" _cd REGEX "^#define CUDNN_(MAJOR|MINOR|PATCHLEVEL) ")
    string(REGEX REPLACE ".*MAJOR ([0-9]+).*MINOR ([0-9]+).*PATCHLEVEL ([0-9]+).*" "\\1.\\2.\\3" _cd "${_cd}")
    set(YOLO11_CUDNN_SUMMARY "${_cd} (${YOLO11_CUDNN_LIBRARY})")
  endif()
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
