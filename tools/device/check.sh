#!/usr/bin/env bash
# The one device check (issue 12), run ON the device machine in one call of ≤ 10 minutes:
#   here:   tools/device/prepare.sh
#   device: run(command="tools/device/check.sh", carry=[".device", "datasets/coco128", "datasets/coco8"],
#               timeout_s=600)
# Every phase has its own timeout (and all of them share one deadline, CHECK_BUDGET_S, default 570 s); results go
# to $OUT as they come: $OUT/summary.md (one line per phase, appended at once), $OUT/<phase>.log, the run dirs'
# summary/json files. Phases:
#   env        nvidia-smi, torch/CUDA/nvcc/gcc/glibc versions
#   configure  CMake Release against the pip torch's LibTorch (torch.utils.cmake_prefix_path) + the carried .device
#   build      yolo11-train and the model-step benchmarks, -j16
#   step       raw model forward+backward step alone (yolo11-bench-model --cuda, yolo11-bench-amp --cuda), b16/b64
#   train16    coco128 640 batch 16 instrument=full (CUDA-event stage times, NVML sampler, fp16 AMP + GradScaler)
#   train16s   the same with sync=true (synchronized wall times per stage: compare with train16)
#   train64    batch 64 instrument=full profile_steps=3:5 (cudaProfilerStart/Stop calls)
#   tests      build and run the unit tests (ctest -LE slow) with what time is left
# Copy the summary's figures into docs/gpu.md.
set -uo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
OUT=${OUT:-$ROOT/device-out}
mkdir -p "$OUT"
BUDGET=${CHECK_BUDGET_S:-570}
T0=$(date +%s)
SUM=$OUT/summary.md
DEV=$ROOT/.device/usr
MA=x86_64-linux-gnu
B=$ROOT/build-device
JOBS=${JOBS:-16}
echo "# device check $(date -u +%FT%TZ)" > "$SUM"

left() { echo $(( BUDGET - ($(date +%s) - T0) )); }
# phase NAME TIMEOUT_S CMD...: runs CMD with min(TIMEOUT_S, time left) and records rc and seconds
phase() {
  local name=$1 limit=$2; shift 2
  local l; l=$(left)
  [ "$l" -lt "$limit" ] && limit=$l
  if [ "$limit" -le 5 ]; then echo "- $name: SKIPPED (no time left)" >> "$SUM"; return 124; fi
  local t=$(date +%s) rc=0
  echo "[check] $name (timeout ${limit}s)"
  timeout -k 5 "$limit" "$@" > "$OUT/$name.log" 2>&1 || rc=$?
  echo "- $name: rc=$rc, $(( $(date +%s) - t )) s$( [ $rc -eq 124 ] && echo ' (TIMED OUT)')" >> "$SUM"
  tail -n 3 "$OUT/$name.log" | sed 's/^/    /' >> "$SUM"
  return $rc
}

# ---- env ------------------------------------------------------------------------------------------------------------
env_info() {
  nvidia-smi || true
  python3 -c 'import torch, sys; print("torch", torch.__version__, "cuda", torch.version.cuda, "cudnn", torch.backends.cudnn.version(), "available", torch.cuda.is_available(), torch.cuda.get_device_name(0) if torch.cuda.is_available() else ""); print("cmake_prefix_path", torch.utils.cmake_prefix_path)'
  nvcc --version | tail -2; c++ --version | head -1; cmake --version | head -1; ldd --version | head -1; nproc
}
phase env 30 env_info

# ---- configure + build -------------------------------------------------------------------------------------------
TORCH_PREFIX=$(python3 -c 'import torch.utils; print(torch.utils.cmake_prefix_path)' 2>/dev/null)
SITE=$(python3 -c 'import torch, os; print(os.path.dirname(os.path.dirname(torch.__file__)))' 2>/dev/null)
# the carried shared libraries first, then the pip NVIDIA wheels' libraries (NVML comes from the driver)
export LD_LIBRARY_PATH=$DEV/lib/$MA:${LD_LIBRARY_PATH:-}
export YOLO11_DATASETS_MIRROR=$ROOT/datasets
configure() {
  cmake -S "$ROOT" -B "$B" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_PREFIX_PATH="$TORCH_PREFIX" -DCMAKE_CUDA_ARCHITECTURES=90 \
    -DOpenCV_DIR="$DEV/lib/$MA/cmake/opencv4" -Dyaml-cpp_DIR="$DEV/lib/$MA/cmake/yaml-cpp" \
    -Dspdlog_DIR="$DEV/lib/$MA/cmake/spdlog" -Dfmt_DIR="$DEV/lib/$MA/cmake/fmt" -DGTest_DIR="$DEV/lib/$MA/cmake/GTest" \
    -Dbenchmark_DIR="$DEV/lib/$MA/cmake/benchmark" -DCLI11_DIR="$DEV/share/cmake/CLI11" \
    -Dnlohmann_json_DIR="$DEV/share/cmake/nlohmann_json" -DYOLO11_SHARED_DIR="$ROOT/../shared" "$@"
}
phase configure 90 configure || { echo "configure failed: see configure.log" >> "$SUM"; exit 1; }
grep -A12 "build summary" "$OUT/configure.log" | sed 's/^-- /    /' >> "$SUM"
phase build 240 cmake --build "$B" -j"$JOBS" --target yolo11-train yolo11-bench-model yolo11-bench-amp \
  || { echo "build failed: see build.log" >> "$SUM"; exit 1; }

# ---- the model step alone ------------------------------------------------------------------------------------------
step() {
  for b in 16 64; do
    echo "== yolo11-bench-model --cuda --batch $b"; "$B/yolo11-bench-model" --cuda --batch "$b" --imgsz 640 --iters 20 --warmup 5
    echo "== yolo11-bench-amp --cuda --batch $b";   "$B/yolo11-bench-amp" --cuda --batch "$b" --imgsz 640 --iters 20 --warmup 5
  done
}
phase step 60 step

# ---- training runs ---------------------------------------------------------------------------------------------------
train() {  # train NAME key=value...
  local name=$1; shift
  "$B/yolo11-train" --cfg configs/coco128.yaml project="$OUT/runs" name="$name" exist_ok=true epochs=3 workers=12 \
    instrument=full plots=false "$@"
  local ok=$?
  for f in summary.json results.csv train.log; do [ -f "$OUT/runs/$name/$f" ] && echo "[check] wrote runs/$name/$f"; done
  rm -rf "$OUT/runs/$name/weights"   # checkpoints are not figures (and are large)
  return $ok
}
phase train16 75 train b16 batch=16 val=false
phase train16s 75 train b16sync batch=16 val=false sync=true
phase train64 90 train b64 batch=64 profile_steps=3:5

# ---- unit tests with what is left --------------------------------------------------------------------------------------
tests() {
  cmake --build "$B" -j"$JOBS" && ctest --test-dir "$B" -LE slow -j8 --output-on-failure --timeout 120
}
phase tests 240 tests
echo "- total: $(( $(date +%s) - T0 )) s" >> "$SUM"
cat "$SUM"
