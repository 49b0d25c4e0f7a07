#!/usr/bin/env bash
# Gathers what the device machine lacks into .device/ (git-ignored), for the `run` tool's carry (issue 12):
#   run(command="tools/device/check.sh", carry=[".device", "datasets/coco128", "datasets/coco8"], timeout_s=600)
# The device has torch 2.x+cu13 in python3 (LibTorch via torch.utils.cmake_prefix_path), nvcc, cmake, ninja, but
# no OpenCV C++, yaml-cpp, spdlog, fmt, GoogleTest, CLI11, nlohmann-json. This copies them from THIS machine's
# Debian 12 packages, mirroring the /usr layout under .device/usr (Debian's CMake package files are relocatable).
#
# Size: Debian's libopencv_imgcodecs pulls GDAL, GDCM, ... (≈220 MB of shared libraries loaded). We carry only the
# OpenCV modules the project uses (core, imgproc, imgcodecs) and replace the NEEDED libraries it never calls into
# by stubs with the same SONAME that define exactly the symbols the carried libraries import from them, each
# aborting with a message if ever called: GDAL (imread with IMREAD_LOAD_GDAL), GDCM (DICOM), BLAS/LAPACK
# (cv::solve/SVD-style linear algebra in core), GLX (OpenGL interop). JPEG/PNG/WebP/TIFF/JPEG2000/OpenEXR
# stay real. OpenCV gets a small generated OpenCVConfig.cmake (Debian's lists all 60 modules).
#   tools/device/prepare.sh            → .device/, datasets/coco128 and coco8; prints the carry size (fails > 64 MiB)
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
DEV=$ROOT/.device
P=$DEV/usr
MA=x86_64-linux-gnu
L=/usr/lib/$MA
rm -rf "$DEV" && mkdir -p "$P/include" "$P/lib/$MA/cmake" "$P/share/cmake"

# ---- headers -----------------------------------------------------------------------------------------------------
cp -a /usr/include/{yaml-cpp,spdlog,fmt,gtest,gmock,CLI,nlohmann} "$P/include/"
[ -d /usr/include/benchmark ] && cp -a /usr/include/benchmark "$P/include/"
mkdir -p "$P/include/opencv4/opencv2"
cp -a /usr/include/opencv4/opencv2/{core,imgproc,imgcodecs} "$P/include/opencv4/opencv2/"
cp -a /usr/include/opencv4/opencv2/{core,imgproc,imgcodecs,opencv_modules}.hpp "$P/include/opencv4/opencv2/"
cp -a /usr/include/$MA/opencv4 "$P/include/$MA/" 2>/dev/null || true   # cvconfig.h lives here on Debian

# ---- CMake package files (relocatable install(EXPORT) files) --------------------------------------------------------
for d in GTest spdlog fmt yaml-cpp; do cp -a "$L/cmake/$d" "$P/lib/$MA/cmake/"; done
[ -d "$L/cmake/benchmark" ] && cp -a "$L/cmake/benchmark" "$P/lib/$MA/cmake/"
for d in CLI11 nlohmann_json; do cp -a "/usr/share/cmake/$d" "$P/share/cmake/"; done
cp -a "$L"/libgtest*.a "$L"/libgmock*.a "$P/lib/$MA/"
for f in libbenchmark.so.1debian libbenchmark.so.1.7.1 libbenchmark_main.a; do   # Google Benchmark (only libstdc++)
  [ -e "$L/$f" ] && cp -L "$L/$f" "$P/lib/$MA/$f"
done

# ---- shared libraries: closure of the NEEDED entries, minus glibc/libstdc++ and the stubbed ones --------------------
ROOTS=(libopencv_core.so.406 libopencv_imgproc.so.406 libopencv_imgcodecs.so.406 libyaml-cpp.so.0.7
       libspdlog.so.1.10 libfmt.so.9)
STUB=(libgdal.so.32 libgdcmMSFF.so.3.0 libgdcmDSED.so.3.0 liblapack.so.3 libblas.so.3 libGLX.so.0)
BASE='^(libc|libm|libdl|librt|libpthread|libstdc\+\+|libgcc_s|ld-linux-x86-64)\.so'
LDCACHE=$(ldconfig -p)
where() { awk -v n="$1" '$1==n && /x86-64/ {print $NF; exit}' <<< "$LDCACHE"; }
needed() { readelf -d "$1" | awk '/NEEDED/ {gsub(/[\[\]]/, "", $5); print $5}'; }
declare -A SEEN=() STUBSET=() USERS=()
for s in "${STUB[@]}"; do STUBSET[$s]=1; done
queue=("${ROOTS[@]}")
while [ ${#queue[@]} -gt 0 ]; do
  n=${queue[0]}; queue=("${queue[@]:1}")
  [ -n "${SEEN[$n]:-}" ] && continue
  SEEN[$n]=1
  f=$(where "$n"); [ -n "$f" ] || { echo "[prepare] $n not found (ldconfig)" >&2; exit 1; }
  cp -L "$f" "$P/lib/$MA/$n"
  for m in $(needed "$f"); do
    [[ $m =~ $BASE ]] && continue
    if [ -n "${STUBSET[$m]:-}" ]; then USERS[$m]="${USERS[$m]:-} $P/lib/$MA/$n"; continue; fi
    queue+=("$m")
  done
done
# stubs: one C function per symbol the carried libraries import from the stubbed library (all are functions;
# anything else stops the script)
mkdir -p "$DEV/stubs"
for s in "${!USERS[@]}"; do
  real=$(where "$s"); [ -n "$real" ] || { echo "[prepare] $s not found" >&2; exit 1; }
  src=$DEV/stubs/${s%%.so*}.c
  printf '// Stub of %s for the device carry (tools/device/prepare.sh): aborts if ever called.\n#include <stdio.h>\n#include <stdlib.h>\nstatic void die(const char* f) { fprintf(stderr, "yolo11 device carry: %%s from %s was called but is a stub (tools/device/prepare.sh)\\n", f); abort(); }\n' "$s" "$s" > "$src"
  comm -12 <(for u in ${USERS[$s]}; do nm -D --undefined-only "$u" | awk '{print $2}'; done | sed 's/@.*//' | sort -u) \
           <(nm -D --defined-only "$real" | awk '{print $3}' | sed 's/@.*//' | sort -u) > "$DEV/stubs/$s.syms"
  types=$(nm -D --defined-only "$real" | awk 'NR==FNR {want[$1]; next} {sub(/@.*/, "", $3)} ($3 in want) {print $2}' "$DEV/stubs/$s.syms" - | sort -u | tr -d '\n')
  [[ -z $types || $types =~ ^[TWi]+$ ]] || { echo "[prepare] $s: non-function symbols needed ($types)" >&2; exit 1; }
  # registration entry points run at start-up (OpenCV's imread calls GDALAllRegister): harmless no-ops
  while read -r sym; do
    case $sym in GDALAllRegister) printf 'void %s(void) {}\n' "$sym" ;;
                 *) printf 'void %s(void) { die("%s"); }\n' "$sym" "$sym" ;; esac
  done < "$DEV/stubs/$s.syms" >> "$src"
  cc -shared -fPIC -O2 -Wl,-soname,"$s" -o "$P/lib/$MA/$s" "$src"
  echo "[prepare] stub $s: $(wc -l < "$DEV/stubs/$s.syms") symbols (used by:$(for u in ${USERS[$s]}; do printf ' %s' "$(basename "$u")"; done))"
done
# the roots also under their fully versioned name (the one the CMake package files name); plain files, no
# symlinks, in case the carry does not keep links
for n in "${ROOTS[@]}"; do
  f=$(readlink -f "$(where "$n")")
  cp "$f" "$P/lib/$MA/$(basename "$f")"
done

# ---- OpenCV package file (only the three modules) -----------------------------------------------------------------
ocv_version=$(sed -n 's/^#define CV_VERSION_STRING *"\(.*\)"/\1/p' /usr/include/opencv4/opencv2/core/version.hpp 2>/dev/null || true)
[ -n "$ocv_version" ] || ocv_version=$(awk '/define CV_VERSION_MAJOR/{a=$3} /define CV_VERSION_MINOR/{b=$3} /define CV_VERSION_REVISION/{c=$3} END{print a"."b"."c}' /usr/include/opencv4/opencv2/core/version.hpp)
mkdir -p "$P/lib/$MA/cmake/opencv4"
cat > "$P/lib/$MA/cmake/opencv4/OpenCVConfig.cmake" <<EOF
# Generated by tools/device/prepare.sh: OpenCV ${ocv_version} core/imgproc/imgcodecs carried from Debian 12.
get_filename_component(_ocv_prefix "\${CMAKE_CURRENT_LIST_DIR}/../../../.." ABSOLUTE)
set(OpenCV_VERSION ${ocv_version})
set(OpenCV_INCLUDE_DIRS "\${_ocv_prefix}/include/opencv4" "\${_ocv_prefix}/include/${MA}/opencv4")
set(OpenCV_LIBS)
foreach(_m core imgproc imgcodecs)
  if(NOT TARGET opencv_\${_m})
    add_library(opencv_\${_m} SHARED IMPORTED)
    set_target_properties(opencv_\${_m} PROPERTIES IMPORTED_LOCATION "\${_ocv_prefix}/lib/${MA}/libopencv_\${_m}.so.406"
                          IMPORTED_SONAME libopencv_\${_m}.so.406
                          INTERFACE_INCLUDE_DIRECTORIES "\${OpenCV_INCLUDE_DIRS}")
  endif()
  list(APPEND OpenCV_LIBS opencv_\${_m})
endforeach()
foreach(_c \${OpenCV_FIND_COMPONENTS})
  if(NOT _c MATCHES "^(core|imgproc|imgcodecs)\$")
    set(OpenCV_FOUND FALSE)
    set(OpenCV_NOT_FOUND_MESSAGE "the device carry has core, imgproc, imgcodecs only (asked: \${_c})")
  endif()
endforeach()
EOF
cat > "$P/lib/$MA/cmake/opencv4/OpenCVConfig-version.cmake" <<EOF
set(PACKAGE_VERSION ${ocv_version})
set(PACKAGE_VERSION_COMPATIBLE TRUE)
EOF

# ---- dataset -------------------------------------------------------------------------------------------------------
[ -n "${YOLO11_DATASETS_MIRROR:-}" ] || { [ -d ../shared/datasets ] && export YOLO11_DATASETS_MIRROR=../shared/datasets; } || true
tools/get_dataset.sh coco128 >/dev/null
tools/get_dataset.sh coco8 >/dev/null     # the unit tests' dataset

# ---- size of the carry: working tree (tracked + untracked, not ignored) + .device + datasets/coco128 ----------------
tree=$(git ls-files -z --cached --others --exclude-standard | xargs -0 -r du -cb 2>/dev/null | awk 'END{print $1}')
dev=$(du -sb "$DEV" | cut -f1); data=$(du -scb datasets/coco128 datasets/coco8 | tail -1 | cut -f1)
total=$((tree + dev + data))
mib() { awk -v b="$1" 'BEGIN {printf "%.1f", b / 1048576}'; }
echo "[prepare] .device $(mib "$dev") MiB (libs $(mib "$(du -sb "$P/lib" | cut -f1)"), headers $(mib "$(du -sb "$P/include" | cut -f1)")), datasets/coco128+coco8 $(mib "$data") MiB, working tree $(mib "$tree") MiB: carry $(mib "$total") MiB of 64"
[ "$total" -le $((64 * 1048576)) ] || { echo "[prepare] carry over 64 MiB" >&2; exit 1; }
echo "[prepare] then: run(command=\"tools/device/check.sh\", carry=[\".device\", \"datasets/coco128\", \"datasets/coco8\"], timeout_s=600)"
