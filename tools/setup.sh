#!/usr/bin/env bash
# Installs every build dependency, then configures and builds yolo11-cpp (Release).
#   tools/setup.sh [BUILD_DIR]      (default: build)
#   tools/setup.sh --deps-only      install the packages (and fetch the wheel) only
# LibTorch, by YOLO11_LIBTORCH:
#   wheel (default)  LibTorch 2.15 with CUDA 13 from the PyPI `torch` wheel, unpacked into a cache dir by
#                    tools/fetch_libtorch.sh (its CUDA libraries from the CUDA 13 toolkit in /usr/local/cuda)
#   debian           Debian 12's libtorch-dev 1.13, CPU only (no PyPI needed)
#   /a/path          a LibTorch root you have (site-packages/torch, or an unzipped libtorch)
# Needs root (or sudo) for apt-get; skips the install when every package is already present.
set -euo pipefail
cd "$(dirname "$0")/.."
DEPS_ONLY=0; [ "${1:-}" = --deps-only ] && { DEPS_ONLY=1; shift; }
BUILD_DIR=${1:-build}
PACKAGES=(build-essential cmake ninja-build pkg-config
          libgloo-dev python3-pip python3-venv
          libopencv-dev libopencv-contrib-dev fonts-dejavu-core libyaml-cpp-dev libspdlog-dev libgtest-dev
          nlohmann-json3-dev libcli11-dev libbenchmark-dev libzip-dev unzip curl ca-certificates python3
          libprotobuf-dev protobuf-compiler python3-protobuf  # tensorboard=true; python3-protobuf: its read-back test
          libcpp-httplib-dev                                   # metrics_port= (/metrics endpoint)
          clang libclang-rt-14-dev                             # tools/fuzz.sh: libFuzzer (docs/fuzzing.md)
          clang-format                                         # tools/format.sh: .clang-format on changed lines
          python3-torch)                                       # torchrun: the DDP launch test (docs/dist.md)
LIBTORCH=${YOLO11_LIBTORCH:-wheel}
# Debian's LibTorch takes BLAS from the system alternative: OpenBLAS (≈14× the reference BLAS here).
[ "$LIBTORCH" = debian ] && PACKAGES+=(libtorch-dev libopenblas0-pthread)
missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  echo "[setup] installing: ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
if [ $DEPS_ONLY = 1 ]; then [ "$LIBTORCH" = wheel ] && tools/fetch_libtorch.sh >/dev/null; exit 0; fi
case "$LIBTORCH" in
  wheel) ROOT=$(tools/fetch_libtorch.sh); TORCH_ARG=(-DYOLO11_LIBTORCH="$ROOT") ;;
  debian) TORCH_ARG=(-DYOLO11_LIBTORCH= -DTorch_DIR=/usr/lib/x86_64-linux-gnu/cmake/Torch) ;;
  *) TORCH_ARG=(-DYOLO11_LIBTORCH="$LIBTORCH") ;;
esac
# A build dir configured against another LibTorch starts afresh (its cached library paths belong to that one).
want=$( [ "$LIBTORCH" = debian ] && echo /usr/lib/x86_64-linux-gnu/cmake/Torch || echo "${TORCH_ARG[0]#*=}/share/cmake/Torch")
have=$(sed -n 's/^Torch_DIR:[A-Z]*=//p' "$BUILD_DIR/CMakeCache.txt" 2>/dev/null || true)
if [ -n "$have" ] && [ "$(realpath -m "$have")" != "$(realpath -m "$want")" ]; then
  echo "[setup] $BUILD_DIR was configured against $have: reconfiguring from scratch for $want"
  rm -rf "$BUILD_DIR/CMakeCache.txt" "$BUILD_DIR/CMakeFiles"
fi
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release "${TORCH_ARG[@]}"
cmake --build "$BUILD_DIR" -j"$(nproc)"
echo "[setup] built into $BUILD_DIR"
