#!/usr/bin/env python3
"""The include graph between the project's areas, and the stage vocabulary (docs/architecture.md).

Layers: derives, from the `#include "yolo11/<area>/..."` lines of src/ and include/yolo11/, which area uses which,
and fails (exit 1, naming the file and line) on an include of an area on the same or a higher layer than the
includer's, and on an area missing from LAYERS below. A layer's areas do not include each other, so the graph
cannot have a cycle.

Installed headers: a header of include/yolo11/ outside a detail/ folder includes no detail/ header (those are not
installed; include/yolo11/engine/detail/run.h is the trainer's own state).

Stages: the names of include/yolo11/instrument/stages.h (kStepStageNames, kLoaderStages) are spelled there only.
In src/, include/ and bench/ (code, not comments) it fails on
  - a stage name as a string literal handed to stage(), ScopedRange, share(), find() or test_delay();
  - a string literal equal to a name that means nothing but a stage (STAGE_ONLY below) anywhere, unless the line
    says `// not a stage` (a file format's own key that happens to be spelled the same).
Names that are also ordinary words of other vocabularies (loss, optimizer, ema, val, log, checkpoint, load, mosaic,
augment) are checked in the calls only: they are config keys, checkpoint fields and modes too.

    tools/check_layers.py [--graph] [--root DIR]   --graph also prints the area graph; --root checks another tree
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


STAGES_H = os.path.join("include", "yolo11", "instrument", "stages.h")
STAGE_ONLY = {"dataloader", "h2d", "forward", "backward", "allreduce", "to_float"}
CALL = re.compile(r'\b(?:stage|share|find|test_delay|ScopedRange(?:\s+\w+)?)\s*\((?:[^,()"]*,\s*)?"([^"\\]*)"')
LITERAL = re.compile(r'"((?:[^"\\]|\\.)*)"')


def vocabulary(root):
    """Stage names from the arrays of stages.h that spell them."""
    with open(os.path.join(root, STAGES_H)) as fh:
        text = fh.read()
    names = set()
    for array in ("kStepStageNames", "kLoaderStages"):
        m = re.search(array + r"\s*=\s*\{([^}]*)\}", text)
        if not m:
            raise SystemExit(f"check_layers: {STAGES_H} has no {array} = {{...}}")
        names.update(re.findall(r'"([^"]+)"', m.group(1)))
    return names


def code_part(line):
    """The line without its // comment (a // inside a string literal is kept)."""
    quote = None
    i = 0
    while i < len(line):
        c = line[i]
        if quote:
            if c == "\\":
                i += 1
            elif c == quote:
                quote = None
        elif c in "\"'":
            quote = c
        elif line.startswith("//", i):
            return line[:i]
        i += 1
    return line


def check_stages(root):
    names = vocabulary(root)
    problems = []
    for top in ("src", os.path.join("include", "yolo11"), "bench"):
        for dirpath, _, files in os.walk(os.path.join(root, top)):
            for f in sorted(files):
                if not f.endswith((".h", ".cpp", ".cu")):
                    continue
                path = os.path.join(dirpath, f)
                rel = os.path.relpath(path, root)
                if rel == STAGES_H:
                    continue
                with open(path, errors="replace") as fh:
                    for n, line in enumerate(fh, 1):
                        code = code_part(line)
                        for m in CALL.finditer(code):
                            if m.group(1) in names:
                                problems.append(f"{rel}:{n}: stage '{m.group(1)}' spelled as a string: use "
                                                f"StepStage / LoaderStage (instrument/stages.h)")
                        if "// not a stage" in line:
                            continue
                        for m in LITERAL.finditer(code):
                            if m.group(1) in STAGE_ONLY and not CALL.search(code[: m.end()]):
                                problems.append(f"{rel}:{n}: \"{m.group(1)}\" names a stage outside "
                                                f"instrument/stages.h: use stage_name(StepStage::...) or "
                                                f"StepStage itself")
    return problems


def main():
    root = os.path.realpath(os.path.join(os.path.dirname(__file__), ".."))
    if "--root" in sys.argv:
        root = os.path.realpath(sys.argv[sys.argv.index("--root") + 1])
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
                        if "detail" in parts and rel.startswith("include") and "detail" not in rel.split(os.sep):
                            problems.append(f"{rel}:{n}: an installed header includes {m.group(1)}: detail/ headers "
                                            f"are not installed (CMakeLists.txt), so a consumer's build would fail")
                        b = parts[0] if len(parts) > 1 else "(root)"
                        if b == a:
                            continue
                        graph.setdefault(a, set()).add(b)
                        if b not in LAYER:
                            problems.append(f"{rel}:{n}: includes area '{b}', which has no layer")
                        elif LAYER[b] >= LAYER[a]:
                            problems.append(f"{rel}:{n}: {a} (layer {LAYER[a]}) includes {m.group(1)} of {b} "
                                            f"(layer {LAYER[b]}): areas may include only lower layers")
    stage_problems = check_stages(root)
    if "--graph" in sys.argv:
        for a in sorted(graph, key=lambda x: (LAYER.get(x, 99), x)):
            print(f"{a} -> {', '.join(sorted(graph[a], key=lambda x: (LAYER.get(x, 99), x)))}")
    for p in problems + stage_problems:
        print(p, file=sys.stderr)
    if problems:
        print(f"check_layers: {len(problems)} include(s) against the layers (docs/architecture.md)", file=sys.stderr)
    if stage_problems:
        print(f"check_layers: {len(stage_problems)} stage name(s) outside the vocabulary "
              f"(include/yolo11/instrument/stages.h)", file=sys.stderr)
    if problems or stage_problems:
        return 1
    print(f"check_layers: {sum(len(v) for v in graph.values())} area edges, all downward; stage names only in "
          f"{STAGES_H}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
