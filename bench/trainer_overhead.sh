#!/usr/bin/env bash
# Trainer overhead (issue 31): the raw model step and the trainer's step back to back, on one machine, and their ratio.
#   [REPEATS=3] bench/trainer_overhead.sh [BUILD] [IMGSZ ...]          default: build, 640 320
# For each IMGSZ, yolo11n, batch 16, 2 threads, float32, channels_last (the trainer's CPU layout), REPEATS rounds of:
#   raw      yolo11-bench-model: zero_grad + forward + mean(x²) of the head outputs + backward (mean of 3 steps), with
#            freed memory kept for reuse as the trainer keeps it (engine::tune_malloc)
#   trainer  yolo11-train on coco128 with synthetic_data=true (every step reuses the first batch, so the loader costs
#            nothing), 3 warm-up + 5 steady steps: the steady step and its stages from summary.json
# One row per round: the ratio trainer step / (raw step + the trainer's loss stage), the target is ≤ 1.10; then a
# "median" row from the median of each column over the rounds. The rounds alternate the two processes, so a busy
# spell of the machine shows as one outlying row instead of moving the median. The rest of the trainer's step is
# itemised: the optimizer (clip + AdamW/SGD + zero_grad), the EMA, and what no stage holds; "own share" is that rest
# over the trainer's step, the trainer's cost beyond the model and the loss measured inside one process.
# Run it on a quiet machine: a busy core changes a figure 2–10×.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
[ $# -gt 0 ] && shift
if [ $# -gt 0 ]; then SIZES=("$@"); else SIZES=(640 320); fi
[ -d datasets/coco128/images ] || tools/get_dataset.sh coco128
cmake --build "$BUILD" --target yolo11-train yolo11-bench-model >/dev/null
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
REPEATS=${REPEATS:-3}
echo "| $(date -u +%F) yolo11n b16 2 threads fp32 channels_last | raw step (s) | trainer step (s) | forward / loss / backward (s) | optimizer / ema / other (s) | own share | trainer / (raw + loss) |"
echo "|---|---|---|---|---|---|---|"
for s in "${SIZES[@]}"; do
  rows=()
  for ((k = 1; k <= REPEATS; ++k)); do
    "$BUILD/bench/yolo11-bench-model" --batch 16 --imgsz "$s" --threads 2 --iters 3 --warmup 1 > "$OUT/raw$s.log" 2>&1 ||
      { tail -20 "$OUT/raw$s.log" >&2; exit 1; }
    raw=$(awk '/train fwd\+bwd, channels_last/ {print $5}' "$OUT/raw$s.log")
    "$BUILD/yolo11-train" --cfg configs/coco128.yaml epochs=1 max_steps=8 instrument_warmup=3 synthetic_data=true \
      val=false plots=false save=false threads=2 workers=0 amp=false imgsz="$s" batch=16 log_every=1000 \
      project="$OUT" name="t$s" exist_ok=true > "$OUT/t$s.log" 2>&1 || { tail -20 "$OUT/t$s.log" >&2; exit 1; }
    rows+=("$(python3 - "$OUT/t$s/summary.json" "$raw" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["run"]
st = {x["name"]: x["mean_s"] for x in r["stages"]}
step = r["step"]["mean_s"]
f, l, b, o, e = (st.get(k, 0.0) for k in ("forward", "loss", "backward", "optimizer", "ema"))
print(sys.argv[2], step, f, l, b, o, e, step - sum(st.values()), r["steps"])
PY
)")
  done
  printf '%s\n' "${rows[@]}" | python3 -c '
import statistics, sys
size = sys.argv[1]
rows = [[float(v) for v in line.split()] for line in sys.stdin if line.strip()]
def show(label, raw, step, f, l, b, o, e, other, n):
    print(f"| {size} {label} | {raw:.3f} | {step:.3f} (mean of {n:.0f}) | {f:.3f} / {l:.3f} / {b:.3f} | "
          f"{o:.3f} / {e:.3f} / {other:.3f} | {100 * (step - f - l - b) / step:.1f} % | {step / (raw + l):.3f} |")
for k, r in enumerate(rows, 1):
    show(f"round {k}", *r)
if len(rows) > 1:
    show(f"median of {len(rows)}", *[statistics.median(c) for c in zip(*rows)])
' "$s"
done
