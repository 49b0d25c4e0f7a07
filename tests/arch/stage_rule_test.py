#!/usr/bin/env python3
"""tools/check_layers.py's stage rule fails on each way of spelling a stage outside include/yolo11/instrument/stages.h
and passes the allowed forms (the enum, another word in a call, a marked file-format key, a comment)."""
import os
import sys

from planted import run_check

ROOT = os.path.realpath(os.path.join(os.path.dirname(__file__), "..", ".."))
CHECK = os.path.join(ROOT, "tools", "check_layers.py")
STAGES = os.path.join("include", "yolo11", "instrument", "stages.h")


def run(files):
    with open(os.path.join(ROOT, STAGES)) as fh:
        return run_check(CHECK, {STAGES: fh.read(), **files})


def main():
    bad = {
        'auto s = prof.stage("forward");': "stage 'forward' spelled as a string",
        'instrument::ScopedRange r("mosaic");': "stage 'mosaic' spelled as a string",
        'double d = w.share("val");': "stage 'val' spelled as a string",
        'test_delay(r, "optimizer");': "stage 'optimizer' spelled as a string",
        'const char* k[] = {"h2d", "x"};': '"h2d" names a stage',
        'if (name == "allreduce") return;': '"allreduce" names a stage',
    }
    good = [
        "auto s = prof.stage(StepStage::forward);",
        'auto s = prof.stage("export");  // a tool\'s own stage',
        'cfg.key("optimizer");',
        'p.str("forward");  // not a stage: a pickled attribute',
        '// prof.stage("forward") in a comment',
        'const char* url = "http://x//y"; auto s = prof.stage(StepStage::loss);',
    ]
    failures = 0
    for line, want in bad.items():
        rc, out = run({"src/instrument/bad.cpp": f"void f() {{\n  {line}\n}}\n"})
        if rc != 1 or want not in out or "src/instrument/bad.cpp:2" not in out:
            print(f"FAIL: {line!r} not reported as {want!r} at bad.cpp:2 (rc {rc}):\n{out}")
            failures += 1
    rc, out = run({"src/instrument/good.cpp": "void f() {\n" + "\n".join("  " + g for g in good) + "\n}\n"})
    if rc != 0:
        print(f"FAIL: allowed forms reported (rc {rc}):\n{out}")
        failures += 1
    print(f"stage rule: {len(bad)} bad forms reported, {len(good)} allowed forms passed" if not failures
          else f"{failures} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
