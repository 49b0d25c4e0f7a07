#!/usr/bin/env python3
"""The safetensors package's reader on one of our weight files (tests/io/test_safetensors.cpp, test-only).

    read_with_safetensors.py FILE OUT_JSON

Opens FILE with safetensors.safe_open (numpy framework) and writes
    {"metadata": {...}, "tensors": {name: {"dtype": "F32", "shape": [...], "sum": float, "first": float}}}
in the file's order (safe_open's keys() are sorted; the order is taken from the header's offsets).
"""
import json
import sys

import numpy as np
from safetensors import safe_open

DTYPES = {np.dtype("float32"): "F32", np.dtype("float16"): "F16", np.dtype("float64"): "F64",
          np.dtype("int64"): "I64", np.dtype("int32"): "I32", np.dtype("uint8"): "U8", np.dtype("bool"): "BOOL"}


def main() -> None:
    out = {"tensors": {}}
    with safe_open(sys.argv[1], framework="np") as f:
        out["metadata"] = f.metadata() or {}
        for name in f.keys():
            a = f.get_tensor(name)
            flat = a.reshape(-1)
            out["tensors"][name] = {"dtype": DTYPES.get(a.dtype, str(a.dtype)), "shape": list(a.shape),
                                    "sum": float(flat.astype(np.float64).sum()) if flat.size else 0.0,
                                    "first": float(flat[0]) if flat.size else 0.0}
    with open(sys.argv[2], "w") as fh:
        json.dump(out, fh)


if __name__ == "__main__":
    main()
