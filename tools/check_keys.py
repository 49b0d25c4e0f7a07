#!/usr/bin/env python3
"""Every config key does something: each key of TrainConfig's table (src/config/config_keys.cpp, the keys of
configs/default.yaml) names a TrainConfig member that code outside config/ reads.

A key whose member is only parsed, validated and written back to args.yaml changes nothing a run does; a user who sets
it is misled. Such keys are allowed only in ACCEPTED below, each with the reason it exists, and an entry whose member
has since become read is reported too (the reason went stale).

A read is `cfg.member`, `c.member`, `cfg_.member`, `config.member`, `saved.member`, `requested.member`, `hyp.member`
(a section: config::Hyperparameters) (or `->`) in
src/, include/ or bench/ outside the config area.

    tools/check_keys.py [--root DIR] [--list]     --list also prints each key with the files that read it
"""
import os
import re
import sys

TABLE = os.path.join("src", "config", "config_keys.cpp")
CONFIG_DIRS = (os.path.join("src", "config") + os.sep, os.path.join("include", "yolo11", "config") + os.sep)

# key -> why it is accepted although no code outside config/ reads it.
ACCEPTED = {
    "task": "Ultralytics files carry it; only 'detect' is accepted (the table rejects the others)",
    "mode": "Ultralytics files carry it; the yolo11 subcommand (train, val, predict) chooses the mode",
    "profile": "Ultralytics' export-profiling switch, accepted so its YAML files load; documented as no effect",
    "copy_paste": "segmentation-only augmentation in Ultralytics; the table accepts only 0 for detection",
}

VARS = r"(?:cfg|cfg_|c|config|saved|requested|hyp)"


def key_members(root):
    """(key, member, line) of each entry of the key table."""
    with open(os.path.join(root, TABLE)) as fh:
        src = fh.read()
    out = []
    for m in re.finditer(r"t\.push_back\((.*?)\);\n", src, re.S):
        body = m.group(1)
        k = re.match(r'\s*(?:in<\w+>\()?\{?\s*(?:\w+\()?"(\w+)"', body)
        if not k:
            continue
        member = re.search(r"&C::(\w+)", body) or re.search(r"\bc\.(\w+)\s*=[^=]", body)
        line = src.count("\n", 0, m.start()) + 1
        out.append((k.group(1), member.group(1) if member else k.group(1), line))
    return out


def sources(root):
    for top in ("src", "include", "bench"):
        for d, _, files in os.walk(os.path.join(root, top)):
            for f in files:
                if not f.endswith((".cpp", ".h", ".cc", ".hpp")):
                    continue
                rel = os.path.relpath(os.path.join(d, f), root)
                if rel.startswith(CONFIG_DIRS):
                    continue
                with open(os.path.join(root, rel), errors="replace") as fh:
                    yield rel, fh.read()


def main(argv):
    root = os.path.realpath(os.path.join(os.path.dirname(__file__), ".."))
    if "--root" in argv:
        root = argv[argv.index("--root") + 1]
    keys = key_members(root)
    if len(keys) < 1:
        print(f"{TABLE}: no key found in the table (has its form changed? update tools/check_keys.py)")
        return 1
    text = dict(sources(root))
    errors = []
    for key, member, line in keys:
        rx = re.compile(VARS + r"\s*(?:\.|->)\s*" + re.escape(member) + r"\b")
        readers = sorted(p for p, t in text.items() if rx.search(t))
        if "--list" in argv:
            print(f"{key:24} {member:24} {', '.join(readers) or '-'}")
        if not readers and key not in ACCEPTED:
            errors.append(f"{TABLE}:{line}: key '{key}' (TrainConfig::{member}) is read nowhere outside config/: "
                          "use it, remove it, or list it in ACCEPTED of tools/check_keys.py with the reason")
        if readers and key in ACCEPTED:
            errors.append(f"{TABLE}:{line}: key '{key}' is listed as unread in tools/check_keys.py but "
                          f"{readers[0]} reads it: remove its ACCEPTED entry")
    for k in sorted(set(ACCEPTED) - {k for k, _, _ in keys}):
        errors.append(f"tools/check_keys.py: ACCEPTED names '{k}', which the key table does not have")
    for e in errors:
        print(e)
    print(f"config keys: {len(keys)} in the table, {len(keys) - len(ACCEPTED)} read outside config/, "
          f"{len(ACCEPTED)} accepted unread; {len(errors)} problem(s)")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
