#!/usr/bin/env bash
# Side-by-side speed of dlm-neural (Burn flex) and its PyTorch twin on this machine (issue 18):
# the train step at 8 x 512, the MDM forward at 16 x 512 and the cached AR token at 64 and 511
# positions (batch 16), CPU config (hidden 128, 4 layers, 4 heads). Prints both medians and the
# ratio. Same thread count on both sides: all cores (Burn's rayon pool; torch.set_num_threads).
#
#   tools/perf/install.sh            # once: a venv with PyTorch from PyPI (.venv-perf)
#   tools/perf/compare.sh [ROUNDS]   # ROUNDS: the twin's rounds per case (default 10)
#
# Run it on an idle machine: both sides share the cores. PyTorch is needed only here.
set -euo pipefail
cd "$(dirname "$0")/../.."
PYTHON="${DLM_PERF_PYTHON:-.venv-perf/bin/python}"
if [ ! -x "$PYTHON" ]; then
  echo "error: no Python with PyTorch at $PYTHON; run tools/perf/install.sh (or set DLM_PERF_PYTHON)" >&2
  exit 1
fi
THREADS="$(nproc)"
ROUNDS="${1:-10}"
OUT="$(mktemp -d)"
cargo bench -p dlm-neural --bench neural -- --output-format bencher \
  'train_step/8x512|mdm_forward/16x512|ar_next_token/cached' 2>/dev/null | tee "$OUT/burn.txt" | grep '^test ' || true
"$PYTHON" tools/perf/torch_twin.py --threads "$THREADS" --rounds "$ROUNDS" | tee "$OUT/torch.txt"
# HMM scoring (issue 34): dlm-formal's batched forward pass, single-threaded, against numpy's
# batched forward on one BLAS thread (same sizes: 2000 x 512, 32 states, vocabulary 8).
cargo bench -p dlm-formal --bench formal -- --output-format bencher 'score_batch/hmm' 2>/dev/null | tee -a "$OUT/burn.txt" | grep '^test ' || true
"$PYTHON" tools/perf/hmm_numpy.py --threads 1 --rounds "$ROUNDS" --name score_batch/hmm-32-ser/2000x512 | tee -a "$OUT/torch.txt"
python3 - "$OUT/burn.txt" "$OUT/torch.txt" "$THREADS" <<'PY'
import re, sys
burn = {}
for line in open(sys.argv[1]):
    m = re.match(r"test (\S+) \.\.\. bench:\s+([\d,]+) ns/iter", line)
    if m:
        burn[m.group(1)] = int(m.group(2).replace(",", "")) / 1e9
torch = dict((l.split()[0], float(l.split()[1])) for l in open(sys.argv[2]) if l.strip())
print(f"\n{sys.argv[3]} threads, medians")
print(f"| case | dlm-bench (flex) | PyTorch twin (numpy for the HMM) | ratio |")
print(f"|---|---|---|---|")
for case, t in torch.items():
    b = burn.get(case)
    cell = f"{b * 1e3:.2f} ms" if b is not None else "—"
    ratio = f"{b / t:.2f}x" if b is not None else "—"
    print(f"| {case} | {cell} | {t * 1e3:.2f} ms | {ratio} |")
PY
