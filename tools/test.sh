#!/usr/bin/env bash
# Runs the test suite: fetches the small test datasets when missing, then ctest (slow tests excluded).
#   tools/test.sh [BUILD_DIR]        (default: build)      ctest -L slow runs the long opt-in ones.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${1:-build}
[ -n "${YOLO11_DATASETS_MIRROR:-}" ] || { [ -d ../shared/datasets ] && export YOLO11_DATASETS_MIRROR=../shared/datasets; } || true
for d in coco8 shapes3; do tools/get_dataset.sh "$d"; done
# the real readers of what runs write (TensorBoard, safetensors, Prometheus): test-only; their tests skip without them
tools/readers.sh >/dev/null || echo "[test] tools/readers.sh failed: the reader tests will skip, saying why"
cmake --build "$BUILD_DIR" -j"$(nproc)"
ctest --test-dir "$BUILD_DIR" --output-on-failure -j"$(nproc)" -LE slow
