#!/usr/bin/env bash
# Starts N local yolo11-train processes torchrun-style (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT),
# waits for all of them; when one fails it stops the rest and exits non-zero. Rank 0 logs to the console (and its run dir);
# ranks > 0 print warnings only, prefixed "[rank N]". docs/dist.md.
#   tools/launch_dist.sh 2 build/yolo11-train --cfg configs/coco8.yaml batch=16 epochs=3
# Environment: MASTER_ADDR (default 127.0.0.1), MASTER_PORT (default 29500), BIN (alternative to the 2nd arg).
# Multi-node: run it once per machine with NNODES (machines) and NODE_RANK (this machine, 0..NNODES-1) set and
# MASTER_ADDR = node 0's address: N processes here, global ranks NODE_RANK·N .. NODE_RANK·N + N − 1 of NNODES·N.
set -euo pipefail
if [[ $# -lt 2 || ! "$1" =~ ^[1-9][0-9]*$ ]]; then
  echo "usage: $0 N path/to/yolo11-train [--cfg FILE] [key=value ...]" >&2
  exit 2
fi
n=$1
shift
bin=$1
shift
nnodes=${NNODES:-1}
node=${NODE_RANK:-0}
if ! [[ "$nnodes" =~ ^[1-9][0-9]*$ && "$node" =~ ^[0-9]+$ && $node -lt $nnodes ]]; then
  echo "launch_dist: NODE_RANK=$node must be in [0, NNODES=$nnodes)" >&2
  exit 2
fi
export WORLD_SIZE=$((n * nnodes)) LOCAL_WORLD_SIZE=$n NODE_RANK=$node MASTER_ADDR=${MASTER_ADDR:-127.0.0.1} \
  MASTER_PORT=${MASTER_PORT:-29500}
pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true' INT TERM
for ((r = 0; r < n; r++)); do
  RANK=$((node * n + r)) LOCAL_RANK=$r "$bin" "$@" &
  pids+=($!)
done
# The first rank to fail stops the others (they would otherwise wait in a collective until its timeout).
rc=0
for ((k = 0; k < n; k++)); do
  if ! wait -n; then
    if [[ $rc -eq 0 ]]; then
      echo "launch_dist: a rank failed; stopping the others" >&2
      kill "${pids[@]}" 2>/dev/null || true
    fi
    rc=1
  fi
done
exit $rc
