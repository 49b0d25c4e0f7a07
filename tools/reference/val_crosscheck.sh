#!/usr/bin/env bash
# By hand, never in CI: validates the same weights with the reference (Ultralytics 8.4.50, `yolo val` standalone) and
# with `yolo11 val`, and prints both metric rows and their largest difference.
#   tools/reference/val_crosscheck.sh WEIGHTS.pt DATASET IMGSZ [BUILD_DIR] [key=value ...]
#   tools/reference/val_crosscheck.sh ../shared/fixtures/ultralytics/yolo11n_shapes3.pt shapes3 256
#   MODEL_PT=../shared/fixtures/ultralytics/yolo11n_coco128_e2.pt \
#     tools/reference/val_crosscheck.sh runs/train/train/weights/best.safetensors coco128 640
# WEIGHTS may be one of our .safetensors files: the reference then loads it into the model of MODEL_PT (a .pt of the
# same architecture and nc), so both validate the same float32 tensors.
# The reference runs from a venv (default ~/.cache/yolo11-cpp/reference-venv, made on first use: pip install
# ultralytics==8.4.50, about 2.9 GB) at 2 threads on the CPU, on a copy of the dataset under $WORK (it writes label
# caches beside the labels); the .pt's state_dict becomes the safetensors file yolo11 val reads
# (tools/export_ultralytics_weights.py). Extra key=value pairs go to both validators.
set -euo pipefail
cd "$(dirname "$0")/../.."
PT=$(realpath "$1"); DS=$2; IMGSZ=$3; BUILD=${4:-build}; shift 3; [ $# -gt 0 ] && shift
VENV=${YOLO11_REFERENCE_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/yolo11-cpp/reference-venv}
WORK=${WORK:-/tmp/yolo11-val-crosscheck}
if [ ! -x "$VENV/bin/yolo" ]; then
  python3 -m venv "$VENV" && "$VENV/bin/pip" install -q ultralytics==8.4.50 safetensors
fi
"$VENV/bin/python" -c 'import safetensors' 2>/dev/null || "$VENV/bin/pip" install -q safetensors
mkdir -p "$WORK"
src=$(tools/get_dataset.sh "$DS" >/dev/null 2>&1; echo "datasets/$DS")
rm -rf "$WORK/$DS" && cp -r "$src" "$WORK/$DS" && find "$WORK/$DS" -name '*.cache' -delete
sed "s|^path:.*|path: $WORK/$DS|" "configs/datasets/$DS.yaml" > "$WORK/$DS.yaml"
if [[ "$PT" == *.safetensors ]]; then
  ST=$PT; PT=$(realpath "${MODEL_PT:?a .safetensors WEIGHTS needs MODEL_PT=<a .pt of the same architecture>}")
else
  ST="$WORK/$(basename "${PT%.pt}").safetensors"
  "$VENV/bin/python" tools/export_ultralytics_weights.py "$PT" -o "$ST" >/dev/null
fi
"$VENV/bin/python" - "$PT" "$WORK/$DS.yaml" "$IMGSZ" "$WORK/reference.json" "$ST" "$@" <<'PY'
import json, sys
import torch
import ultralytics.utils.torch_utils as tu
from ultralytics import YOLO
tu.NUM_THREADS = 2
torch.set_num_threads(2)
from safetensors.torch import load_file
pt, data, imgsz, out, st = sys.argv[1:6]
extra = dict(a.split("=", 1) for a in sys.argv[6:])
model = YOLO(pt)
model.model.float()
model.model.load_state_dict(load_file(st))  # the float32 tensors yolo11 val reads (fp16 .pt values widened)
# SPPF.cv1's activation is part of the graph, not of the weights: 8.4.50 builds it without one, released YOLO11 and
# this project (sppf_act=true, the default) with SiLU. Follow the weights file's sppf_act (default true).
from safetensors import safe_open
with safe_open(st, "np") as f:
    sppf_act = (f.metadata() or {}).get("sppf_act", "true") == "true"
for mod in model.model.modules():
    if type(mod).__name__ == "SPPF":
        mod.cv1.act = torch.nn.SiLU() if sppf_act else torch.nn.Identity()
m = model.val(data=data, imgsz=int(imgsz), batch=16, conf=0.001, iou=0.7, device="cpu", plots=False,
                 verbose=False, project=out + ".runs", exist_ok=True, **extra)
b = m.box
json.dump({"precision": b.mp, "recall": b.mr, "mAP50": b.map50, "mAP50-95": b.map}, open(out, "w"))
PY
"$BUILD/yolo11" val weights="$ST" data="$WORK/$DS.yaml" imgsz="$IMGSZ" batch=16 plots=false verbose=false \
  project="$WORK/ours" name=v exist_ok=true "$@" 2>&1 | tee "$WORK/ours.log" | grep -E "^\s+all\s" > "$WORK/ours.row"
python3 - "$WORK/reference.json" "$WORK/ours.row" "$WORK/ours.log" <<'PY'
import json, sys
ref = json.load(open(sys.argv[1]))
row = open(sys.argv[2]).read().split()
# the table prints 3 significant digits; the exact values are in the log's metrics line when present
ours = dict(zip(["precision", "recall", "mAP50", "mAP50-95"], map(float, row[3:7])))
for line in open(sys.argv[3]):
    if "metrics (exact):" in line:
        ours = json.loads(line.split("metrics (exact):", 1)[1])
print("reference", {k: round(v, 6) for k, v in ref.items()})
print("yolo11   ", {k: round(v, 6) for k, v in ours.items()})
print("max |diff|", max(abs(ref[k] - ours[k]) for k in ref))
PY
