# fmt pin (issue 32, finding 7): every translation unit sees the fmt that spdlog was built with.
#
# A pip LibTorch bundles its own fmt beside ATen/c10/torch (torch 2.15.0+cu132: site-packages/torch/include/fmt,
# fmt 12.2.1), and its imported targets put that include root on every compile line as -isystem. Debian's spdlog
# (libspdlog-dev 1.10, SPDLOG_FMT_EXTERNAL) is built against an external fmt (libfmt-dev 9.1, /usr/include/fmt),
# which as a standard directory is searched last, so <fmt/format.h> found LibTorch's copy: spdlog 1.10 does not compile
# with fmt 12 ("'basic_runtime' is not a member of 'fmt'"), and even a spdlog that did would call the fmt::v12 symbols
# its libfmt.so.9 does not have.
#
# yolo11_pin_fmt(<interface target>) makes a directory <build>/yolo11-fmt-pin/fmt holding a symbolic link to every
# header of spdlog's fmt (fmt::fmt's include dir) and puts it on <target>'s interface as the first -isystem directory:
# it comes after the project's own -I directories and before every directory of the targets <target> links
# (LibTorch's, OpenCV's), so <fmt/...> resolves to spdlog's fmt whatever LibTorch carries. fmt's own quoted includes
# ("core.h") resolve in the same directory. A header name that LibTorch's fmt (or a newer fmt) has and spdlog's has not
# (fmt 11's base.h, fmt-c.h) gets a stub with an #error naming the pin, so no header of the other fmt can enter a unit.
# LibTorch's own headers that include <fmt/...> (c10/util/strong_type.h, c10d logging.h/error.h/TraceUtils.h,
# kineto) compile with the pinned fmt 9 (tools/check_libtorch2.sh, variant fmtpip). With Debian's LibTorch (no
# bundled fmt) the pin is the fmt that would have been found anyway. The installed package carries the directory
# (include/yolo11-fmt-pin, links to the same absolute paths, as the rest of yolo11::deps assumes this machine's
# packages).
# Sets YOLO11_FMT_PIN_DIR (empty when not pinned) and YOLO11_FMT_SUMMARY (build summary line). -DYOLO11_FMT_PIN=OFF
# leaves the include order as LibTorch's targets make it (for a spdlog built against LibTorch's own fmt).
include(GNUInstallDirs)
option(YOLO11_FMT_PIN "Put spdlog's fmt ahead of any fmt LibTorch bundles (cmake/FmtPin.cmake)" ON)

function(_yolo11_fmt_version dir out)  # FMT_VERSION of <dir>/fmt (core.h up to fmt 10, base.h from fmt 11) as x.y.z
  set(_v "")
  foreach(h base.h core.h)
    if(NOT _v AND EXISTS "${dir}/fmt/${h}")
      file(STRINGS "${dir}/fmt/${h}" _line REGEX "^#[ \t]*define[ \t]+FMT_VERSION[ \t]+[0-9]+")
      if(_line MATCHES "FMT_VERSION[ \t]+([0-9]+)")
        math(EXPR _maj "${CMAKE_MATCH_1} / 10000")
        math(EXPR _min "${CMAKE_MATCH_1} / 100 % 100")
        math(EXPR _pat "${CMAKE_MATCH_1} % 100")
        set(_v "${_maj}.${_min}.${_pat}")
      endif()
    endif()
  endforeach()
  set(${out} "${_v}" PARENT_SCOPE)
endfunction()

function(yolo11_pin_fmt target)
  set(YOLO11_FMT_PIN_DIR "" PARENT_SCOPE)
  # spdlog's fmt: fmt::fmt (SPDLOG_FMT_EXTERNAL) or fmt::fmt-header-only (SPDLOG_FMT_EXTERNAL_HO)
  set(_dirs "")
  foreach(t fmt::fmt fmt::fmt-header-only)
    if(TARGET ${t} AND NOT _dirs)
      get_target_property(_dirs ${t} INTERFACE_INCLUDE_DIRECTORIES)
    endif()
  endforeach()
  set(_fmt "")
  foreach(d ${_dirs})
    if(NOT _fmt AND EXISTS "${d}/fmt/format.h")
      set(_fmt "${d}")
    endif()
  endforeach()
  # LibTorch's bundled fmt, if any (for the summary and the stubs): an fmt/ in one of its include dirs other than
  # spdlog's (Debian's LibTorch lists /usr/include, which holds the system's fmt, spdlog's own)
  set(_torch_fmt "")
  foreach(d ${TORCH_INCLUDE_DIRS})
    get_filename_component(_rd "${d}" REALPATH)
    get_filename_component(_rf "${_fmt}" REALPATH)
    if(NOT _torch_fmt AND EXISTS "${d}/fmt/format.h" AND NOT (_fmt AND _rd STREQUAL _rf))
      set(_torch_fmt "${d}")
    endif()
  endforeach()
  set(_torch_note "")
  if(_torch_fmt)
    _yolo11_fmt_version("${_torch_fmt}" _tv)
    set(_torch_note ", ahead of LibTorch's bundled fmt ${_tv} (${_torch_fmt}/fmt)")
  endif()
  if(NOT YOLO11_FMT_PIN)
    set(YOLO11_FMT_SUMMARY "not pinned (YOLO11_FMT_PIN=OFF)${_torch_note}" PARENT_SCOPE)
    return()
  endif()
  if(NOT _fmt)
    if(_torch_fmt)
      message(WARNING "fmt pin: spdlog does not use an external fmt target (fmt::fmt not found), so LibTorch's bundled "
                      "fmt (${_torch_fmt}/fmt) is what <fmt/...> finds; spdlog must have been built with that fmt.")
    endif()
    set(YOLO11_FMT_SUMMARY "not pinned (no fmt::fmt target from spdlog)${_torch_note}" PARENT_SCOPE)
    return()
  endif()
  _yolo11_fmt_version("${_fmt}" _v)

  set(_pin "${CMAKE_BINARY_DIR}/yolo11-fmt-pin")
  file(GLOB _have RELATIVE "${_pin}/fmt" "${_pin}/fmt/*")
  file(GLOB _headers RELATIVE "${_fmt}/fmt" "${_fmt}/fmt/*.h")
  set(_newer base.h fmt-c.h)
  if(_torch_fmt)
    file(GLOB _torch_headers RELATIVE "${_torch_fmt}/fmt" "${_torch_fmt}/fmt/*.h")
    list(APPEND _newer ${_torch_headers})
  endif()
  list(REMOVE_DUPLICATES _newer)
  list(REMOVE_ITEM _newer ${_headers})
  file(MAKE_DIRECTORY "${_pin}/fmt")
  foreach(h ${_have})  # drop what a previous configure (another fmt) left
    if(NOT h IN_LIST _headers AND NOT h IN_LIST _newer)
      file(REMOVE "${_pin}/fmt/${h}")
    endif()
  endforeach()
  foreach(h ${_headers})  # links are only rewritten when their target changes (no rebuild on a reconfigure)
    set(_link "${_pin}/fmt/${h}")
    if(IS_SYMLINK "${_link}")
      file(READ_SYMLINK "${_link}" _to)
    else()
      set(_to "")
      file(REMOVE "${_link}")
    endif()
    if(NOT _to STREQUAL "${_fmt}/fmt/${h}")
      file(REMOVE "${_link}")
      file(CREATE_LINK "${_fmt}/fmt/${h}" "${_link}" SYMBOLIC)
    endif()
  endforeach()
  foreach(h ${_newer})
    if(IS_SYMLINK "${_pin}/fmt/${h}")
      file(REMOVE "${_pin}/fmt/${h}")
    endif()
    file(CONFIGURE OUTPUT "${_pin}/fmt/${h}" CONTENT
         "// Generated by cmake/FmtPin.cmake: <fmt/${h}> is not part of fmt ${_v}, the fmt spdlog was built with\n// (${_fmt}/fmt), which this build pins for every translation unit.\n#error \"<fmt/${h}> is not in fmt ${_v} (spdlog's fmt, pinned by cmake/FmtPin.cmake); a header written for a newer fmt\"\n")
  endforeach()
  target_include_directories(${target} SYSTEM BEFORE INTERFACE $<BUILD_INTERFACE:${_pin}>)
  # (installed: an imported target's include dirs are -isystem anyway; SYSTEM would export a relative path)
  target_include_directories(${target} BEFORE INTERFACE $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}/yolo11-fmt-pin>)
  install(DIRECTORY "${_pin}/" DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/yolo11-fmt-pin)
  set(YOLO11_FMT_PIN_DIR "${_pin}" PARENT_SCOPE)
  set(YOLO11_FMT_SUMMARY "${_v} (spdlog's, ${_fmt}/fmt), pinned first by ${_pin}${_torch_note}" PARENT_SCOPE)
endfunction()
