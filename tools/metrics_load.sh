#!/usr/bin/env bash
# /metrics under load (include/yolo11/io/metrics_server.h): a coco128 run serves metrics_port while Debian's wrk
# (test-only; tools/readers.sh installs it) sends ≥ RATE requests/s for LOAD_S seconds over loopback in the steady
# part of the run. One run, three phases of LOAD_S each: before the load, under it, after it. Reports the trainer's
# own step time (breakdown.csv window rows, mean_s of stage "step", weighted by steps) per phase and the ratio
# under load / without (the mean of before and after), and checks the responses: every one in wrk's Lua
# (tools/metrics_load.lua: status 200, every line of the text exposition grammar) and one in KEEP_EVERY with
# `promtool check metrics`, plus one scrape per phase.
#   tools/metrics_load.sh [BUILD_DIR]
# Environment: LOAD_S (30), RATE (1000, the least accepted), CONNS (16), PACE_MS (10: each connection's pause
#   between a response and its next request), WARMUP_STEPS (40), OUT (/tmp/yolo11-metrics-load), DATASETS (the
#   repository's datasets/), TRAIN_ARGS (extra key=value for the run).
# Exit: 0 when the load reached RATE and every response was valid; 1 otherwise; 2 when a tool or the build is missing.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
BUILD=$(realpath -m "${1:-build}")
cd "$HERE/.."  # the repository root: the config's model and data paths are relative to it
LOAD_S=${LOAD_S:-30}
RATE=${RATE:-1000}
CONNS=${CONNS:-16}
export PACE_MS=${PACE_MS:-10} KEEP_EVERY=${KEEP_EVERY:-500}
WARMUP_STEPS=${WARMUP_STEPS:-40}
OUT=${OUT:-/tmp/yolo11-metrics-load}
DATASETS=$(realpath -m "${DATASETS:-datasets}")
log() { echo "[metrics_load] $*" >&2; }
for t in wrk promtool curl; do
  command -v $t >/dev/null || { log "needs $t (apt-get install wrk prometheus curl; tools/readers.sh installs wrk and promtool)"; exit 2; }
done
[ -x "$BUILD/yolo11-train" ] || { log "no $BUILD/yolo11-train: build it first (ninja -C $BUILD yolo11-train)"; exit 2; }
[ -d "$DATASETS/coco128" ] || { log "no $DATASETS/coco128 (tools/get_dataset.sh coco128)"; exit 2; }
rm -rf "$OUT" && mkdir -p "$OUT/bodies"
PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
URL=http://127.0.0.1:$PORT/metrics

# A run far longer than the measurement, stopped with SIGINT once the three phases are done. No validation and no
# plots, so that the phases are training steps only.
# shellcheck disable=SC2086
"$BUILD/yolo11-train" --cfg configs/coco128.yaml datasets_dir="$DATASETS" epochs=1000 imgsz=160 batch=16 \
  val=false plots=false instrument=basic log_every=4 metrics_port="$PORT" project="$OUT" name=run exist_ok=true \
  ${TRAIN_ARGS:-} >"$OUT/train.out" 2>&1 &
TRAIN=$!
trap 'kill -INT $TRAIN 2>/dev/null || true; wait $TRAIN 2>/dev/null || true' EXIT

steps() { curl -sf --max-time 5 "$URL" | awk '/^yolo11_steps_total/ {print $2; f=1} END {if (!f) print -1}'; }
scrape_check() {  # one scrape through promtool
  curl -sf --max-time 5 "$URL" >"$OUT/bodies/scrape_$1.txt" && promtool check metrics <"$OUT/bodies/scrape_$1.txt" \
    >"$OUT/promtool_scrape_$1.log" 2>&1 || { log "scrape $1 failed promtool: $(cat "$OUT/promtool_scrape_$1.log")"; return 1; }
}
for _ in $(seq 600); do
  s=$(steps 2>/dev/null || echo -1)
  [ "${s%.*}" -ge "$WARMUP_STEPS" ] 2>/dev/null && break
  kill -0 $TRAIN 2>/dev/null || { log "the run ended early:"; tail -20 "$OUT/train.out" >&2; exit 1; }
  sleep 1
done
[ "${s%.*}" -ge "$WARMUP_STEPS" ] || { log "no $WARMUP_STEPS steps in 600 s"; exit 1; }

bad=0
a0=$(steps); scrape_check before || bad=1; sleep "$LOAD_S"; a1=$(steps)
log "before: steps $a0..$a1 in ${LOAD_S} s without load"
# CPU seconds of the endpoint's threads (src/io/metrics_server.cpp names them metrics-*): what the load costs the
# trainer's machine whatever else runs on it (the step-time ratio is only as quiet as the machine).
server_cpu() {
  local t sum=0
  for t in /proc/$TRAIN/task/*; do
    case $(cat "$t/comm" 2>/dev/null) in metrics-*) sum=$((sum + $(awk '{print $14 + $15}' "$t/stat"))) ;; esac
  done
  echo "$sum"
}
b0=$(steps); cpu0=$(server_cpu)
OUT="$OUT/bodies" wrk -t1 -c"$CONNS" -d"${LOAD_S}s" --latency -s "$HERE/metrics_load.lua" "$URL" >"$OUT/wrk.txt" 2>&1 || bad=1
b1=$(steps); cpu1=$(server_cpu); scrape_check load || bad=1
log "load: steps $b0..$b1 under wrk"
c0=$b1; sleep "$LOAD_S"; c1=$(steps); scrape_check after || bad=1
log "after: steps $c0..$c1 without load"
kill -INT $TRAIN; wait $TRAIN || true
trap - EXIT

# Every kept body through promtool.
checked=0
for f in "$OUT"/bodies/body*.txt; do
  [ -e "$f" ] || continue
  checked=$((checked + 1))
  promtool check metrics <"$f" >"$OUT/promtool.log" 2>&1 || { log "promtool rejects $f: $(cat "$OUT/promtool.log")"; bad=1; }
done
lua=$(grep '^lua: responses' "$OUT/wrk.txt" || true)
[ -n "$lua" ] || { log "wrk printed no summary:"; cat "$OUT/wrk.txt" >&2; exit 1; }
read -r responses invalid rate errors p99 maxms < <(echo "$lua" | awk '{print $3, $5, $9, $11, $13, $15}')
non2xx=$(awk '/Non-2xx/ {print $NF}' "$OUT/wrk.txt"); non2xx=${non2xx:-0}

# The trainer's step time per phase: window rows (stage "step") whose steps all lie in the phase.
# first_step/last_step are 0-based step indices; a phase [s0, s1) of steps_total holds indices s0 .. s1-1.
awk -F, -v a0="$a0" -v a1="$a1" -v b0="$b0" -v b1="$b1" -v c0="$c0" -v c1="$c1" '
  $1 == "window" && $7 == "step" {
    p = ($3 >= a0 && $4 < a1) ? "before" : ($3 >= b0 && $4 < b1) ? "load" : ($3 >= c0 && $4 < c1) ? "after" : ""
    if (p != "") { n[p] += $5; t[p] += $5 * $9; w[p]++ }
  }
  END {
    for (i = 1; i <= 3; i++) { p = (i == 1 ? "before" : i == 2 ? "load" : "after"); m[p] = n[p] ? t[p] / n[p] : 0
      printf "step_s_%s %.4f steps %d windows %d\n", p, m[p], n[p], w[p] }
    base = (m["before"] + m["after"]) / 2
    printf "ratio %.4f\n", (base > 0) ? m["load"] / base : 0
  }' "$OUT/run/breakdown.csv" | tee "$OUT/steps.txt" >&2

ratio=$(awk '/^ratio/ {print $2}' "$OUT/steps.txt")
{
  echo "requests under load: $responses in ${LOAD_S} s = $rate/s over $CONNS connections (need ≥ $RATE); latency p99 $p99 ms, max $maxms ms"
  echo "responses invalid (status or exposition grammar, every one): $invalid; non-2xx: $non2xx; socket errors: $errors"
  echo "promtool: $checked kept bodies (1 in $KEEP_EVERY) and 3 scrapes (one per phase), failures: $bad"
  awk -v t=$((cpu1 - cpu0)) -v hz="$(getconf CLK_TCK)" -v n="$responses" -v s="$LOAD_S" -v cores="$(nproc)" 'BEGIN {
    printf "endpoint threads under load: %.2f CPU-s in %d s (%.1f µs per request, %.2f %% of %d cores)\n",
           t / hz, s, n ? 1e6 * t / hz / n : 0, 100 * t / hz / s / cores, cores }'
  awk '/^step_s/ {printf "%s: %s s/step over %s steps (%s windows)\n", substr($1, 8), $2, $4, $6}' "$OUT/steps.txt"
  echo "step time under load / without: $ratio"
} | tee "$OUT/report.txt"
ok=$(awk -v r="$rate" -v need="$RATE" 'BEGIN {print (r >= need) ? 1 : 0}')
[ "$ok" = 1 ] && [ "$invalid" = 0 ] && [ "$non2xx" = 0 ] && [ "$errors" = 0 ] && [ "$bad" = 0 ] && [ "$checked" -gt 0 ]
