#!/usr/bin/env python3
"""Convert an Ultralytics YOLO11 checkpoint (.pt) to a safetensors file that yolo11-cpp loads.

Needs Python with `ultralytics` (and therefore torch) and `safetensors` installed; not used by CI.

    python tools/export_ultralytics_weights.py yolo11n.pt                 # -> yolo11n.safetensors
    python tools/export_ultralytics_weights.py best.pt -o best.safetensors --half

The keys are the model's own state_dict keys (`model.0.conv.weight` ... `model.23.dfl.conv.weight`), which are the
keys yolo11-cpp uses, so `model=yolo11n.safetensors` / `pretrained=yolo11n.safetensors` load it directly (a different
nc transfers everything but the class outputs). The reverse direction needs no tool: weights saved by yolo11-cpp
load in Python with

    from safetensors.torch import load_file
    model = DetectionModel("yolo11n.yaml", nc=80)
    model.load_state_dict(load_file("runs/train/exp/weights/best.safetensors"))

Note on SPPF: released YOLO11 weights (trained with Ultralytics <= 8.3) expect SiLU after `model.9.cv1`; that is the
C++ default (`sppf_act=true`). The checkpoint's `sppf_act` guess is stored in the metadata.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("weights", type=Path, help="Ultralytics .pt checkpoint (e.g. yolo11n.pt)")
    ap.add_argument("-o", "--output", type=Path, help="output .safetensors (default: beside the input)")
    ap.add_argument("--half", action="store_true", help="store floats as F16 (yolo11-cpp converts back to F32)")
    ap.add_argument("--raw", action="store_true", help="use ckpt['model'] even when an 'ema' entry exists")
    args = ap.parse_args()

    try:
        import torch
        from safetensors.torch import save_file
    except ImportError as e:  # pragma: no cover - environment dependent
        print(f"error: {e}; install with: pip install ultralytics safetensors", file=sys.stderr)
        return 2

    if not args.weights.is_file():
        print(f"error: {args.weights} not found", file=sys.stderr)
        return 2
    # The checkpoint pickles Ultralytics classes: importing ultralytics makes them resolvable.
    import ultralytics  # noqa: F401

    ckpt = torch.load(args.weights, map_location="cpu", weights_only=False) if _has_weights_only(torch) else \
        torch.load(args.weights, map_location="cpu")
    model = ckpt
    if isinstance(ckpt, dict):
        model = ckpt.get("ema") if (ckpt.get("ema") is not None and not args.raw) else ckpt.get("model")
    if model is None or not hasattr(model, "state_dict"):
        print(f"error: {args.weights} holds no model ('model'/'ema' entries missing)", file=sys.stderr)
        return 2

    model = model.float()
    sd = model.state_dict()
    tensors = {}
    for k, v in sd.items():
        v = v.detach().cpu().contiguous()
        if v.is_floating_point():
            v = v.half() if args.half else v.float()
        tensors[k] = v

    head = model.model[-1]
    sppf = model.model[9] if len(model.model) > 9 else None
    sppf_act = None
    if sppf is not None and hasattr(sppf, "cv1"):
        sppf_act = not isinstance(getattr(sppf.cv1, "act", None), torch.nn.Identity)
    meta = {
        "format": "pt",
        "source": str(args.weights.name),
        "nc": str(getattr(head, "nc", "")),
        "names": json.dumps(getattr(model, "names", {}) if isinstance(getattr(model, "names", {}), dict)
                            else dict(enumerate(model.names))),
        "yaml": json.dumps(getattr(model, "yaml", {}).get("yaml_file", "") if isinstance(getattr(model, "yaml", None), dict) else ""),
        "sppf_act": "" if sppf_act is None else str(sppf_act).lower(),
        "ultralytics_version": getattr(ultralytics, "__version__", ""),
    }
    out = args.output or args.weights.with_suffix(".safetensors")
    save_file(tensors, str(out), metadata=meta)
    n_params = sum(p.numel() for p in model.parameters())
    print(f"wrote {out}: {len(tensors)} tensors, {n_params:,} parameters, nc={meta['nc']}, sppf_act={meta['sppf_act']}")
    return 0


def _has_weights_only(torch) -> bool:
    import inspect

    return "weights_only" in inspect.signature(torch.load).parameters


if __name__ == "__main__":
    sys.exit(main())
