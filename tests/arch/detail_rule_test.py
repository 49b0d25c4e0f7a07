#!/usr/bin/env python3
"""tools/check_layers.py fails when an installed header (include/yolo11/ outside detail/) includes a detail/ header,
which `cmake --install` leaves out, and allows detail/ headers in sources and in other detail/ headers."""
import os
import sys

from planted import run_check

ROOT = os.path.realpath(os.path.join(os.path.dirname(__file__), "..", ".."))
CHECK = os.path.join(ROOT, "tools", "check_layers.py")
STAGES = os.path.join("include", "yolo11", "instrument", "stages.h")
DETAIL = '#pragma once\n#include "yolo11/engine/detail/run.h"\n'


def run(files):
    with open(os.path.join(ROOT, STAGES)) as fh:
        return run_check(CHECK, {STAGES: fh.read(), "include/yolo11/engine/detail/run.h": "#pragma once\n", **files})


def main():
    failures = 0
    rc, out = run({"include/yolo11/engine/trainer.h": DETAIL})
    if rc != 1 or "include/yolo11/engine/trainer.h:2: an installed header includes engine/detail/run.h" not in out:
        print(f"FAIL: an installed header including a detail/ header was not reported (rc {rc}):\n{out}")
        failures += 1
    rc, out = run({"include/yolo11/engine/detail/recovery.h": DETAIL, "src/engine/trainer.cpp": DETAIL})
    if rc != 0:
        print(f"FAIL: detail/ included from a detail/ header and a source was reported (rc {rc}):\n{out}")
        failures += 1
    print("detail rule: an installed header's include reported, a source's and a detail header's allowed"
          if not failures else f"{failures} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
