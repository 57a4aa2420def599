#!/usr/bin/env bash
# A virtual environment with PyTorch (from PyPI) for tools/perf/compare.sh only; the build, the
# main job and the tests never need it. About 5 GB (PyPI's torch wheel brings its CUDA libraries).
# transformers 4.x, einops and safetensors are for the LLaDA reference (llada_reference.py):
# LLaDA's modelling code imports transformers 4's module layout.
set -euo pipefail
cd "$(dirname "$0")/../.."
python3 -m venv .venv-perf
.venv-perf/bin/pip install --quiet torch numpy safetensors einops 'transformers==4.52.4'
.venv-perf/bin/python -c "import torch; print('torch', torch.__version__)"
