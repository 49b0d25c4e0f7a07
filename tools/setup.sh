#!/usr/bin/env bash
# Installs every build dependency from Debian 12 packages, then configures and builds yolo11-cpp (Release).
#   tools/setup.sh [BUILD_DIR]      (default: build)
# Needs root (or sudo) for apt-get; skips the install when every package is already present.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${1:-build}
PACKAGES=(build-essential cmake ninja-build pkg-config
          libtorch-dev libgloo-dev libopenblas0-pthread
          libopencv-dev libopencv-contrib-dev fonts-dejavu-core libyaml-cpp-dev libspdlog-dev libgtest-dev
          nlohmann-json3-dev libcli11-dev libbenchmark-dev libzip-dev unzip curl ca-certificates python3
          libprotobuf-dev protobuf-compiler python3-protobuf  # tensorboard=true; python3-protobuf: its read-back test
          libcpp-httplib-dev                                   # metrics_port= (/metrics endpoint)
          python3-torch)                                       # torchrun: the DDP launch test (docs/dist.md)
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
# Debian's LibTorch takes BLAS from the system alternative: prefer OpenBLAS (≈14× the reference BLAS here).
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build "$BUILD_DIR" -j"$(nproc)"
echo "[setup] built into $BUILD_DIR"
