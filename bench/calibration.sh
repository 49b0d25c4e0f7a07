#!/usr/bin/env bash
# The compute calibration and the diagnosis it feeds (issue 26, docs/instrument.md "Expected compute speed"):
#   bench/calibration.sh cost [BUILD]        its cost: coco128, 3 epochs at 640 (the config's defaults), one run each
#                                            with calibrate=false, a first calibrated run, a cached one, instrument=off
#   bench/calibration.sh verdicts [BUILD]    coco128 at imgsz 320, batch 16, 2 epochs: quiet (measures), one shell loop
#                                            beside it (cached figure), the same with no cache, and threads=4
# Each run gets a fresh cache dir (YOLO11_CACHE_DIR) shared by the runs of one call; prints wall times and the
# calibration and diagnosis lines. Needs datasets/coco128 (tools/get_dataset.sh coco128). Run it on a quiet machine.
set -euo pipefail
cd "$(dirname "$0")/.."
WHAT=${1:-cost}
BUILD=${2:-build}
export YOLO11_CACHE_DIR; YOLO11_CACHE_DIR=$(mktemp -d /tmp/yolo11-calibration-cache.XXXX)
P=$(mktemp -d /tmp/yolo11-calibration-runs.XXXX)
train() {  # NAME ARGS...: one run, its wall time
  local name=$1; shift
  local t0 t1
  t0=$(date +%s.%N)
  "$BUILD/yolo11-train" --cfg configs/coco128.yaml plots=false project="$P" name="$name" "$@" > "$P/$name.out" 2>&1
  t1=$(date +%s.%N)
  printf '%-12s wall %.2f s\n' "$name" "$(echo "$t1 - $t0" | bc)"
}
show() { grep -hE 'compute calibration|^diagnosis:|^run \(' "$P/$1/train.log" | cut -c1-400; }
case "$WHAT" in
  cost)
    train warm epochs=1 calibrate=false  # label cache and CPU peak, outside the timed runs
    train off epochs=3 calibrate=false
    rm -f "$YOLO11_CACHE_DIR/compute_calibration.json"
    train first epochs=3; show first
    train cached epochs=3; show cached
    train instrument_off epochs=3 instrument=off
    ;;
  verdicts)
    A=(imgsz=320 batch=16 epochs=2 val=false)
    train quiet "${A[@]}"; show quiet
    (while :; do :; done) & B=$!
    trap 'kill $B 2>/dev/null || true' EXIT
    train busy_cached "${A[@]}"; show busy_cached
    rm -f "$YOLO11_CACHE_DIR/compute_calibration.json"
    train busy_fresh "${A[@]}"; show busy_fresh
    kill $B
    train threads4 "${A[@]}" threads=4; show threads4
    ;;
  *) echo "usage: bench/calibration.sh cost|verdicts [BUILD]" >&2; exit 2 ;;
esac
echo "runs in $P"
