#!/usr/bin/env bash
# The tch (LibTorch) backend's checks, outside .ci/run (LibTorch is a 7 GB download and the
# build another ≈ 15 minutes on 2 cores): the vendored burn-tch's own tests (its fused attention
# against Burn's composition: patches/README.md); every dlm-neural test on the LibTorch device, with
# LibTorch-vs-flex logits (the mdm's key/value cache included: kv_window_tests, `refresh: 1` ≡
# no cache); every dlm-hf test on it (LLaDA's and Dream's cache against the plain pass and
# Fast-dLLM's cached generations, the logits against PyTorch's and flex's); then a tiny suite
# trained and sampled end to end through the harness with a tch-built plugin library
# (tests/tch.rs), compared with flex. The figures of the last run (burn-tch's 2, 59 dlm-neural and
# 47 dlm-hf tests on LibTorch's CPU, 2026-11-29, 29 min) are in docs/user-guide.md, "The tch
# backend (LibTorch)".
#
#   tools/tch/test.sh                 # LibTorch's CPU kernels
#   DLM_TCH_DEVICE=tch:cuda tools/tch/test.sh   # on a CUDA machine: cuBLAS/cuDNN as well
#   DLM_TCH_BENCH=1 tools/tch/test.sh # and dlm-neural's benches on that device (slow)
#
# Installs .venv-tch (tools/tch/install.sh) if it is missing.
set -euo pipefail
cd "$(dirname "$0")/../.."
export CARGO_TERM_COLOR=never
if [ ! -x .venv-tch/bin/python ]; then
  tools/tch/install.sh
fi
# What tools/tch/install.sh says to export: torch-sys asks this venv's `python` for LibTorch.
# shellcheck disable=SC1091
source .venv-tch/bin/activate
export LIBTORCH_USE_PYTORCH=1
DEVICE="${DLM_TCH_DEVICE:-tch}"
TARGET="${CARGO_TARGET_DIR:-target}"

mkdir -p "$TARGET/tch"
echo "== the vendored burn-tch's own tests (attention against Burn's composition); full log: $TARGET/tch/burn-tch-tests.log"
# Its own workspace (patches/README.md), run from a copy that carries our Cargo.lock so it builds
# with the workspace's dependency versions (not --locked: cargo adds the crate's own dev-dependencies
# to that lock); LibTorch's libraries found the way torch-sys found them.
TORCH_LIB="$(python -c 'import os, torch; print(os.path.join(os.path.dirname(torch.__file__), "lib"))')"
BURN_TCH_COPY="$(mktemp -d)"
cp -r patches/burn-tch/. "$BURN_TCH_COPY"
cp Cargo.lock "$BURN_TCH_COPY/Cargo.lock"
(cd "$BURN_TCH_COPY" && LD_LIBRARY_PATH="$TORCH_LIB${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
  CARGO_TARGET_DIR="$(cd "$TARGET" && pwd)/tch/burn-tch" cargo test --lib -- ops::module) \
  >"$TARGET/tch/burn-tch-tests.log" 2>&1 \
  || { tail -50 "$TARGET/tch/burn-tch-tests.log"; echo "error: the vendored burn-tch's tests failed" >&2; exit 1; }
rm -rf "$BURN_TCH_COPY"
grep -E 'test result' "$TARGET/tch/burn-tch-tests.log"

echo "== dlm-neural's tests on $DEVICE (and tch-vs-flex logits); full log: $TARGET/tch/neural-tests.log"
# pipefail: a failing test fails the script; the grep only picks the figures out of the log.
DLM_NEURAL_TEST_DEVICE="$DEVICE" cargo test -p dlm-neural --features tch --locked -- --nocapture \
  >"$TARGET/tch/neural-tests.log" 2>&1 \
  || { tail -50 "$TARGET/tch/neural-tests.log"; echo "error: dlm-neural's tests failed on $DEVICE" >&2; exit 1; }
grep -E 'test result|largest \||positions agree|worst gap|positions computed' "$TARGET/tch/neural-tests.log"

echo "== dlm-hf's tests on $DEVICE (and its logits against PyTorch's and flex's); full log: $TARGET/tch/hf-tests.log"
DLM_HF_TEST_DEVICE="$DEVICE" cargo test -p dlm-hf --features tch --locked -- --nocapture \
  >"$TARGET/tch/hf-tests.log" 2>&1 \
  || { tail -50 "$TARGET/tch/hf-tests.log"; echo "error: dlm-hf's tests failed on $DEVICE" >&2; exit 1; }
grep -E 'test result|max \|' "$TARGET/tch/hf-tests.log"

echo "== the plugin library, built with --features tch"
cargo build -p dlm-neural --features tch --locked
cp "$TARGET/debug/libdlm_neural.so" "$TARGET/tch/libdlm_neural.so"
DLM_BENCH_TCH_PLUGIN="$(cd "$TARGET/tch" && pwd)/libdlm_neural.so"
export DLM_BENCH_TCH_PLUGIN DLM_BENCH_REQUIRE_TCH=1 DLM_BENCH_TCH_DEVICE="$DEVICE"

echo "== a tiny suite end to end on $DEVICE and on flex (tests/tch.rs)"
cargo test --locked --test tch -- --nocapture

if [ "${DLM_TCH_BENCH:-0}" = 1 ]; then
  # tools/perf/compare.sh's cases, three ways on the same threads: dlm-neural on $DEVICE and on
  # flex (one release build with the feature), and the PyTorch twin (this venv's torch 2.9.0).
  echo "== speed: dlm-neural on $DEVICE and on flex, and the PyTorch twin"
  CASES='train_step/8x512|mdm_forward/16x512|ar_next_token/cached'
  for dev in "$DEVICE" flex; do
    DLM_NEURAL_BENCH_DEVICE="$dev" cargo bench -p dlm-neural --features tch --locked --bench neural \
      -- --output-format bencher "$CASES" 2>/dev/null | grep '^test ' >"$TARGET/tch/bench-$dev.txt"
  done
  python tools/perf/torch_twin.py --threads "$(nproc)" --rounds 10 >"$TARGET/tch/bench-torch.txt"
  python3 - "$TARGET/tch" "$DEVICE" <<'PY'
import re, sys
def burn(path):
    out = {}
    for line in open(path):
        m = re.match(r"test (\S+) \.\.\. bench:\s+([\d,]+) ns/iter", line)
        if m:
            out[m.group(1)] = int(m.group(2).replace(",", "")) / 1e6
    return out
d, dev = sys.argv[1], sys.argv[2]
tch, flex = burn(f"{d}/bench-{dev}.txt"), burn(f"{d}/bench-flex.txt")
torch = dict((l.split()[0], float(l.split()[1]) * 1e3) for l in open(f"{d}/bench-torch.txt") if l.strip())
ms = lambda x: f"{x:.2f} ms" if x is not None else "—"
print(f"| case | dlm-neural ({dev}) | dlm-neural (flex) | PyTorch twin |")
print("|---|---|---|---|")
for case in torch:
    print(f"| {case} | {ms(tch.get(case))} | {ms(flex.get(case))} | {ms(torch[case])} |")
PY
fi
