#!/usr/bin/env python3
"""The include graph between the project's areas (docs/architecture.md, "Areas and layers").

Derives, from the `#include "yolo11/<area>/..."` lines of src/ and include/yolo11/, which area uses which, and fails
(exit 1, naming the file and line) on an include of an area on the same or a higher layer than the includer's, and
on an area missing from LAYERS below. A layer's areas do not include each other, so the graph cannot have a cycle.

    tools/check_layers.py [--graph]        --graph also prints the area graph
"""
import os
import re
import sys

# Lowest first. "(root)" holds include/yolo11/build_info.h (generated) and pch.h.
LAYERS = [
    ["(root)", "core"],                   # compat, device plan, usable cores, strings
    ["io"],                               # every file format and the /metrics server
    ["config", "instrument"],             # settings; timing, sampling, diagnosis
    ["data", "model", "loss", "dist"],    # dataset + loader; network; loss + assigner; process groups
    ["plot"],                             # every picture
    ["metrics"],                          # mAP, confusion matrix
    ["engine"],                           # trainer, validator, predictor
    ["bench"],                            # sweeps and benchmarks
    ["cli"],                              # the yolo11 front end
    ["app"],                              # executables' main()
]
LAYER = {a: i for i, areas in enumerate(LAYERS) for a in areas}
INCLUDE = re.compile(r'\s*#\s*include\s+"yolo11/([^"]+)"')


def area_of(rel):
    parts = rel.split("/")
    if parts[0] == "include":
        return parts[2] if len(parts) > 3 else "(root)"
    return parts[1] if len(parts) > 2 else "(root)"


def main():
    root = os.path.realpath(os.path.join(os.path.dirname(__file__), ".."))
    problems, graph = [], {}
    for top in ("src", os.path.join("include", "yolo11")):
        for dirpath, _, files in os.walk(os.path.join(root, top)):
            for f in sorted(files):
                if not f.endswith((".h", ".cpp", ".cu")):
                    continue
                path = os.path.join(dirpath, f)
                rel = os.path.relpath(path, root)
                a = area_of(rel)
                if a not in LAYER:
                    problems.append(f"{rel}: area '{a}' is not in tools/check_layers.py LAYERS: give it a layer")
                    continue
                with open(path, errors="replace") as fh:
                    for n, line in enumerate(fh, 1):
                        m = INCLUDE.match(line)
                        if not m:
                            continue
                        parts = m.group(1).split("/")
                        b = parts[0] if len(parts) > 1 else "(root)"
                        if b == a:
                            continue
                        graph.setdefault(a, set()).add(b)
                        if b not in LAYER:
                            problems.append(f"{rel}:{n}: includes area '{b}', which has no layer")
                        elif LAYER[b] >= LAYER[a]:
                            problems.append(f"{rel}:{n}: {a} (layer {LAYER[a]}) includes {m.group(1)} of {b} "
                                            f"(layer {LAYER[b]}): areas may include only lower layers")
    if "--graph" in sys.argv:
        for a in sorted(graph, key=lambda x: (LAYER.get(x, 99), x)):
            print(f"{a} -> {', '.join(sorted(graph[a], key=lambda x: (LAYER.get(x, 99), x)))}")
    for p in problems:
        print(p, file=sys.stderr)
    if problems:
        print(f"check_layers: {len(problems)} include(s) against the layers (docs/architecture.md)", file=sys.stderr)
        return 1
    print(f"check_layers: {sum(len(v) for v in graph.values())} area edges, all downward")
    return 0


if __name__ == "__main__":
    sys.exit(main())
