#!/usr/bin/env python3
"""Time the PyTorch reference forward pass at batch 1 x 512 tokens on the committed fixtures,
for the side-by-side comparison with `cargo bench -p dlm-hf --bench forward` (same CPU, same
number of threads): median of 30 passes after 5 warm-up passes.

    /tmp/venv-hf/bin/python tools/hf-fixtures/time_forward.py [--threads 2]
"""

import argparse
import json
import os
import statistics
import sys
import time

import torch
from safetensors.torch import load_file

sys.path.insert(0, os.path.dirname(__file__))
import make_fixtures as mf  # noqa: E402

FIXTURES = os.path.join(os.path.dirname(__file__), "../../plugins/hf/tests/fixtures")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=torch.get_num_threads())
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    for arch, forward in [("llada", mf.llada_forward), ("dream", mf.dream_forward)]:
        d = os.path.join(FIXTURES, f"{arch}-tiny")
        config = json.load(open(os.path.join(d, "config.json")))
        weights = load_file(os.path.join(d, "model.safetensors"))
        ids = (torch.arange(512) * 7 % 480).unsqueeze(0)
        times = []
        with torch.no_grad():
            for i in range(35):
                t0 = time.perf_counter()
                forward(config, weights, ids)
                if i >= 5:
                    times.append(time.perf_counter() - t0)
        print(f"{arch}: 1 x 512 forward, median {statistics.median(times) * 1e3:.2f} ms "
              f"(min {min(times) * 1e3:.2f}), torch {torch.__version__}, {args.threads} threads")


if __name__ == "__main__":
    main()
