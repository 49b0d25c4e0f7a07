#!/usr/bin/env python3
"""By hand, never in CI: trains with the reference (Ultralytics 8.4.50) and prints, per epoch, the seconds of its
training loop and of its validation, the line `yolo11-train` prints as `epoch N/M: train X s, val Y s`, so the two
trainers' epochs are set side by side (docs/benchmarks.md, issue 31).

    VENV/bin/python tools/reference/train_epochs.py DATA.yaml [--threads 2] [key=value ...]
    e.g. ... /tmp/ref/coco128.yaml --threads 2 epochs=2 imgsz=640 batch=16 workers=2

DATA.yaml must point at a copy of the dataset outside ../shared (the reference writes label caches beside the
labels). The model is yolo11n.yaml from scratch (pretrained=False: nothing is downloaded), device cpu, plots off,
unless key=value says otherwise. --threads N overrides the reference's pinning to cpu_count - 1 intra-op threads
(at import and in select_device); --threads 0 keeps the reference's own choice (its default, 1 on 2 cores).
Train = on_train_epoch_start to on_train_epoch_end (the batch loop, loader waits included); val = the trainer's
validate() call.
"""
import argparse
import time

import torch
from ultralytics import YOLO
from ultralytics.utils import torch_utils


def value(v):
    for cast in (int, float):
        try:
            return cast(v)
        except ValueError:
            pass
    return {"true": True, "false": False, "True": True, "False": False}.get(v, v)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("data")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("overrides", nargs="*")
    a = ap.parse_intermixed_args()
    if a.threads > 0:
        torch_utils.NUM_THREADS = a.threads
        torch.set_num_threads(a.threads)
    args = dict(data=a.data, device="cpu", pretrained=False, plots=False, epochs=2, imgsz=640, batch=16,
                project="/tmp/yolo11-ref-train", name="run", exist_ok=True, verbose=False)
    args.update({k: value(v) for k, v in (o.split("=", 1) for o in a.overrides)})
    model = YOLO(args.pop("model", "yolo11n.yaml"))
    marks = {}

    def epoch_start(trainer):
        marks["start"] = time.perf_counter()

    def epoch_end(trainer):
        marks["train"] = time.perf_counter() - marks["start"]

    def pretrain(trainer):
        validate = trainer.validate

        def timed():
            t0 = time.perf_counter()
            out = validate()
            marks["val"] = time.perf_counter() - t0
            return out

        trainer.validate = timed

    def fit_epoch_end(trainer):
        if marks.get("printed") == trainer.epoch:  # final_eval fires on_fit_epoch_end once more, for best.pt
            return
        marks["printed"] = trainer.epoch
        print(f"reference epoch {trainer.epoch + 1}/{trainer.epochs}: train {marks['train']:.1f}s, "
              f"val {marks.get('val', 0.0):.1f}s, {torch.get_num_threads()} intra-op threads", flush=True)
        marks.pop("val", None)

    model.add_callback("on_pretrain_routine_start", pretrain)
    model.add_callback("on_train_epoch_start", epoch_start)
    model.add_callback("on_train_epoch_end", epoch_end)
    model.add_callback("on_fit_epoch_end", fit_epoch_end)
    model.train(**args)


if __name__ == "__main__":
    main()
