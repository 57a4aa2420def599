#!/usr/bin/env bash
# A virtual environment with PyTorch (from PyPI) for tools/perf/compare.sh only; the build, the
# main job and the tests never need it. About 5 GB (PyPI's torch wheel brings its CUDA libraries).
set -euo pipefail
cd "$(dirname "$0")/../.."
python3 -m venv .venv-perf
.venv-perf/bin/pip install --quiet torch numpy
.venv-perf/bin/python -c "import torch; print('torch', torch.__version__)"
