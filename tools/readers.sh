#!/usr/bin/env bash
# Test-only: installs the real readers of what a run writes into a virtual environment, and prints its python.
#   tools/readers.sh            → prints e.g. ~/.cache/yolo11-cpp/readers-venv/bin/python
# The tests that use them (ctest -L readers; tests/io/*) find this python through YOLO11_READERS_PYTHON or this
# default path, and skip, saying why, where it or a package is missing. Never needed to build or to train.
#   tensorboard   TensorBoard's own event reader (EventAccumulator) on events.out.tfevents.*
#   safetensors   the safetensors package (numpy backend) on weights/*.safetensors
#   pycocotools   the COCO API's evaluator on `yolo11 val save_json=true`'s predictions.json
#   HTA           Holistic Trace Analysis (PyTorch profiler trace analysis) on trace.json and ops_trace.json
#                 (Perfetto's trace processor is not used: its Python package downloads the processor binary at first
#                 use from outside the package registries)
#   prometheus    Debian's Prometheus server and promtool on /metrics (apt-get, as root or with sudo; skipped with a
#                 message otherwise)
#   wrk           Debian's HTTP load generator, for tools/metrics_load.sh (apt-get, as prometheus)
# Environment: YOLO11_CACHE (default ${XDG_CACHE_HOME:-~/.cache}/yolo11-cpp). Needs python3-venv or python3 -m venv
# with ensurepip (Debian: python3-venv), and PyPI. A second call finds everything installed and only prints the path.
set -euo pipefail
CACHE=${YOLO11_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/yolo11-cpp}
VENV=$CACHE/readers-venv
PINS=(tensorboard==2.21.0 safetensors==0.8.0 numpy==2.4.6 HolisticTraceAnalysis==0.5.0 pycocotools==2.0.11)
log() { echo "[readers] $*" >&2; }
APT=()
command -v promtool >/dev/null || APT+=(prometheus)
command -v wrk >/dev/null || APT+=(wrk)
if [ ${#APT[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  if [ -z "$SUDO" ] || sudo -n true 2>/dev/null; then
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${APT[@]}" >/dev/null ||
      { $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${APT[@]}" >/dev/null; } ||
      log "apt-get install ${APT[*]} failed: the Prometheus tests will skip, tools/metrics_load.sh will not run"
  else log "not root and no sudo: the Prometheus tests will skip, tools/metrics_load.sh will not run (apt-get install ${APT[*]})"
  fi
fi
if [ -x "$VENV/bin/python" ] && "$VENV/bin/python" -c 'import tensorboard, safetensors.numpy, hta.trace_analysis, pycocotools.cocoeval' 2>/dev/null; then
  echo "$VENV/bin/python"; exit 0
fi
t0=$(date +%s)
rm -rf "$VENV"
python3 -m venv "$VENV" >&2 || { log "python3 -m venv failed (apt-get install python3-venv)"; exit 2; }
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check "${PINS[@]}" >&2
log "installed $("$VENV/bin/python" -m pip list --format=freeze 2>/dev/null | grep -E -i '^(tensorboard|safetensors|numpy|holistictraceanalysis|pycocotools)==' |
    tr '\n' ' ')in $VENV ($(du -sm "$VENV" | cut -f1) MB, $(( $(date +%s) - t0 )) s)"
echo "$VENV/bin/python"
