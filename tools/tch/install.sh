#!/usr/bin/env bash
# LibTorch for the `tch` feature of dlm-neural and dlm-hf: a virtual environment .venv-tch with
# PyPI's torch==2.9.0, the version tch 0.22 (burn-tch 0.22) is written against. About 7 GB:
# PyPI's Linux wheel is the CUDA build and brings its CUDA libraries (cuBLAS, cuDNN, …); it runs
# on the CPU without a GPU. Only the `tch` build and tools/tch/test.sh need it. Prints what to
# export.
set -euo pipefail
cd "$(dirname "$0")/../.."
python3 -m venv .venv-tch
.venv-tch/bin/pip install --quiet torch==2.9.0 numpy
.venv-tch/bin/python -c "import torch; print('torch', torch.__version__)"
cat <<MSG
Now, in the shell that builds (cargo build/test -p dlm-neural or -p dlm-hf --features tch):
    source $(pwd)/.venv-tch/bin/activate
    export LIBTORCH_USE_PYTORCH=1
MSG
