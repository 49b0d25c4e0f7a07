#!/usr/bin/env python3
"""By hand, never in CI: runs a command and samples the memory of its whole process tree (the command, its children
and theirs: the reference's DataLoader workers are processes, ours are threads), so both trainers are measured by the
same tool (docs/benchmarks.md, issue 31).

    python3 tools/reference/memtree.py [--every 0.5] [--csv FILE] -- COMMAND [ARG ...]

Every --every seconds it reads, for each process of the tree, VmRSS from /proc/PID/status and Pss from
/proc/PID/smaps_rollup. RSS summed over the tree counts the pages forked workers share with their parent once per
process; PSS splits each shared page among the processes that map it, so its sum is what the tree really holds.
At the end it prints the peak of each sum, the peak of the largest single process, and the most processes seen;
--csv writes every sample (seconds since start, processes, RSS sum, PSS sum, largest RSS; MiB). The command's own
output passes through; the exit status is the command's.
"""
import argparse
import os
import subprocess
import sys
import time


def children(pid):
    """Direct children of pid, from /proc/PID/task/*/children (every thread's)."""
    out = []
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            try:
                with open(f"/proc/{pid}/task/{tid}/children") as fh:
                    out += [int(c) for c in fh.read().split()]
            except OSError:
                pass
    except OSError:
        pass
    return out


def tree(root):
    pids, todo = [], [root]
    while todo:
        p = todo.pop()
        pids.append(p)
        todo += children(p)
    return pids


def field_kib(path, key):
    try:
        with open(path) as fh:
            for line in fh:
                if line.startswith(key):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--every", type=float, default=0.5, help="seconds between samples")
    ap.add_argument("--csv", default="", help="write every sample here")
    ap.add_argument("command", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    cmd = a.command[1:] if a.command[:1] == ["--"] else a.command
    if not cmd:
        ap.error("no command (memtree.py [options] -- COMMAND ...)")
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd)
    peak_rss = peak_pss = peak_one = most = 0
    rows = []
    while proc.poll() is None:
        pids = tree(proc.pid)
        rss = [field_kib(f"/proc/{p}/status", "VmRSS:") for p in pids]
        pss = sum(field_kib(f"/proc/{p}/smaps_rollup", "Pss:") for p in pids)
        live = sum(1 for r in rss if r > 0)
        s_rss, one = sum(rss), max(rss, default=0)
        peak_rss, peak_pss, peak_one, most = max(peak_rss, s_rss), max(peak_pss, pss), max(peak_one, one), max(most, live)
        rows.append((time.monotonic() - t0, live, s_rss / 1024, pss / 1024, one / 1024))
        time.sleep(a.every)
    rc = proc.wait()
    if a.csv:
        with open(a.csv, "w") as fh:
            fh.write("seconds,processes,rss_sum_mib,pss_sum_mib,largest_rss_mib\n")
            for r in rows:
                fh.write(f"{r[0]:.1f},{r[1]},{r[2]:.1f},{r[3]:.1f},{r[4]:.1f}\n")
    print(f"[memtree] {len(rows)} samples over {time.monotonic() - t0:.0f} s, up to {most} processes: peak RSS sum "
          f"{peak_rss / 1024:.0f} MiB, peak PSS sum {peak_pss / 1024:.0f} MiB, largest process {peak_one / 1024:.0f} "
          f"MiB (rc {rc})", file=sys.stderr, flush=True)
    sys.exit(rc)


if __name__ == "__main__":
    main()
