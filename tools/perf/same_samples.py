#!/usr/bin/env python3
"""Compare the samples of two runs of the same suite, cell by cell (issue 18, item 4).

    tools/perf/same_samples.py RUN_DIR_BEFORE RUN_DIR_AFTER

Prints, per cell, how many samples have identical tokens; exits 1 if any differ or a cell is
missing on either side. A speed change that claims to keep results must leave every sample
identical (or the change that moves them must be named).
"""
import json
import sys


def samples(run_dir):
    cells = {}
    with open(f"{run_dir}/samples.jsonl") as f:
        for line in f:
            row = json.loads(line)
            cells.setdefault(row["key"], {})[row["index"]] = row["tokens"]
    return cells


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    before, after = samples(sys.argv[1]), samples(sys.argv[2])
    ok = True
    for key in sorted(before.keys() | after.keys()):
        a, b = before.get(key), after.get(key)
        if a is None or b is None:
            print(f"{key}: only in {'after' if a is None else 'before'}")
            ok = False
            continue
        same = sum(a[i] == b.get(i) for i in a)
        print(f"{key}: {same} of {len(a)} samples identical")
        ok &= same == len(a) == len(b)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
