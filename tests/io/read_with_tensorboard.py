#!/usr/bin/env python3
"""TensorBoard's own reader on one of our event files (tests/io/test_tensorboard.cpp, test-only).

    read_with_tensorboard.py EVENT_FILE OUT_JSON

Loads EVENT_FILE with tensorboard.backend.event_processing.event_accumulator.EventAccumulator (what `tensorboard
--logdir` uses), keeping every scalar (size_guidance 0 = all), and writes {"tags": {tag: [[step, value], ...]}}.
"""
import json
import sys

from tensorboard.backend.event_processing import event_accumulator


def main() -> None:
    acc = event_accumulator.EventAccumulator(sys.argv[1], size_guidance={event_accumulator.SCALARS: 0})
    acc.Reload()
    tags = {t: [[e.step, e.value] for e in acc.Scalars(t)] for t in acc.Tags()["scalars"]}
    with open(sys.argv[2], "w") as fh:
        json.dump({"tags": tags}, fh)


if __name__ == "__main__":
    main()
