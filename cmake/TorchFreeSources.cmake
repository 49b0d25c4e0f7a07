# Precompiled headers only where LibTorch is used.
#
# The precompiled header (include/yolo11/pch.h) holds <torch/torch.h>: a 575 MB .gch with GCC. A translation unit that
# never includes LibTorch still pays for it, and more than its load: with the PCH, text.cpp (117 lines, spdlog +
# OpenCV) took 13.7 s at -O3 against 4.2 s without it, interrupt.cpp 12.1 s against 4.0 s. About 60 of the ~165
# translation units need no LibTorch at all (the data pipeline, the CLI, the sweep, most of the instrumentation).
#
# yolo11_skip_pch_where_torch_free(<target>) gives SKIP_PRECOMPILE_HEADERS (and SKIP_UNITY_BUILD_INCLUSION: with
# YOLO11_UNITY_BUILD the unity batches hold the sources that use LibTorch) to each source of <target> whose #include
# closure within this project reaches no LibTorch header. The scan is textual and conservative: any #include line
# counts, whatever #if surrounds it; headers outside this project (OpenCV, spdlog, ...) are not followed, since none
# of them includes LibTorch. A source marked torch-free that starts to use LibTorch without including it fails to
# compile (it no longer gets torch from the PCH). The scan runs at configure time only: a header that gains or loses
# LibTorch between configures costs build time until the next configure, never correctness.

set(_YOLO11_SCAN_DIRS ${PROJECT_SOURCE_DIR}/include ${PROJECT_BINARY_DIR}/include ${PROJECT_SOURCE_DIR}/tests/common)
set(_YOLO11_TORCH_INCLUDE "^(torch|ATen|c10|caffe2)/|(^|/)pch\\.h$")

# _yolo11_reaches_torch(<file> <out_var>): TRUE/FALSE, memoized per file in a global property (cycles count as FALSE
# while they are being visited).
function(_yolo11_reaches_torch file out)
  string(MD5 key "${file}")
  get_property(memo GLOBAL PROPERTY _YOLO11_TORCH_${key})  # undefined when the file was never visited
  if(DEFINED memo)
    if(memo STREQUAL "VISITING")
      set(${out} FALSE PARENT_SCOPE)
    else()
      set(${out} ${memo} PARENT_SCOPE)
    endif()
    return()
  endif()
  set_property(GLOBAL PROPERTY _YOLO11_TORCH_${key} VISITING)
  file(STRINGS ${file} lines REGEX "^[ \t]*#[ \t]*include[ \t]*[<\"][^>\"]+[>\"]")
  get_filename_component(dir ${file} DIRECTORY)
  set(result FALSE)
  foreach(line IN LISTS lines)
    string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]*[<\"]([^>\"]+)[>\"].*$" "\\1" name "${line}")
    if(name MATCHES "${_YOLO11_TORCH_INCLUDE}")
      set(result TRUE)
      break()
    endif()
    foreach(base ${dir} ${_YOLO11_SCAN_DIRS})
      if(EXISTS ${base}/${name} AND NOT IS_DIRECTORY ${base}/${name})
        get_filename_component(header ${base}/${name} REALPATH)
        _yolo11_reaches_torch(${header} sub)
        if(sub)
          set(result TRUE)
        endif()
        break()
      endif()
    endforeach()
    if(result)
      break()
    endif()
  endforeach()
  set_property(GLOBAL PROPERTY _YOLO11_TORCH_${key} ${result})
  set(${out} ${result} PARENT_SCOPE)
endfunction()

function(yolo11_skip_pch_where_torch_free target)
  get_target_property(sources ${target} SOURCES)
  get_target_property(source_dir ${target} SOURCE_DIR)
  set(free "")
  foreach(src IN LISTS sources)
    if(NOT src MATCHES "\\.(cpp|cc|cxx)$")
      continue()
    endif()
    if(NOT IS_ABSOLUTE ${src})
      set(src ${source_dir}/${src})
    endif()
    if(NOT EXISTS ${src})  # generated at build time (tensorboard.pb.cc): its own properties are set where it is made
      continue()
    endif()
    get_filename_component(real ${src} REALPATH)
    _yolo11_reaches_torch(${real} uses_torch)
    if(NOT uses_torch)
      list(APPEND free ${src})
    endif()
  endforeach()
  if(free)
    # Torch-free sources also stay out of unity batches (YOLO11_UNITY_BUILD): a batch carries the PCH.
    set_source_files_properties(${free} TARGET_DIRECTORY ${target} PROPERTIES SKIP_PRECOMPILE_HEADERS ON
                                                                              SKIP_UNITY_BUILD_INCLUSION ON)
  endif()
  set_property(GLOBAL APPEND PROPERTY YOLO11_TORCH_FREE_SOURCES ${free})
endfunction()
