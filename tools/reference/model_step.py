#!/usr/bin/env python3
"""By hand, never in CI: the reference's raw YOLO11 training step (Ultralytics 8.4.50's DetectionModel, forward on a
random batch, loss = mean(x²) of the head's box and class outputs, backward), what `yolo11-bench-model` times on our
side (its loss: mean(x²) of each level's head output, the same values split per level), so the two are set side by side on the same LibTorch and threads (docs/benchmarks.md, issue 31).

    VENV/bin/python tools/reference/model_step.py [--scale n] [--batch 8] [--imgsz 640] [--iters 3] [--warmup 1]
                                                  [--threads 2] [--profile DIR] [--amp]

Prints one line per layout (NCHW, channels_last): mean and min seconds of the timed steps, images/s. --profile also
records one more step per layout with torch.profiler and writes DIR/<layout>/ops_ref.txt: the operator calls and self
time under `forward` and under `backward`, by operator, the counts our ops.csv has per stage.
"""
import argparse
import collections
import contextlib
import os
import time

import torch
from torch.profiler import ProfilerActivity, profile, record_function
from ultralytics.nn.tasks import DetectionModel
from ultralytics.utils import torch_utils


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--scale", default="n")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--imgsz", type=int, default=640)
    ap.add_argument("--iters", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--profile", default="")
    ap.add_argument("--amp", action="store_true", help="forward and loss under CPU bfloat16 autocast")
    a = ap.parse_args()
    torch_utils.NUM_THREADS = a.threads  # the reference pins cpu_count - 1 threads at import
    torch.set_num_threads(a.threads)
    print(f"reference yolo11{a.scale} batch {a.batch} imgsz {a.imgsz}, torch {torch.__version__}, "
          f"{torch.get_num_threads()} intra-op threads, {a.iters} timed iters after {a.warmup} warmup, "
          f"{'bfloat16 autocast' if a.amp else 'float32'}", flush=True)
    torch.manual_seed(0)
    x = torch.rand(a.batch, 3, a.imgsz, a.imgsz)
    for channels_last in (False, True):
        m = DetectionModel(f"yolo11{a.scale}.yaml", nc=80, verbose=False)
        if channels_last:
            m = m.to(memory_format=torch.channels_last)
        m.train()
        inp = x.contiguous(memory_format=torch.channels_last) if channels_last else x

        def step(scoped=False):
            m.zero_grad()
            with record_function("forward") if scoped else contextlib.nullcontext(), \
                    torch.autocast("cpu", dtype=torch.bfloat16, enabled=a.amp):
                out = m(inp)  # train mode: {"boxes": (b, 4·reg_max, A), "scores": (b, nc, A), "feats": neck maps}
                loss = out["boxes"].float().square().mean() + out["scores"].float().square().mean()
            with record_function("backward") if scoped else contextlib.nullcontext():
                loss.backward()

        for _ in range(a.warmup):
            step()
        times = []
        for _ in range(a.iters):
            t0 = time.perf_counter()
            step()
            times.append(time.perf_counter() - t0)
        name = "train fwd+bwd, channels_last" if channels_last else "train fwd+bwd, NCHW"
        mean = sum(times) / len(times)
        print(f"{name:<36} mean {mean:.3f} s  min {min(times):.3f} s  {a.batch / mean:.1f} img/s", flush=True)
        if a.profile:
            out = os.path.join(a.profile, "channels_last" if channels_last else "nchw")
            os.makedirs(out, exist_ok=True)
            with profile(activities=[ProfilerActivity.CPU]) as p:
                step(scoped=True)
            write_counts(p, os.path.join(out, "ops_ref.txt"))
            print(f"  operator profile of one step: {out}/ops_ref.txt", flush=True)


def write_counts(p, path):
    """Operator calls and self µs under each of the `forward` / `backward` scopes (by start time, any thread)."""
    events = [e for e in p.events()]
    scopes = [(e.name, e.time_range.start, e.time_range.end) for e in events if e.name in ("forward", "backward")]
    calls = collections.defaultdict(lambda: collections.Counter())
    self_us = collections.defaultdict(lambda: collections.Counter())
    for e in events:
        if e.name in ("forward", "backward"):
            continue
        for name, t0, t1 in scopes:
            if t0 <= e.time_range.start <= t1:
                calls[name][e.name] += 1
                self_us[name][e.name] += e.self_cpu_time_total
                break
    with open(path, "w") as fh:
        for stage in ("forward", "backward"):
            total = sum(calls[stage].values())
            fh.write(f"{stage}: {total} calls, {sum(self_us[stage].values()) / 1e3:.1f} ms self\n")
            for op, n in calls[stage].most_common():
                fh.write(f"  {n:6d}  {self_us[stage][op] / 1e3:9.2f} ms  {op}\n")


if __name__ == "__main__":
    main()
