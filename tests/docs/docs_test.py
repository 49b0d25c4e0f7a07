#!/usr/bin/env python3
"""Runs the commands the documentation shows, as written.

Sources: every ```bash block of a Markdown file (README.md, docs/*.md), and the "Examples:" of `yolo11 help`.
Every command line of a block is run, in order, from a scratch directory laid out like the repository root
(build/, configs/, tools/ and datasets/ linked in; runs/ and everything a command writes stay in the scratch
directory), and must exit 0. Small settings are substituted only where the document says so, in an HTML comment
right before the block (invisible when rendered):

    <!-- docs-test
    append-train epochs=1 imgsz=64        # appended to each train command of the block (also yolo11-train, sweeps'
                                          # children get it through the sweep); append-MODE for val, predict, sweep,
                                          # and append-verify for sweeps that verify a run's advice (--verify, verify=)
    replace OLD => NEW                    # literal text replacement (NEW may be empty)
    env NAME=VALUE                        # exported before the block
    before COMMAND                        # run before the block (fixtures the text assumes, e.g. a .pt to fine-tune)
    as-written TEXT                       # commands holding TEXT get no appended settings
    allow-exit CODE TEXT: REASON          # commands holding TEXT may also exit CODE (a documented outcome)
    skip-command PREFIX: REASON           # a command starting with PREFIX is not run, for the stated reason
    skip: REASON                          # the whole block is not run, for the stated reason
    timeout SECONDS                       # for the whole block (default 600)
    -->

Commands that are templates rather than commands (they hold `...`, `<...>` or an upper-case placeholder such as
RUN_DIR) and the commands of skipped blocks are still checked statically, as are the commands written inline in
the text (`build/yolo11 ...`, `tools/....sh ...`): the program exists (a built executable or a file of the
repository), a yolo11 mode exists, every key=value key is one the mode accepts (`yolo11 help`), and every
configs/ file named exists.

Usage: docs_test.py --source SRC --build BUILD (--doc FILE.md | --help-examples | --self-test)
"""
import argparse
import fcntl
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

# `yolo11 help`'s examples are not Markdown; their small settings are stated here, the one place for them.
HELP_DIRECTIVES = """
append-sweep steps=2 warmup=1 imgsz=64 batch=8 workers=0
"""

PLACEHOLDER = re.compile(r"\.\.\.|<[^>]+>|\b[A-Z][A-Z0-9]*_[A-Z0-9_]*\b(?!=)|\b(?:MODE|NAME|RUN|PATH|FILE|DIR|N)\b(?!=)")
MODES = ("train", "val", "predict", "analyze", "synth", "sweep", "help")
EXE_MODE = {"yolo11-train": "train", "yolo11-sweep": "sweep", "yolo11-val": "val", "yolo11-predict": "predict",
            "yolo11-analyze": "analyze", "yolo11-synth": "synth"}


class Failure(Exception):
    pass


# ---------------------------------------------------------------- extraction

class Block:
    def __init__(self, doc, line, text, directives):
        self.doc, self.line, self.text, self.directives = doc, line, text, directives

    def where(self):
        return f"{self.doc}:{self.line}"


def parse_directives(text, where):
    d = {"append": {}, "allow_exit": [], "as_written": [], "replace": [], "env": [], "before": [], "skip_command": [], "skip": None, "timeout": 600}
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            continue
        word, _, rest = line.partition(" ")
        rest = rest.strip()
        if word.startswith("append-") and (word[7:] in MODES or word[7:] == "verify"):
            d["append"].setdefault(word[7:], []).append(rest)
        elif word == "replace" and "=>" in rest:
            old, _, new = rest.partition("=>")
            d["replace"].append((old.strip(), new.strip()))
        elif word == "allow-exit" and re.match(r"^\d+ \S.*: \S", rest):
            head, _, reason = rest.partition(": ")
            code, _, text = head.partition(" ")
            d["allow_exit"].append((int(code), text.strip(), reason.strip()))
        elif word == "as-written" and rest:
            d["as_written"].append(rest)
        elif word == "env" and "=" in rest:
            d["env"].append(rest)
        elif word == "before" and rest:
            d["before"].append(rest)
        elif word == "skip-command" and ":" in rest:
            prefix, _, reason = rest.partition(":")
            if not reason.strip():
                raise Failure(f"{where}: skip-command needs a reason after ':'")
            d["skip_command"].append((prefix.strip(), reason.strip()))
        elif word == "skip:" and rest:
            d["skip"] = rest
        elif word == "timeout" and rest.isdigit():
            d["timeout"] = int(rest)
        else:
            raise Failure(f"{where}: unknown docs-test directive '{line}' (see tests/docs/docs_test.py)")
    return d


def extract(path, rel):
    """Returns (blocks, inline commands [(line, text)]) of one Markdown file."""
    lines = open(path, encoding="utf-8").read().splitlines()
    blocks, inline = [], []
    pending, pending_line = None, 0
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.strip().startswith("<!-- docs-test"):
            start = i
            body = [line.strip()[len("<!-- docs-test"):]]
            while "-->" not in body[-1]:
                i += 1
                if i == len(lines):
                    raise Failure(f"{rel}:{start + 1}: unterminated docs-test comment")
                body.append(lines[i])
            body[-1] = body[-1].split("-->")[0]
            pending, pending_line = "\n".join(body), start + 1
            i += 1
            continue
        fence = re.match(r"^(\s*)```(\w*)", line)
        if fence:
            lang, start = fence.group(2), i
            i += 1
            body = []
            while i < len(lines) and not lines[i].strip().startswith("```"):
                body.append(lines[i])
                i += 1
            if lang in ("bash", "sh", "shell"):
                d = parse_directives(pending or "", f"{rel}:{pending_line}")
                blocks.append(Block(rel, start + 1, "\n".join(body), d))
            elif pending:
                raise Failure(f"{rel}:{pending_line}: a docs-test comment must come right before a ```bash block")
            pending = None
            i += 1
            continue
        if pending and line.strip():
            raise Failure(f"{rel}:{pending_line}: a docs-test comment must come right before a ```bash block")
        for span in re.findall(r"`([^`\n]+)`", line):
            if is_command(span):
                inline.append((i + 1, span))
        i += 1
    return blocks, inline


def is_command(text):
    words = text.split()
    while words and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", words[0]):
        words = words[1:]
    return bool(words) and re.match(r"^(\./)?((build/(bench/)?)?yolo11(-[a-z]+)?|tools/[\w/-]+\.(sh|py))$", words[0]) is not None


# ---------------------------------------------------------------- commands

def logical_lines(text):
    """Joins backslash continuations, drops comment lines and trailing comments."""
    out, cur, first = [], "", 0
    for n, raw in enumerate(text.splitlines(), 1):
        if not cur:
            first = n
        cur += raw
        if cur.endswith("\\"):
            cur = cur[:-1] + " "
            continue
        line = strip_comment(cur).strip()
        cur = ""
        if line:
            out.append((first, re.sub(r"\s+", " ", line)))
    return out


def strip_comment(line):
    quote = None
    for k, ch in enumerate(line):
        if quote:
            if ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (k == 0 or line[k - 1] in " \t"):
            return line[:k]
    return line


def segments(line):
    """The commands of a line joined by &&, || or ; (not inside quotes)."""
    parts, cur, quote, k = [], "", None, 0
    while k < len(line):
        ch = line[k]
        if quote:
            quote = None if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif line.startswith("&&", k) or line.startswith("||", k) or ch == ";":
            parts.append(cur.strip())
            cur = ""
            k += 1 if ch == ";" else 2
            continue
        cur += ch
        k += 1
    parts.append(cur.strip())
    return [p for p in parts if p]


def program_of(words):
    """(index of the program word, its mode or None) past env assignments and wrappers."""
    k = 0
    while k < len(words):
        w = words[k]
        if re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", w):
            k += 1
        elif w in ("/usr/bin/time", "time", "nice", "env"):
            k += 1
            while k < len(words) and words[k].startswith("-"):
                k += 2 if words[k] in ("-f", "-n", "-o") else 1
        elif w.endswith("launch_dist.sh"):
            k += 2
        elif w == "torchrun":
            k += 1
            while k < len(words) and words[k].startswith("--"):
                k += 1 if words[k] == "--no_python" or "=" in words[k] else 2
        else:
            break
    if k >= len(words):
        return None, None
    base = os.path.basename(words[k])
    if base == "yolo11":
        mode = words[k + 1] if k + 1 < len(words) else "help"
        return k, mode
    return k, EXE_MODE.get(base)


def is_template(text):
    return PLACEHOLDER.search(text) is not None


class Checker:
    """Static checks of a command against the build and `yolo11 help`."""

    def __init__(self, source, build):
        self.source, self.build = source, build
        self.keys = {}
        exe = os.path.join(build, "yolo11")
        if os.path.exists(exe):
            out = subprocess.run([exe, "help"], capture_output=True, text=True, timeout=60).stdout
            self.help_text = out
            section = out.split("Keys:", 1)[1] if "Keys:" in out else ""
            mode = None
            for line in section.splitlines():
                m = re.match(r"^\s+(\w+): (.*)$", line)
                if m:
                    mode = m.group(1)
                    self.keys[mode] = set()
                    line = m.group(2)
                if mode:
                    self.keys[mode].update(w for w in line.split() if re.match(r"^\w+$", w))
        else:
            self.help_text = ""

    def check(self, cmd, where):
        problems = []
        for seg in segments(cmd):
            try:
                words = shlex.split(seg.rstrip("&").strip())
            except ValueError as e:
                problems.append(f"{where}: `{seg}`: {e}")
                continue
            k, mode = program_of(words)
            if k is None:
                continue
            prog = words[k]
            if prog.startswith("$") or prog in ("true", "wait", "cd", "srun", "python", "python3", "cmake",
                                                "tensorboard", "curl", "nsys", "ctest", "bash", "scontrol"):
                if prog in ("python", "python3") and k + 1 < len(words):
                    prog = words[k + 1]
                else:
                    continue
            rel = prog[2:] if prog.startswith("./") else prog
            bench = re.match(r"^build/bench/yolo11-bench-(\w+)$", rel)
            if bench:  # benchmarks are built on demand (EXCLUDE_FROM_ALL): the target must exist
                if not os.path.exists(os.path.join(self.source, "bench", bench.group(1) + ".cpp")):
                    problems.append(f"{where}: `{seg}`: no benchmark target yolo11-bench-{bench.group(1)} "
                                    f"(bench/{bench.group(1)}.cpp)")
                continue
            if rel.startswith("build/"):
                if not os.path.exists(os.path.join(self.build, rel[len("build/"):])):
                    problems.append(f"{where}: `{seg}`: {rel} is not built (cmake --build build builds every target)")
                    continue
            elif rel.startswith("tools/"):
                if not os.path.exists(os.path.join(self.source, rel)):
                    problems.append(f"{where}: `{seg}`: {rel} does not exist")
                    continue
            if mode is None:
                continue
            args = words[k + 1:]
            if os.path.basename(prog) == "yolo11":
                if is_template(mode):
                    continue
                if all(m in MODES for m in mode.split("|")):  # `yolo11 val|predict ...`: either mode
                    mode = mode.split("|")[0]
                if mode not in MODES:
                    problems.append(f"{where}: `{seg}`: yolo11 has no mode '{mode}' ({', '.join(MODES)})")
                    continue
                args = args[1:]
            allowed = set(self.keys.get(mode, set()))
            if mode == "sweep":
                allowed |= self.keys.get("train", set())
            for a in args:
                if a.startswith("$") or is_template(a):
                    continue
                if "=" in a and not a.startswith("-"):
                    key = a.split("=", 1)[0]
                    if self.keys and mode in self.keys and key not in allowed:
                        problems.append(f"{where}: `{seg}`: '{key}' is not a key of {mode} (yolo11 help {mode})")
                m = re.match(r"^(?:\w+=)?(configs/[\w./-]+\.yaml)$", a)
                if m and not os.path.exists(os.path.join(self.source, m.group(1))):
                    problems.append(f"{where}: `{seg}`: {m.group(1)} does not exist")
        return problems


# ---------------------------------------------------------------- running

def transform(cmd, d):
    """The command as the docs test runs it: replacements, skipped commands, appended small settings."""
    for old, new in d["replace"]:
        cmd = cmd.replace(old, new)
    out = []
    for seg in segments(cmd):
        skip = next((r for p, r in d["skip_command"] if seg.startswith(p)), None)
        if skip:
            out.append(": " + shlex.quote(f"not run: {skip}"))
            continue
        try:
            words = shlex.split(seg.rstrip("&").strip())
        except ValueError:
            words = seg.split()
        _, mode = program_of(words)
        if mode == "sweep" and any(w == "--verify" or w.startswith("verify=") for w in words):
            mode = "verify"  # yolo11-sweep --verify RUN / yolo11 sweep verify=RUN: the A/B of a run's advice
        extra = " ".join(d["append"].get(mode, [])) if mode else ""
        if any(t in seg for t in d["as_written"]):
            extra = ""
        if extra:
            bg = seg.endswith("&")
            seg = (seg[:-1].rstrip() if bg else seg) + " " + extra + (" &" if bg else "")
        for code, text, _ in d["allow_exit"]:
            if text in seg and not seg.endswith("&"):
                seg = f"{{ {seg}; }} || [ $? -eq {code} ]"
        out.append(seg)
    return " && ".join(out)


def make_scratch(source, build, name):
    root = os.path.join(build, "docs-test", name)
    if os.path.exists(root):
        shutil.rmtree(root)
    os.makedirs(os.path.join(root, "datasets"))
    os.symlink(os.path.abspath(build), os.path.join(root, "build"))
    for d in ("configs", "tools"):
        os.symlink(os.path.join(source, d), os.path.join(root, d))
    for ds in ("coco8", "coco128", "shapes3"):
        have = os.path.join(source, "datasets", ds)
        if not os.path.isdir(os.path.join(have, "images")):
            have = os.path.join(build, "docs-test", "datasets", ds)
            os.makedirs(os.path.dirname(have), exist_ok=True)
            # the docs tests run in parallel: one fetch per dataset, the others wait for it
            with open(os.path.join(os.path.dirname(have), ".fetch.lock"), "w") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX)
                if not os.path.isdir(os.path.join(have, "images")):
                    subprocess.run([os.path.join(source, "tools", "get_dataset.sh"), ds, os.path.dirname(have)],
                                   check=True, stdout=subprocess.DEVNULL)
        os.symlink(have, os.path.join(root, "datasets", ds))
    os.makedirs(os.path.join(root, "tmp"))
    return root


def run_block(block, commands, scratch, log):
    d = block.directives
    script = ["set -euo pipefail", f"cd {shlex.quote(scratch)}"]
    script += [f"export {e}" for e in d["env"]]
    script += d["before"]
    shown = []
    for n, cmd in commands:
        runnable = transform(cmd, d)
        shown.append((block.line + n, runnable))
        script.append(f"echo '+ {block.doc}:{block.line + n}: '{shlex.quote(runnable)}")
        script.append(runnable)
    t0 = time.time()
    with tempfile.NamedTemporaryFile("w", suffix=".sh", delete=False) as f:
        f.write("\n".join(script) + "\n")
        path = f.name
    try:
        p = subprocess.run(["bash", path], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           timeout=d["timeout"])
        rc, out = p.returncode, p.stdout
    except subprocess.TimeoutExpired as e:
        rc, out = 124, (e.stdout or b"").decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
    dt = time.time() - t0
    log.write(out)
    for line, cmd in shown:
        print(f"  ran {block.doc}:{line}: {cmd}")
    print(f"  -> exit {rc} in {dt:.1f} s")
    if rc != 0:
        tail = "\n".join(out.splitlines()[-40:])
        raise Failure(f"{block.where()}: the block exited {rc} (timeout {d['timeout']} s = 124)\n{tail}")


def run_doc(args, blocks, inline, name):
    checker = Checker(args.source, args.build)
    problems, ran, skipped = [], 0, 0
    for line, span in inline:
        problems += checker.check(span, f"{name}:{line}")
    runnable = []
    for b in blocks:
        cmds = logical_lines(b.text)
        for n, cmd in cmds:
            problems += checker.check(cmd, f"{b.doc}:{b.line + n}")
        live = [(n, c) for n, c in cmds if not is_template(c)]
        if b.directives["skip"]:
            print(f"{b.where()}: not run: {b.directives['skip']} ({len(cmds)} commands checked)")
            skipped += 1
        elif live:
            runnable.append((b, live))
    if problems:
        raise Failure("\n".join(problems))
    if args.check_only:
        for b, live in runnable:
            for n, c in live:
                print(f"  would run {b.doc}:{b.line + n}: {transform(c, b.directives)}")
        return
    scratch = make_scratch(args.source, args.build, re.sub(r"[^\w.-]", "_", name))
    with open(os.path.join(scratch, "docs-test.log"), "w") as log:
        for b, live in runnable:
            print(f"{b.where()}: {len(live)} command line(s)")
            run_block(b, live, scratch, log)
            ran += 1
    print(f"{name}: {ran} block(s) run, {skipped} skipped with their reason, {len(inline)} inline command(s) checked")


def help_examples(args):
    exe = os.path.join(args.build, "yolo11")
    out = subprocess.run([exe, "help"], capture_output=True, text=True, timeout=60).stdout
    m = re.search(r"Examples:\n((?:  .*\n)+)", out)
    if not m:
        raise Failure("yolo11 help prints no Examples: section")
    text = "\n".join("build/" + line.strip() for line in m.group(1).splitlines())
    block = Block("yolo11 help", 0, text, parse_directives(HELP_DIRECTIVES, "docs_test.py HELP_DIRECTIVES"))
    return [block]


def self_test(args):
    """The checker must catch what it exists for; fails if it would let these through."""
    checker = Checker(args.source, args.build)
    bad = {
        "build/yolo11 trian data=coco8.yaml": "no mode",
        "build/yolo11 train cfg=configs/coco128.yaml epohcs=3": "not a key",
        "build/yolo11 val weights=x.safetensors data=configs/datasets/nope.yaml": "does not exist",
        "build/yolo11-nothing --cfg configs/coco128.yaml": "not built",
        "build/bench/yolo11-bench-nothing --iters 2": "no benchmark target",
        "tools/nothing.sh coco8": "does not exist",
    }
    for cmd, want in bad.items():
        found = checker.check(cmd, "self-test")
        if not any(want in p for p in found):
            raise Failure(f"self-test: `{cmd}` should be reported ({want}), got {found}")
    good = ["build/yolo11 train cfg=configs/coco128.yaml epochs=3 imgsz=320",
            "YOLO11_TEST_LOADER_DELAY_MS=60 build/yolo11-sweep --verify runs/train/x rounds=3 steps=20",
            "tools/launch_dist.sh 2 build/yolo11-train --cfg configs/coco8.yaml batch=16 epochs=3"]
    for cmd in good:
        if checker.check(cmd, "self-test"):
            raise Failure(f"self-test: `{cmd}` should pass, got {checker.check(cmd, 'self-test')}")
    d = parse_directives("append-train epochs=1\nreplace a.yaml => b.yaml\nskip-command tools/setup.sh: CI\n"
                         "append-verify rounds=1\nallow-exit 3 verify=: rejected", "x")
    if transform("build/yolo11 sweep verify=runs/x", d) != "{ build/yolo11 sweep verify=runs/x rounds=1; } || [ $? -eq 3 ]":
        raise Failure(f"self-test: append-verify gave `{transform('build/yolo11 sweep verify=runs/x', d)}`")
    got = transform("tools/setup.sh && build/yolo11 train data=a.yaml &", d)
    want = ": 'not run: CI' && build/yolo11 train data=b.yaml epochs=1 &"
    if got != want:
        raise Failure(f"self-test: transform gave `{got}`, want `{want}`")
    lines = logical_lines("a=1 \\\n  b=2  # c\n# d\nx '#y'")
    if lines != [(1, "a=1 b=2"), (4, "x '#y'")]:
        raise Failure(f"self-test: logical_lines gave {lines}")
    if not is_template("build/yolo11-train batch=16 ...") or is_template("build/yolo11 train epochs=3"):
        raise Failure("self-test: is_template")
    with tempfile.TemporaryDirectory() as t:
        md = os.path.join(t, "x.md")
        open(md, "w").write("<!-- docs-test\nbogus\n-->\n```bash\ntrue\n```\n")
        try:
            extract(md, "x.md")
            raise Failure("self-test: an unknown directive was accepted")
        except Failure as e:
            if "unknown docs-test directive" not in str(e):
                raise
    print("self-test: the checker reports wrong modes, keys, configs and programs; directives parse")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--source", required=True)
    ap.add_argument("--build", required=True)
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--doc")
    g.add_argument("--help-examples", action="store_true")
    g.add_argument("--self-test", action="store_true")
    ap.add_argument("--check-only", action="store_true", help="the static checks only; show what would run")
    args = ap.parse_args()
    args.source, args.build = os.path.abspath(args.source), os.path.abspath(args.build)
    shared = os.path.abspath(os.path.join(args.source, "..", "shared"))
    os.environ.setdefault("YOLO11_SHARED_DIR", shared)
    os.environ.setdefault("YOLO11_DATASETS_MIRROR", os.path.join(shared, "datasets"))
    # tools/test.sh passes the mirror as given, relative to the repository root; ctest runs this elsewhere
    mirror = os.environ["YOLO11_DATASETS_MIRROR"]
    if not os.path.isabs(mirror):
        os.environ["YOLO11_DATASETS_MIRROR"] = os.path.abspath(
            os.path.join(args.source, mirror) if os.path.isdir(os.path.join(args.source, mirror)) else mirror)
    try:
        if args.self_test:
            self_test(args)
        elif args.help_examples:
            run_doc(args, help_examples(args), [], "yolo11-help")
        else:
            rel = os.path.relpath(args.doc, args.source)
            blocks, inline = extract(args.doc, rel)
            run_doc(args, blocks, inline, rel)
    except Failure as e:
        print(f"FAILED: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
