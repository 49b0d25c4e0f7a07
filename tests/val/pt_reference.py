"""The reference (Ultralytics 8.4.50) on a .pt that yolo11-cpp wrote (save_pt=true), for tests/val/test_val_pt.cpp.

    pt_reference.py OURS.pt OURS.safetensors DATA.yaml IMGSZ OUT.json

Loads OURS.pt with the reference's own loader, compares its state_dict with the run's float32 weights rounded to
float16 (what the .pt stores), validates it with the reference validator (batch 16, conf 0.001, iou 0.7, CPU,
2 threads) and writes {"state_dict": {...}, "metrics": {...}} to OUT.json. DATA.yaml must point at a copy of the
dataset: the reference writes label caches beside the labels.
"""
import json
import sys

import torch
import ultralytics.utils.torch_utils as tu
from safetensors.torch import load_file
from ultralytics import YOLO
from ultralytics.nn.tasks import load_checkpoint

tu.NUM_THREADS = 2
torch.set_num_threads(2)

pt, weights, data, imgsz, out = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
model, ckpt = load_checkpoint(pt)
ours = load_file(weights)
sd = model.state_dict()
stored = {k: (v.half().float() if v.is_floating_point() else v) for k, v in ours.items()}
unequal = [k for k in stored if k not in sd or not torch.equal(sd[k], stored[k])]
result = {
    "state_dict": {
        "keys": len(sd),
        "ours": len(ours),
        "same_order": list(sd) == list(ours),
        "unequal": unequal[:10],
    },
    "class": type(model).__name__,
    "names": model.names,
    "stride": model.stride.tolist(),
}
r = YOLO(pt).val(data=data, imgsz=imgsz, batch=16, conf=0.001, iou=0.7, device="cpu", plots=False, half=False,
                 verbose=False)
result["metrics"] = r.results_dict
with open(out, "w") as f:
    json.dump(result, f)
