#!/usr/bin/env bash
# CPU speed of two builds of this tree against different LibTorch versions, back to back on one machine (issue 25):
#   bench/libtorch_side_by_side.sh BUILD_A BUILD_B [STEPS]     e.g. build (2.15 wheel) build-113 (Debian 1.13)
# For each build, on coco128 (datasets/coco128, tools/get_dataset.sh coco128):
#   - yolo11n training at imgsz 640, batch 16, threads 2, fp32 (amp=false) and bf16 (amp=true): `synthetic_data=true`
#     (every step reuses the first batch, so the loader costs nothing), `max_steps` = 3 warm-up + STEPS (default 5)
#     steady steps; the steady mean step, forward, loss, backward and optimizer times from summary.json;
#   - validation ms/image (yolo11-bench-val: fresh yolo11n weights, imgsz 640, batch 16, 2 repeats, the last one);
#   - the loader's images per CPU-second with 1 worker (yolo11-bench-data, mosaic + perspective + HSV + flip at 640).
# Prints one markdown table. Run it on a quiet machine (each figure is one run: a busy core changes them 2–10×).
set -euo pipefail
cd "$(dirname "$0")/.."
A=${1:?usage: bench/libtorch_side_by_side.sh BUILD_A BUILD_B [STEPS]}
B=${2:?usage: bench/libtorch_side_by_side.sh BUILD_A BUILD_B [STEPS]}
STEPS=${3:-5}
[ -d datasets/coco128/images ] || tools/get_dataset.sh coco128
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
version() {  # BUILD → the LibTorch version it was configured against (TorchConfigVersion.cmake of its Torch_DIR)
  local dir; dir=$(sed -n 's/^Torch_DIR:[A-Z]*=//p' "$1/CMakeCache.txt")
  sed -n 's/^set(PACKAGE_VERSION "\([^"]*\)").*/\1/p' "$dir/TorchConfigVersion.cmake" | head -1
}
train() {  # BUILD NAME AMP
  "$1/yolo11-train" --cfg configs/coco128.yaml epochs=1 max_steps=$((3 + STEPS)) instrument_warmup=3 \
    synthetic_data=true val=false plots=false save=false threads=2 workers=0 amp="$3" log_every=1000 \
    project="$OUT" name="$2" exist_ok=true > "$OUT/$2.log" 2>&1 || { tail -20 "$OUT/$2.log" >&2; exit 1; }
  python3 - "$OUT/$2/summary.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["run"]
st = {s["name"]: s["mean_s"] for s in r["stages"]}
print(f'{r["step"]["mean_s"]:.3f} {st["forward"]:.3f} {st["loss"]:.3f} {st["backward"]:.3f} {st["optimizer"]:.3f} '
      f'{r["steps"]}')
PY
}
val_ms() {  # BUILD → inference ms/image of the last repeat
  "$1/bench/yolo11-bench-val" repeats=2 weights=fresh imgsz=640 batch=16 > "$OUT/val.log" 2>&1 ||
    { tail -20 "$OUT/val.log" >&2; exit 1; }
  awk -F'|' '/^\| [0-9]+ \|/ {v = $5} END {gsub(/ /, "", v); print v " ms/img"}' "$OUT/val.log"
}
data_rate() {  # BUILD → the loader's summary line
  "$1/bench/yolo11-bench-data" datasets/coco128 5 > "$OUT/data.log" 2>&1 || { tail -20 "$OUT/data.log" >&2; exit 1; }
  awk -F'|' '/^\| 1 \| [0-9]+ \|/ {gsub(/ /, "", $8); if ($8 + 0 > best) best = $8 + 0} END {print best " img per CPU-s"}' \
    "$OUT/data.log"
}
for b in "$A" "$B"; do  # the benchmarks are not in the default build (EXCLUDE_FROM_ALL)
  cmake --build "$b" --target yolo11-train yolo11-bench-val yolo11-bench-data >/dev/null
done
declare -A R
for b in "$A" "$B"; do
  for amp in false true; do R[$b,$amp]=$(train "$b" "$(basename "$b")-amp$amp" "$amp"); done
  R[$b,val]=$(val_ms "$b")
  R[$b,data]=$(data_rate "$b")
done
echo "| $(date -u +%F) coco128, yolo11n, 640, batch 16, 2 threads | $A: LibTorch $(version "$A") | $B: LibTorch $(version "$B") |"
echo "|---|---|---|"
for amp in false true; do
  dt=$([ $amp = true ] && echo bf16 || echo fp32)
  read -r sa fa la ba oa na <<< "${R[$A,$amp]}"; read -r sb fb lb bb ob nb <<< "${R[$B,$amp]}"
  echo "| $dt steady step (s, mean of $na steps) | $sa | $sb |"
  echo "| $dt forward / loss / backward / optimizer (s) | $fa / $la / $ba / $oa | $fb / $lb / $bb / $ob |"
done
echo "| validation (yolo11-bench-val, last repeat) | ${R[$A,val]} | ${R[$B,val]} |"
echo "| loader, 1 worker (yolo11-bench-data) | ${R[$A,data]} | ${R[$B,data]} |"
