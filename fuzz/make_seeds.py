#!/usr/bin/env python3
"""Writes the committed seed inputs of the fuzz targets (fuzz/seeds/<target>/), small and each exercising a
different path of its parser. Standard library only, except the .pt seeds: run with the reference trainer's Python
(~/.cache/yolo11-cpp/reference-venv/bin/python, torch + ultralytics) to make them from the Ultralytics fixture
(../shared/fixtures/ultralytics/yolo11n_shapes3.pt) with every tensor shrunk to one element; without torch they are
left as they are. tools/fuzz.sh adds the tests' larger fixtures (dataset YAMLs, default.yaml, the real .pt files) at
run time."""
import io
import json
import os
import pickle
import struct
import sys
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SEEDS = os.path.join(ROOT, "fuzz", "seeds")


def put(target, name, data):
    d = os.path.join(SEEDS, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())


def labels():
    put("labels", "boxes.txt", "0 0.5 0.5 0.2 0.3\n17 0.1 0.2 0.05 0.05\n")
    put("labels", "polygon.txt", "3 0.1 0.1 0.4 0.1 0.4 0.5 0.1 0.5\n")
    put("labels", "bom_crlf_dup.txt", "\ufeff1 0.5 0.5 0.1 0.1\r\n1 0.5 0.5 0.1 0.1\r\n\r\n  2\t0.3 0.3 0.0005 1.0009 \r\n")
    put("labels", "bad_columns.txt", "0 0.5 0.5 0.2\n")
    put("labels", "bad_class.txt", "80 0.5 0.5 0.2 0.2\n-1 0.5 0.5 0.1 0.1\n1.5 0.1 0.1 0.1 0.1\n")
    put("labels", "nonnumeric.txt", "0 0.5 nan 0.2 0.2\n0 1e999 0.5 0.1 0.1\n")


def list_file():
    put("list_file", "relative.txt", "images/a.jpg\n./b.png\n")
    put("list_file", "mixed.txt", "\ufeff# comment\r\nimages\\a.jpg\r\n\r\nC:\\data\\x.jpg\nmissing.png\nnotes.md\n  b.png  \n")


def dataset_yaml():
    put("dataset_yaml", "names_list.yaml", "path: .\ntrain: images/train\nval: images/train\nnames: [cat, dog]\n")
    put("dataset_yaml", "names_dict.yaml",
        "train: images/train\nval: [images/train, images/train]\ntest:\nnc: 3\nnames:\n  0: a\n  1: b\n  2: 'c: d'\n"
        "download: https://example.invalid/x.zip\nextra: 1\n")
    put("dataset_yaml", "bad_names.yaml", "train: images/train\nval: images/train\nnames:\n  0: a\n  2: c\n")
    put("dataset_yaml", "channels.yaml", "path: ../dataset\ntrain: images/train\nval: images/train\nchannels: 1\nnames: [x]\n")


def config_kv():
    put("config_kv", "basic.txt", "epochs=3\nbatch=8\nimgsz=320\ndevice=cpu")
    put("config_kv", "types.txt", "lr0=0.02\ncos_lr=True\nfreeze=10\ntime=0.5\nbatch=-1\ncache=ram\nclasses=[0,2]")
    put("config_kv", "ranges.txt", "trace_steps=5:10\nprofile_ops=3:4\nname=run 1\nproject=/tmp/x\nconf=None")
    put("config_kv", "bad.txt", "epoch=3\nbatch=abc\nimgsz=33\n=1\nmodel=yolo11s.yaml\nmodel_scale=m")


def config_yaml():
    put("config_yaml", "basic.yaml", "epochs: 3\nbatch: 8\nimgsz: 320\nfreeze: [0, 1, 2]\nname: 'a: b'\nconf: null\n")
    put("config_yaml", "nested.yaml", "epochs: {a: 1}\nbatch: [1, [2]]\nlr0: .inf\n? complex\n: key\n")
    put("config_yaml", "anchors.yaml", "base: &b 3\nepochs: *b\nclasses: !!seq [1, 2]\n")


def safetensors_bytes(tensors, meta=None, pad=True):
    header, data = {}, b""
    for name, (dtype, shape, raw) in tensors.items():
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    if meta is not None:
        header["__metadata__"] = meta
    h = json.dumps(header).encode()
    if pad:
        h += b" " * (-len(h) % 8)
    return struct.pack("<Q", len(h)) + h + data


def safetensors():
    put("safetensors", "f32.safetensors", safetensors_bytes(
        {"w": ("F32", [2, 2], struct.pack("<4f", 1, 2, 3, 4)), "b": ("I64", [], struct.pack("<q", 7))},
        {"format": "pt", "epoch": "3"}))
    put("safetensors", "mixed.safetensors", safetensors_bytes(
        {"h": ("F16", [3], b"\x00\x3c" * 3), "e": ("U8", [0, 4], b""), "z": ("BOOL", [2], b"\x01\x00"),
         "bf": ("BF16", [1, 1], b"\x80\x3f")}, pad=False))
    put("safetensors", "overlap.safetensors",
        struct.pack("<Q", 96) + b'{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},'
        b'"b":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}'.ljust(96) + b"\0" * 4)


def zip_bytes(entries, method=zipfile.ZIP_STORED):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", method) as z:
        for name, data in entries:
            z.writestr(name, data)
    return buf.getvalue()


def zips():
    yaml = "path: .\ntrain: images\nval: images\nnames: [a]\n"
    put("zip", "one_top.zip", zip_bytes([("ds/ds.yaml", yaml), ("ds/images/", ""), ("ds/labels/x.txt", "0 .5 .5 .1 .1\n")]))
    put("zip", "flat_deflate.zip", zip_bytes([("ds.yaml", yaml), ("images/x.txt", "x" * 200), ("__MACOSX/._x", "")],
                                             zipfile.ZIP_DEFLATED))
    put("zip", "two_yamls.zip", zip_bytes([("a.yaml", yaml), ("b.yml", yaml)]))
    put("zip", "traversal.zip", zip_bytes([("../evil.yaml", yaml)]))
    info = zipfile.ZipInfo("ds/link")
    info.external_attr = (0o120777 << 16)
    info.create_system = 3
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr(info, "/etc/passwd")
    put("zip", "symlink.zip", buf.getvalue())


def pickles():
    objs = {"dict": {"a": 1, "b": [1.5, None, True, "x"], 3: (1, 2), "big": 2**70, "neg": -5},
            "nested": [[[[[]]]]], "sets": {"s": {1, 2}, "f": frozenset({3}), "bytes": b"\x00\x01", "t": ()},
            "shared": (lambda l: [l, l, {"k": l}])([1, 2])}
    for name, obj in objs.items():
        for proto in (2, 4, 5):
            put("pickle", f"{name}_p{proto}.pkl", pickle.dumps(obj, protocol=proto))

    # A global referenced by name: GLOBAL 'torch FloatStorage' written by hand (pickle would look the class up).
    rebuild = (b"\x80\x02ctorch._utils\n_rebuild_tensor_v2\nq\x00((X\x07\x00\x00\x00storageq\x01ctorch\nFloatStorage\n"
               b"q\x02X\x01\x00\x00\x000q\x03X\x03\x00\x00\x00cpuq\x04K\x04tq\x05QK\x00K\x02K\x02\x86q\x06K\x02K\x01"
               b"\x86q\x07\x89ccollections\nOrderedDict\nq\x08)Rq\x09tq\x0aRq\x0b.")
    put("pickle", "rebuild_tensor.pkl", rebuild)
    put("pickle", "forbidden_global.pkl", b"\x80\x02cos\nsystem\nq\x00X\x02\x00\x00\x00idq\x01\x85q\x02Rq\x03.")


def pts():
    src = os.path.join(ROOT, "..", "shared", "fixtures", "ultralytics", "yolo11n_shapes3.pt")
    try:
        import torch
    except ImportError:
        print("make_seeds: no torch here; the .pt seeds are left as they are", file=sys.stderr)
        return
    ck = torch.load(src, map_location="cpu", weights_only=False)
    model = ck["model"]
    for m in model.modules():
        for k, p in list(m._parameters.items()):
            if p is not None:
                m._parameters[k] = torch.nn.Parameter(p.detach().flatten()[:1].clone(), requires_grad=False)
        for k, b in list(m._buffers.items()):
            if b is not None:
                m._buffers[k] = b.flatten()[:1].clone()
    d = os.path.join(SEEDS, "pt")
    os.makedirs(d, exist_ok=True)
    torch.save({"model": model, "ema": None, "train_args": {"epochs": 1, "imgsz": 64}}, os.path.join(d, "shrunk_model.pt"))
    torch.save({"ema": model, "model": None}, os.path.join(d, "shrunk_ema.pt"))
    with zipfile.ZipFile(os.path.join(d, "shrunk_model.pt")) as z:
        pkl = [n for n in z.namelist() if n.endswith("data.pkl")][0]
        put("pickle", "shrunk_model_data.pkl", z.read(pkl))


if __name__ == "__main__":
    labels(); list_file(); dataset_yaml(); config_kv(); config_yaml(); safetensors(); zips(); pickles(); pts()
