#!/usr/bin/env bash
# Side-by-side speed of dlm-neural (Burn flex) and its PyTorch twin on this machine (issue 18):
# the train step at 8 x 512, the MDM forward at 16 x 512 and the cached AR token at 64 and 511
# positions (batch 16), CPU config (hidden 128, 4 layers, 4 heads). Prints both medians and the
# ratio. Same thread count on both sides: all cores (Burn's rayon pool; torch.set_num_threads).
#
#   tools/perf/install.sh            # once: a venv with PyTorch from PyPI (.venv-perf)
#   tools/perf/compare.sh [ROUNDS]   # ROUNDS: the twin's rounds per case (default 10)
#   DLM_PERF_TCH=1 tools/perf/compare.sh   # and the same network on LibTorch (tools/tch/install.sh)
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
# The benches run with the glibc malloc settings the harness gives its workers
# (WORKER_MALLOC_TUNABLES in harness/src/worker/supervise.rs), as a suite's cells run.
export GLIBC_TUNABLES="${GLIBC_TUNABLES:-glibc.malloc.mmap_threshold=33554432:glibc.malloc.trim_threshold=17179869184:glibc.malloc.top_pad=268435456}"
ROUNDS="${1:-10}"
OUT="$(mktemp -d)"
cargo bench -p dlm-neural --bench neural -- --output-format bencher \
  'train_step/8x512|mdm_forward/16x512|ar_next_token/cached' 2>/dev/null | tee "$OUT/burn.txt" | grep '^test ' || true
"$PYTHON" tools/perf/torch_twin.py --threads "$THREADS" --rounds "$ROUNDS" | tee "$OUT/torch.txt"
# HMM scoring (issue 34): dlm-formal's batched forward pass, single-threaded, against numpy's
# batched forward on one BLAS thread (same sizes: 2000 x 512, 32 states, vocabulary 8).
cargo bench -p dlm-formal --bench formal -- --output-format bencher 'score_batch/hmm' 2>/dev/null | tee -a "$OUT/burn.txt" | grep '^test ' || true
"$PYTHON" tools/perf/hmm_numpy.py --threads 1 --rounds "$ROUNDS" --name score_batch/hmm-32-ser/2000x512 | tee -a "$OUT/torch.txt"
# The checkpoint path (issue 34, item 4): dlm-hf's forward and 64-step low_confidence generation
# on a mid-size random LLaDA checkpoint against LLaDA's own modeling_llada.py and generate.py.
# Needs the reference code in $DLM_PERF_LLADA_REF (docs/performance.md says how to fetch it);
# the checkpoint (≈ 700 MB) is written once to $DLM_PERF_LLADA_DIR.
if [ -n "${DLM_PERF_LLADA_REF:-}" ]; then
  LLADA_DIR="${DLM_PERF_LLADA_DIR:-/tmp/dlm-perf-llada-mid}"
  "$PYTHON" tools/perf/llada_reference.py --dir "$LLADA_DIR" --write-only
  cargo build --release -p dlm-hf --example reference_speed 2>/dev/null
  # Alternated, so both sides see the same machine; medians of the rounds.
  for round in 1 2; do
    target/release/examples/reference_speed "$LLADA_DIR" --rounds 3 --answer-out "$OUT/ours.json" >> "$OUT/burn-llada.txt"
    "$PYTHON" tools/perf/llada_reference.py --dir "$LLADA_DIR" --threads "$THREADS" --rounds 3 \
      --llada-ref "$DLM_PERF_LLADA_REF" --answer-out "$OUT/reference.json" >> "$OUT/torch-llada.txt"
  done
  python3 - "$OUT" <<'PY'
import json, statistics, sys
out = sys.argv[1]
for side, name in (("burn", "burn.txt"), ("torch", "torch.txt")):
    rows = {}
    for line in open(f"{out}/{side}-llada.txt"):
        case, seconds = line.split()
        rows.setdefault(case, []).append(float(seconds))
    with open(f"{out}/{name}", "a") as f:
        for case, times in rows.items():
            if side == "burn":
                f.write(f"test {case} ... bench: {int(statistics.median(times) * 1e9):,} ns/iter\n")
            else:
                f.write(f"{case} {statistics.median(times)}\n")
ours, theirs = json.load(open(f"{out}/ours.json")), json.load(open(f"{out}/reference.json"))
same = sum(a == b for a, b in zip(ours, theirs))
print(f"llada/generate: {same} of {len(theirs)} answer ids equal to the reference's")
PY
else
  echo "(LLaDA checkpoint path skipped: set DLM_PERF_LLADA_REF, see docs/performance.md)"
fi
# LibTorch (issue 34, item 1): dlm-neural's forward and train step on the tch device against the
# twin on the same LibTorch (.venv-tch's torch 2.9.0, which the build links; tools/tch/install.sh),
# alternated round by round: the twin's own time moves by ±10% between rounds on a shared machine,
# so the ratio that means something is each round's, and their median. DLM_PERF_TCH=1 turns it on.
if [ "${DLM_PERF_TCH:-0}" = 1 ]; then
  if [ ! -x .venv-tch/bin/python ]; then
    echo "error: DLM_PERF_TCH=1 needs LibTorch in .venv-tch; run tools/tch/install.sh" >&2
    exit 1
  fi
  (
    # shellcheck disable=SC1091
    source .venv-tch/bin/activate
    export LIBTORCH_USE_PYTORCH=1 CARGO_TARGET_DIR="$PWD/target-tch"
    cargo bench -p dlm-neural --features tch --locked --bench neural --no-run 2>/dev/null
    for round in $(seq 1 "${DLM_PERF_TCH_ROUNDS:-5}"); do
      DLM_NEURAL_BENCH_DEVICE=tch cargo bench -p dlm-neural --features tch --locked --bench neural \
        -- --output-format bencher 'train_step/8x512|mdm_forward/16x512' 2>/dev/null \
        | grep '^test ' | sed "s/^/$round /" >> "$OUT/tch-burn.txt"
      python tools/perf/torch_twin.py --threads "$THREADS" --rounds "$ROUNDS" \
        | sed "s/^/$round /" >> "$OUT/tch-torch.txt"
    done
  )
  python3 - "$OUT" <<'PY'
import re, statistics, sys
out = sys.argv[1]
burn, torch = {}, {}
for line in open(f"{out}/tch-burn.txt"):
    m = re.match(r"(\d+) test (\S+) \.\.\. bench:\s+([\d,]+) ns/iter", line)
    if m:
        burn[(m.group(1), m.group(2))] = int(m.group(3).replace(",", "")) / 1e9
for line in open(f"{out}/tch-torch.txt"):
    round_, case, seconds = line.split()
    torch[(round_, case)] = float(seconds)
print("\nLibTorch: dlm-neural (tch) against the twin on the same torch, round by round")
print("| case | dlm-neural (tch) | PyTorch twin | ratio per round | median ratio |")
print("|---|---|---|---|---|")
for case in ("train_step/8x512", "mdm_forward/16x512"):
    rounds = sorted({r for r, c in burn if c == case} & {r for r, c in torch if c == case}, key=int)
    if not rounds:
        print(f"| {case} | — | — | — | — |")
        continue
    ratios = [burn[(r, case)] / torch[(r, case)] for r in rounds]
    ours = statistics.median(burn[(r, case)] for r in rounds)
    theirs = statistics.median(torch[(r, case)] for r in rounds)
    print(f"| {case} | {ours * 1e3:.1f} ms | {theirs * 1e3:.1f} ms | "
          f"{' '.join(f'{x:.2f}' for x in ratios)} | {statistics.median(ratios):.2f}x |")
PY
fi
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
