#!/usr/bin/env python3
"""The fuzz build's parser library names every source its parsers need.

fuzz/CMakeLists.txt lists the sources of libyolo11_parsers by hand (the parsers, not the whole library, so coverage
stays on them). A parser that starts calling a function of another source links in the main build and fails to link
only in the fuzz build, a CI phase that comes half an hour in. This check follows the project includes of each listed
source (transitively) and fails when a header include/yolo11/AREA/NAME.h is reached whose src/AREA/NAME.cpp is not
listed, unless ACCEPTED below says why that header is needed for its types only.

    tools/check_fuzz_sources.py [--root DIR]
"""
import os
import re
import sys

LIST = os.path.join("fuzz", "CMakeLists.txt")

# source -> why the listed parsers reach its header without calling into it.
ACCEPTED = {
    "src/data/transforms.cpp": "data/labels.h includes data/transforms.h for the Box type; no parser calls a transform",
}

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def listed_sources(root):
    with open(os.path.join(root, LIST)) as fh:
        m = re.search(r"set\(YOLO11_FUZZ_SOURCES(.*?)\)", fh.read(), re.S)
    if not m:
        sys.exit(f"{LIST}: no set(YOLO11_FUZZ_SOURCES ...) found")
    return m.group(1).split()


def resolve(root, name, including):
    for base in ("include", os.path.dirname(including), "fuzz", "src"):
        rel = os.path.normpath(os.path.join(base, name))
        if os.path.isfile(os.path.join(root, rel)):
            return rel
    return None


def missing(root):
    """(needed source, header that needs it, listed source that reaches the header), sorted."""
    listed = listed_sources(root)
    reached = {}  # file -> the listed source it was first reached from
    stack = [(f, f) for f in listed]
    while stack:
        f, origin = stack.pop()
        if f in reached or not os.path.isfile(os.path.join(root, f)):
            continue
        reached[f] = origin
        with open(os.path.join(root, f), errors="replace") as fh:
            for name in INCLUDE.findall(fh.read()):
                rel = resolve(root, name, f)
                if rel:
                    stack.append((rel, origin))
    prefix = os.path.join("include", "yolo11") + os.sep
    out = []
    for f, origin in reached.items():
        if not f.startswith(prefix):
            continue
        src = os.path.join("src", f[len(prefix):-2] + ".cpp")
        if os.path.isfile(os.path.join(root, src)) and src not in listed and src not in ACCEPTED:
            out.append((src, f, origin))
    return sorted(out)


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    if len(sys.argv) == 3 and sys.argv[1] == "--root":
        root = sys.argv[2]
    elif len(sys.argv) != 1:
        sys.exit(__doc__)
    bad = missing(root)
    for src, header, origin in bad:
        print(f"{LIST}: YOLO11_FUZZ_SOURCES lacks {src}: {origin} reaches {header}. Add {src} to the list, or, if "
              f"only the header's types are used, add it to ACCEPTED in tools/check_fuzz_sources.py with the reason")
    if bad:
        return 1
    print(f"fuzz sources: {len(listed_sources(root))} listed, every header they reach has its source listed "
          f"({len(ACCEPTED)} accepted)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
