#!/usr/bin/env bash
# Proves on THIS machine (no GPU) that the carried tree builds and runs against .device/ alone (issue 12):
# configure + build yolo11-train with the same CMake package dirs as tools/device/check.sh, Debian's CPU LibTorch
# 1.13 standing in for the device's pip torch, and the system's copies of the carried libraries hidden:
#   - headers: -nostdinc + gcc's own search list with /usr/include replaced by a symlink overlay WITHOUT opencv4,
#     yaml-cpp, spdlog, fmt, gtest, gmock, CLI, nlohmann, benchmark (a header missing from .device is an error);
#   - CMake: every package dir given explicitly (OpenCV_DIR=.device/...), so no system config is read;
#   - shared libraries: LD_LIBRARY_PATH=.device/usr/lib/x86_64-linux-gnu and an ldd check that every carried
#     library (and the GDAL/GDCM/BLAS/GLX stubs) resolves there, then a CPU training run on coco8.
#   tools/device/prepare.sh && tools/device/build_here.sh [--quick] [BUILD_DIR]   (default build-device-here)
# --quick: configure, one library object, and a smoke program (imread/imencode of a coco8 JPEG, YAML, spdlog/fmt)
# compiled with the same hidden-system flags and run against .device, instead of the whole yolo11-train build.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
QUICK=0; [ "${1:-}" = --quick ] && { QUICK=1; shift; }
B=${1:-build-device-here}
DEV=$ROOT/.device/usr
MA=x86_64-linux-gnu
[ -d "$DEV" ] || { echo "[here] run tools/device/prepare.sh first" >&2; exit 2; }
OV=$ROOT/.device/here-include
rm -rf "$OV" && mkdir -p "$OV/usr" "$OV/$MA"
HIDE=' opencv4 yaml-cpp spdlog fmt gtest gmock CLI nlohmann benchmark '
for e in /usr/include/*; do n=$(basename "$e"); [[ $HIDE == *" $n "* || $n == "$MA" ]] || ln -s "$e" "$OV/usr/$n"; done
for e in /usr/include/$MA/*; do n=$(basename "$e"); [[ $HIDE == *" $n "* ]] || ln -s "$e" "$OV/$MA/$n"; done
ln -s "$OV/$MA" "$OV/usr/$MA"
flags="-nostdinc"
for d in $(c++ -xc++ -E -v /dev/null 2>&1 | sed -n '/#include <...> search/,/End of search/p' | grep '^ /'); do
  case $(realpath "$d") in
    /usr/include) d=$OV/usr ;;
    /usr/include/$MA) d=$OV/$MA ;;
  esac
  flags+=" -isystem $d"
done
export LD_LIBRARY_PATH=$DEV/lib/$MA
cmake -S . -B "$B" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS="$flags" \
  ${CMAKE_CXX_COMPILER_LAUNCHER:+-DCMAKE_CXX_COMPILER_LAUNCHER=$CMAKE_CXX_COMPILER_LAUNCHER} \
  -DTorch_DIR=/usr/lib/$MA/cmake/Torch -DYOLO11_BUILD_TESTS=OFF \
  -DOpenCV_DIR="$DEV/lib/$MA/cmake/opencv4" -Dyaml-cpp_DIR="$DEV/lib/$MA/cmake/yaml-cpp" \
  -Dspdlog_DIR="$DEV/lib/$MA/cmake/spdlog" -Dfmt_DIR="$DEV/lib/$MA/cmake/fmt" -DGTest_DIR="$DEV/lib/$MA/cmake/GTest" \
  -Dbenchmark_DIR="$DEV/lib/$MA/cmake/benchmark" -DCLI11_DIR="$DEV/share/cmake/CLI11" \
  -Dnlohmann_json_DIR="$DEV/share/cmake/nlohmann_json"
grep -h -E "^(OpenCV|yaml-cpp|spdlog|fmt|CLI11|nlohmann_json|GTest)_DIR" "$B/CMakeCache.txt"
YOLO11_DATASETS_MIRROR=${YOLO11_DATASETS_MIRROR:-$ROOT/../shared/datasets} tools/get_dataset.sh coco8 >/dev/null
check_ldd() {
  echo "[here] shared libraries of $1 (carried ones must come from .device):"
  ldd "$1" | grep -E "opencv|yaml|spdlog|fmt|gdal|gdcm|blas|lapack|GLX|tbb|jpeg|png|webp|tiff|OpenEXR"
  local bad
  bad=$(ldd "$1" | grep -E "opencv|yaml-cpp|spdlog|libfmt|gdal|gdcm|libGLX|libtiff|libwebp|libOpenEXR|libjpeg|libpng" | grep -v "$DEV" || true)
  [ -z "$bad" ] || { echo "[here] NOT from .device:"; echo "$bad"; exit 1; }
}
if [ $QUICK = 1 ]; then
  cmake --build "$B" --target CMakeFiles/yolo11.dir/src/data/dataset.cpp.o
  cat > "$B/smoke.cpp" <<'EOF'
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#include <spdlog/spdlog.h>
#include <yaml-cpp/yaml.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <gtest/gtest.h>
int main(int argc, char** argv) {
  cv::Mat im = cv::imread(argv[1]);
  if (im.empty()) return 1;
  cv::Mat small; cv::resize(im, small, {64, 64});
  std::vector<uchar> png, jpg; cv::imencode(".png", small, png); cv::imencode(".jpg", small, jpg);
  cv::Mat back = cv::imdecode(png, cv::IMREAD_COLOR);
  YAML::Node y = YAML::Load("imgsz: 64");
  nlohmann::json j = {{"w", im.cols}, {"h", im.rows}, {"png", png.size()}, {"jpg", jpg.size()}};
  spdlog::info("smoke: {} imgsz={} png roundtrip exact={}", j.dump(), y["imgsz"].as<int>(), cv::norm(back, small) == 0.0);
  return back.empty() ? 1 : 0;
}
EOF
  c++ -std=c++17 $flags -DSPDLOG_COMPILED_LIB -DSPDLOG_FMT_EXTERNAL -DSPDLOG_SHARED_LIB -DFMT_SHARED \
    -isystem "$DEV/include/opencv4" -isystem "$DEV/include/$MA/opencv4" -isystem "$DEV/include" "$B/smoke.cpp" \
    -o "$B/smoke" -L"$DEV/lib/$MA" -Wl,-rpath-link,"$DEV/lib/$MA" \
    -l:libopencv_imgcodecs.so.406 -l:libopencv_imgproc.so.406 -l:libopencv_core.so.406 -l:libyaml-cpp.so.0.7 \
    -l:libspdlog.so.1.10 -l:libfmt.so.9
  check_ldd "$B/smoke"
  "$B/smoke" "$(ls datasets/coco8/images/train/*.jpg | head -1)"
  echo "[here] OK (quick): configured, compiled and ran against .device only"
  exit 0
fi
cmake --build "$B" -j"${JOBS:-3}" --target yolo11-train
check_ldd "$B/yolo11-train"
"$B/yolo11-train" --cfg configs/coco8.yaml imgsz=64 epochs=1 batch=8 workers=1 project="$B/runs" name=here \
  exist_ok=true plots=false
echo "[here] OK: built and ran against .device only"
