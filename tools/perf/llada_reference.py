#!/usr/bin/env python3
"""The checkpoint path against its reference (issue 34, item 4): a mid-size random
LLaDA-architecture checkpoint, timed in PyTorch with LLaDA's own modelling code and decoder.

Writes (once; reused when present) a checkpoint folder: 8 layers, width 1024 (16 heads of 64),
feed-forward 3072, 32,768 embedding rows, f32 random weights from a fixed torch seed,
`config.json` under LLaDA's field names and the tiny LLaDA fixture's `tokenizer.json` (the
timings read ids, not text). Then times, on the given number of threads:

* `llada/forward/1x512` — `LLaDAModelLM(...)(ids).logits` at batch 1 × 512 positions;
* `llada/generate/64` — LLaDA's `generate` (low-confidence remasking, temperature 0): a
  256-token prompt, 256 tokens in blocks of 32, 64 steps (64 forward passes of 512 positions).

The model is `modeling_llada.py` itself (NVlabs/Fast-dLLM's copy, commit
24cc59e75f20a6384bae8c905965bb090b96388e, `llada/model/`, whose uncached forward is
ML-GSAI's) and the decoder is ML-GSAI/LLaDA's `generate.py` (commit
b7e6c3565f194352da44b38dd12b6970597309f3). Neither is copied into this repository:
`--llada-ref DIR` is a folder holding `llada_model/` (Fast-dLLM's `llada/model/`: its
`__init__.py`, `configuration_llada.py`, `modeling_llada.py`) and `generate.py` (LLaDA's);
docs/performance.md says how to fetch them. They need transformers 4.x and einops
(`tools/perf/install.sh` puts transformers 4.52.4 in the venv; `--transformers DIR` adds a
`pip install --target` folder instead). Prints `NAME SECONDS` lines (medians) for `compare.sh`; `--answer-out`
writes the generated ids, which compare.sh holds against dlm-hf's.

    .venv-perf/bin/python tools/perf/llada_reference.py --dir /tmp/llada-mid --threads 2 \\
        --llada-ref /tmp/llada-ref
"""

import argparse
import importlib.util
import json
import os
import shutil
import statistics
import sys
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
TINY = os.path.join(HERE, "../../plugins/hf/tests/fixtures/llada-tiny")

LAYERS, WIDTH, HEADS, FEED_FORWARD, ROWS = 8, 1024, 16, 3072, 32768
LENGTH, PROMPT, BLOCK, STEPS = 512, 256, 32, 64


def config():
    """config.json under LLaDA's field names (as plugins/hf/benches/cached_step.rs writes)."""
    return {
        "architectures": ["LLaDAModelLM"], "model_type": "llada", "activation_type": "silu",
        "alibi": False, "alibi_bias_max": 8.0, "attention_dropout": 0.0,
        "attention_layer_norm": False, "attention_layer_norm_with_affine": True,
        "bias_for_layer_norm": False, "block_group_size": 1, "block_type": "llama",
        "d_model": WIDTH, "embedding_dropout": 0.0, "embedding_size": ROWS,
        "eos_token_id": ROWS - 2, "flash_attention": False, "include_bias": False,
        "include_qkv_bias": False, "init_cutoff_factor": None, "init_device": "cpu",
        "init_fn": "mitchell", "init_std": 0.02, "input_emb_norm": False,
        "layer_norm_type": "rms", "layer_norm_with_affine": True, "mask_token_id": ROWS - 1,
        "max_sequence_length": 4096, "mlp_hidden_size": FEED_FORWARD, "mlp_ratio": 4,
        "multi_query_attention": None, "n_heads": HEADS, "n_kv_heads": HEADS,
        "n_layers": LAYERS, "pad_token_id": ROWS - 2, "precision": "amp_bf16",
        "residual_dropout": 0.0, "rms_norm_eps": 1e-5, "rope": True,
        "rope_full_precision": True, "rope_theta": 500000.0, "scale_logits": False,
        "vocab_size": ROWS, "weight_tying": False,
    }


def write_checkpoint(folder):
    from safetensors.torch import save_file

    if os.path.exists(os.path.join(folder, "model.safetensors")):
        return
    os.makedirs(folder, exist_ok=True)
    gen = torch.Generator().manual_seed(34)
    p = "model.transformer."

    def lin(rows, cols):
        return (torch.rand(rows, cols, generator=gen) * 2 - 1) * (3.0 / cols) ** 0.5

    def norm(n):
        return 1 + (torch.rand(n, generator=gen) * 2 - 1) * 0.1

    w = {p + "wte.weight": lin(ROWS, WIDTH), p + "ln_f.weight": norm(WIDTH),
         p + "ff_out.weight": lin(ROWS, WIDTH)}
    for i in range(LAYERS):
        b = f"{p}blocks.{i}."
        w[b + "attn_norm.weight"], w[b + "ff_norm.weight"] = norm(WIDTH), norm(WIDTH)
        for n in "qkv":
            w[b + f"{n}_proj.weight"] = lin(WIDTH, WIDTH)
        w[b + "attn_out.weight"] = lin(WIDTH, WIDTH)
        w[b + "ff_proj.weight"], w[b + "up_proj.weight"] = lin(FEED_FORWARD, WIDTH), lin(FEED_FORWARD, WIDTH)
        w[b + "ff_out.weight"] = lin(WIDTH, FEED_FORWARD)
    save_file({k: v.contiguous() for k, v in w.items()}, os.path.join(folder, "model.safetensors"),
              metadata={"format": "pt"})
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(config(), f, indent=2)
    shutil.copy(os.path.join(TINY, "tokenizer.json"), os.path.join(folder, "tokenizer.json"))


def load_module(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def prompt_ids():
    """The prompt both sides decode from: ids (7·i) mod 480, i < 256."""
    return [(7 * i) % 480 for i in range(PROMPT)]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dir", required=True, help="checkpoint folder (written if absent)")
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--rounds", type=int, default=5, help="forward passes timed (median)")
    ap.add_argument("--generations", type=int, default=1, help="generations timed (median)")
    ap.add_argument("--llada-ref", help="folder with llada_model/ (Fast-dLLM's llada/model) and LLaDA's generate.py")
    ap.add_argument("--transformers", help="a `pip install --target` folder with transformers 4.x")
    ap.add_argument("--write-only", action="store_true", help="write the checkpoint and stop")
    ap.add_argument("--answer-out", help="write the generated answer's ids here (JSON)")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    write_checkpoint(args.dir)
    if args.write_only:
        return
    if args.transformers:
        sys.path.insert(0, args.transformers)
    from safetensors.torch import load_file

    if not args.llada_ref:
        sys.exit("--llada-ref DIR is needed (LLaDA's reference code; see docs/performance.md)")
    sys.path.insert(0, os.path.abspath(args.llada_ref))
    llada = importlib.import_module("llada_model")
    generate = load_module("llada_generate", os.path.join(args.llada_ref, "generate.py")).generate
    cfg = llada.LLaDAConfig(**config())
    model = llada.LLaDAModelLM(cfg, init_params=False)
    missing, unexpected = model.load_state_dict(load_file(os.path.join(args.dir, "model.safetensors")), strict=False)
    if missing or unexpected:
        sys.exit(f"the checkpoint does not fit modeling_llada.py: missing {missing}, unexpected {unexpected}")
    model = model.float().eval()
    ids = torch.tensor([prompt_ids() + [ROWS - 1] * (LENGTH - PROMPT)])
    times = []
    with torch.no_grad():
        model(ids).logits  # warm-up
        for _ in range(args.rounds):
            t0 = time.perf_counter()
            model(ids).logits
            times.append(time.perf_counter() - t0)
    print(f"llada/forward/1x{LENGTH} {statistics.median(times):.6f}")
    gen_times, out = [], None
    for _ in range(args.generations):
        t0 = time.perf_counter()
        out = generate(model, torch.tensor([prompt_ids()]), steps=STEPS, gen_length=LENGTH - PROMPT,
                       block_length=BLOCK, temperature=0.0, remasking="low_confidence", mask_id=ROWS - 1)
        gen_times.append(time.perf_counter() - t0)
    print(f"llada/generate/{STEPS} {statistics.median(gen_times):.6f}")
    answer = out[0, PROMPT:].tolist()
    if args.answer_out:
        with open(args.answer_out, "w") as f:
            json.dump(answer, f)
    print(f"# torch {torch.__version__}, {args.threads} threads; answer's first ids {answer[:8]}",
          file=sys.stderr)


if __name__ == "__main__":
    main()
