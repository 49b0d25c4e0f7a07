#!/usr/bin/env python3
"""Holistic Trace Analysis (the `HolisticTraceAnalysis` package) on one of our Chrome traces (test-only;
tests/io/test_trace_readers.cpp).

    read_with_hta.py TRACE_DIR OUT_JSON

Loads the one trace file in TRACE_DIR with hta.trace_analysis.TraceAnalysis (HTA's own parser, as for a Kineto trace
of PyTorch's profiler) and writes {"ranks": [...], "events": N, "names": {name: count}, "min_dur": d} for rank 0's
complete events (ph "X", durations in the trace's microseconds).
"""
import json
import logging
import sys

logging.disable(logging.WARNING)
from hta.trace_analysis import TraceAnalysis  # noqa: E402


def main() -> None:
    analysis = TraceAnalysis(trace_dir=sys.argv[1])
    ranks = sorted(analysis.t.get_ranks())
    df = analysis.t.get_trace(ranks[0])
    sym = analysis.t.symbol_table.get_sym_table()
    names = df["name"].map(lambda i: sym[i])
    done = df[df["dur"] >= 0]
    with open(sys.argv[2], "w") as fh:
        json.dump({"ranks": [int(r) for r in ranks], "events": int(len(df)),
                   "names": {str(k): int(v) for k, v in names.value_counts().items()},
                   "min_dur": float(done["dur"].min()) if len(done) else -1.0}, fh)


if __name__ == "__main__":
    main()
