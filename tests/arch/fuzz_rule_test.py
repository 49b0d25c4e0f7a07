#!/usr/bin/env python3
"""tools/check_fuzz_sources.py fails when a listed fuzz source reaches (directly or through another header) a project
header whose source is not in fuzz/CMakeLists.txt's list, and passes once it is listed."""
import os
import sys

from planted import run_check

ROOT = os.path.realpath(os.path.join(os.path.dirname(__file__), "..", ".."))
CHECK = os.path.join(ROOT, "tools", "check_fuzz_sources.py")


def run(listed):
    files = {"fuzz/CMakeLists.txt": "set(YOLO11_FUZZ_SOURCES\n    " + " ".join(listed) + "\n    fuzz/entries.cpp)\n",
             "fuzz/entries.cpp": '#include "yolo11/config/keys.h"\n',
             "src/config/keys.cpp": '#include "yolo11/config/keys.h"\n',
             "include/yolo11/config/keys.h": '#pragma once\n#include "yolo11/core/settings.h"\n',
             "include/yolo11/core/settings.h": "#pragma once\nint parse();\n",
             "src/core/settings.cpp": "int parse() { return 1; }\n"}
    return run_check(CHECK, files)


def main():
    cases = [
        # (listed sources, expected rc, text the output must hold)
        (["src/config/keys.cpp"], 1, "lacks src/core/settings.cpp: "),
        (["src/config/keys.cpp", "src/core/settings.cpp"], 0, "every header they reach has its source listed"),
    ]
    failures = 0
    for listed, want_rc, want in cases:
        rc, out = run(listed)
        if rc != want_rc or want not in out:
            print(f"FAIL: {listed}: rc {rc} (want {want_rc}), output lacks {want!r}:\n{out}")
            failures += 1
    print(f"fuzz source rule: {len(cases) - failures}/{len(cases)} cases as expected")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
