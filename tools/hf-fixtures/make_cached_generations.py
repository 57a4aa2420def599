#!/usr/bin/env python3
"""Fast-dLLM's cached generations of the tiny LLaDA fixture, call by call, and its cached
forward pass on both tiny diffusion fixtures.

Runs Fast-dLLM's `generate_with_prefix_cache` and `generate_with_dual_cache` on the committed
plugins/hf/tests/fixtures/llada-tiny weights (read, never rewritten) and writes
`cached_generations.json` beside them: per case the settings, the prompt, every network call
(a fill: the whole canvas; a window: its positions and the tokens there), the output and how
far each step's choice was from a tie. dlm-hf's tests/kv_cache.rs replays the cases through the
SDK's samplers with `cache: prefix | dual` and compares every call and the output, token for
token. It also writes `cached_windows.json` beside llada-tiny and dream-tiny: one canvas
filled, then changed inside a window, and the reference's window logits for the prefix and the
dual cache (the stale keys and values outside the window included), which tests/kv_cache.rs
compares with dlm-hf's window pass.

Reference (github.com/NVlabs/Fast-dLLM, commit 24cc59e75f20a6384bae8c905965bb090b96388e):

* `llada/generate.py`: `generate_with_prefix_cache`, `generate_with_dual_cache`,
  `get_transfer_index`, `get_num_transfer_tokens`, `add_gumbel_noise` — copied below (Apache
  License 2.0, Copyright 2025 NVIDIA CORPORATION & AFFILIATES) with `model(...)` calls
  unchanged and a record of the confidence gaps added;
* `llada/model/modeling_llada.py`, `LLaDABlock.attention` with `layer_past` and
  `replace_position`, and `RotaryEmbedding.forward` with `block_end_index` (and Dream's
  counterparts in `dream/model/modeling_dream.py`): restated in `FastModel` on
  make_fixtures.py's functions. The keys and values are cached *before* RoPE;
  a window's keys are the cached ones concatenated with the fresh ones (prefix cache: the
  cache is cut at the block's start and the window runs to the end) or the cache with the
  block's rows overwritten in place (dual cache), and RoPE is then applied to the whole key
  sequence at positions 0..key_len and to the queries at their own positions
  (`key_len − query_len..key_len`, or `block_end − query_len..block_end`). No attention mask
  (Fast-dLLM computes an attention bias but passes `attn_mask=None`).

Everything runs in float32 on the CPU, batch 1, temperature 0, as the reference's `main` does
apart from the dtype. Run (nothing of the Rust build or tests runs Python):

    /tmp/venv-hf/bin/python tools/hf-fixtures/make_cached_generations.py \\
        --fixtures plugins/hf/tests/fixtures
"""

import argparse
import importlib.util
import json
import math
import os

import numpy as np
import torch
import torch.nn.functional as F
from safetensors.torch import load_file
from tokenizers import Tokenizer

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("make_fixtures", os.path.join(HERE, "make_fixtures.py"))
make_fixtures = importlib.util.module_from_spec(spec)
spec.loader.exec_module(make_fixtures)

PROMPTS = ["Natalia sold 48 clips in April", "She earns $12 an hour."]
FAST_DLLM = "NVlabs/Fast-dLLM llada/generate.py @ 24cc59e75f20a6384bae8c905965bb090b96388e"


class Output:
    def __init__(self, logits, past_key_values):
        self.logits, self.past_key_values = logits, past_key_values


NAMES = {
    # embedding, final norm, head; per block: attention norm, q/k/v (with bias?), out, FFN norm,
    # gate, up, down — as make_fixtures.py's llada_forward and dream_forward read them.
    "llada": ("model.transformer.wte.weight", "model.transformer.ln_f.weight", "model.transformer.ff_out.weight",
              "model.transformer.blocks.{i}.", "attn_norm.weight", "{n}_proj", False, "attn_out.weight",
              "ff_norm.weight", "ff_proj.weight", "up_proj.weight", "ff_out.weight"),
    "dream": ("model.embed_tokens.weight", "model.norm.weight", "lm_head.weight",
              "model.layers.{i}.", "input_layernorm.weight", "self_attn.{n}_proj", True, "self_attn.o_proj.weight",
              "post_attention_layernorm.weight", "mlp.gate_proj.weight", "mlp.up_proj.weight", "mlp.down_proj.weight"),
}


class FastModel:
    """LLaDA's or Dream's forward pass with Fast-dLLM's key/value cache; records its calls.

    LLaDA: `LLaDABlock.attention` (llada/model/modeling_llada.py); Dream: `DreamSdpaAttention`
    and `DreamBaseModel.forward` (dream/model/modeling_dream.py), which cache the projections
    (biases included) before RoPE in the same way and rotate the queries at
    `key_len − query_len..key_len` or `block_end − query_len..block_end` likewise."""

    def __init__(self, arch, config, weights):
        self.arch, self.c, self.w = arch, config, weights
        self.calls = []
        self.gaps = []  # per step: how far the choice was from a tie (see get_transfer_index)
        self.device = torch.device("cpu")

    def dims(self):
        c = self.c
        if self.arch == "llada":
            return c["n_heads"], c["n_kv_heads"], c["d_model"], c["n_layers"], c["rms_norm_eps"]
        return (c["num_attention_heads"], c["num_key_value_heads"], c["hidden_size"],
                c["num_hidden_layers"], c["rms_norm_eps"])

    def __call__(self, x, use_cache=False, past_key_values=None, replace_position=None):
        w = self.w
        emb, final_norm, head, block, attn_norm, qkv, bias, out, ffn_norm, gate, up, down = NAMES[self.arch]
        h, kvh, width, layers, eps = self.dims()
        d = width // h
        if past_key_values is None:
            self.calls.append({"kind": "fill", "tokens": x[0].tolist()})
        else:
            past = past_key_values[0][0].shape[-2]
            start = past if replace_position is None else int(replace_position[0].nonzero()[0])
            self.calls.append({"kind": "window", "start": start, "end": start + x.shape[1], "tokens": x[0].tolist()})
        hidden = F.embedding(x, w[emb])
        presents = []
        for i in range(layers):
            b = block.format(i=i)
            xn = make_fixtures.rms_norm(hidden, w[b + attn_norm], eps)
            q, k, v = (F.linear(xn, w[b + qkv.format(n=n) + ".weight"],
                                w[b + qkv.format(n=n) + ".bias"] if bias else None) for n in "qkv")
            B, T, C = q.shape
            q = q.view(B, T, h, d).transpose(1, 2)
            k = k.view(B, T, kvh, d).transpose(1, 2)
            v = v.view(B, T, kvh, d).transpose(1, 2)
            block_end = None
            if past_key_values is not None:
                past_key, past_value = past_key_values[i]
                if replace_position is None:
                    k = torch.cat((past_key, k), dim=-2)
                    v = torch.cat((past_value, v), dim=-2)
                else:
                    replace_indices = replace_position.nonzero(as_tuple=True)[1]
                    past_key[:, :, replace_indices] = k
                    k = past_key
                    past_value[:, :, replace_indices] = v
                    v = past_value
                    block_end = int(replace_indices.max()) + 1
            presents.append((k, v))
            query_len, key_len = q.shape[-2], k.shape[-2]
            cos, sin = make_fixtures.rope_tables(key_len, d, self.c["rope_theta"])
            end = key_len if block_end is None else block_end
            q = make_fixtures.apply_rope(q, cos[:, :, end - query_len : end], sin[:, :, end - query_len : end])
            k = make_fixtures.apply_rope(k, cos, sin)
            if kvh != h:
                k, v = k.repeat_interleave(h // kvh, dim=1), v.repeat_interleave(h // kvh, dim=1)
            scores = q @ k.transpose(2, 3) / math.sqrt(d)
            att = (torch.softmax(scores.float(), dim=-1).to(q.dtype) @ v).transpose(1, 2).reshape(B, T, C)
            hidden = hidden + F.linear(att, w[b + out])
            xn = make_fixtures.rms_norm(hidden, w[b + ffn_norm], eps)
            gated = F.silu(F.linear(xn, w[b + gate])) * F.linear(xn, w[b + up])
            hidden = hidden + F.linear(gated, w[b + down])
        hidden = make_fixtures.rms_norm(hidden, w[final_norm], eps)
        logits = F.linear(hidden, w[head])
        if self.arch == "llada" and self.c["scale_logits"]:
            logits = logits / math.sqrt(width)
        return Output(logits, presents if use_cache else None)


# ------------------------------------------------------------------ Fast-dLLM llada/generate.py
# Copied from the reference (Apache-2.0, NVIDIA); `MODEL` records the confidence gaps.

MODEL = None


def add_gumbel_noise(logits, temperature):
    if temperature == 0:
        return logits
    logits = logits.to(torch.float64)
    noise = torch.rand_like(logits, dtype=torch.float64)
    gumbel_noise = (-torch.log(noise)) ** temperature
    return logits.exp() / gumbel_noise


def get_num_transfer_tokens(mask_index, steps):
    mask_num = mask_index.sum(dim=1, keepdim=True)
    base = mask_num // steps
    remainder = mask_num % steps
    num_transfer_tokens = torch.zeros(mask_num.size(0), steps, device=mask_index.device, dtype=torch.int64) + base
    for i in range(mask_num.size(0)):
        num_transfer_tokens[i, : remainder[i]] += 1
    return num_transfer_tokens


@torch.no_grad()
def generate_with_prefix_cache(model, prompt, steps=128, gen_length=128, block_length=128, temperature=0.,
                               remasking='low_confidence', mask_id=126336, threshold=None):
    x = torch.full((1, prompt.shape[1] + gen_length), mask_id, dtype=torch.long).to(model.device)
    x[:, :prompt.shape[1]] = prompt.clone()
    assert gen_length % block_length == 0
    num_blocks = gen_length // block_length
    assert steps % num_blocks == 0
    steps = steps // num_blocks
    nfe = 0
    for num_block in range(num_blocks):
        current_block_start = prompt.shape[1] + num_block * block_length
        current_block_end = current_block_start + block_length
        block_mask_index = (x[:, current_block_start:current_block_end] == mask_id)
        num_transfer_tokens = get_num_transfer_tokens(block_mask_index, steps)
        output = model(x, use_cache=True)
        past_key_values = output.past_key_values
        mask_index = (x == mask_id)
        mask_index[:, current_block_end:] = 0
        x0, transfer_index = get_transfer_index(output.logits, temperature, remasking, mask_index, x, num_transfer_tokens[:, 0] if threshold is None else None, threshold)
        x[transfer_index] = x0[transfer_index]
        new_past_key_values = []
        for i in range(len(past_key_values)):
            new_past_key_values.append(())
            for j in range(len(past_key_values[i])):
                new_past_key_values[i] += (past_key_values[i][j][:, :, :current_block_start],)
        past_key_values = new_past_key_values
        nfe += 1
        i = 1
        while True:
            nfe += 1
            mask_index = (x[:, current_block_start:] == mask_id)
            mask_index[:, block_length:] = 0
            logits = model(x[:, current_block_start:], past_key_values=past_key_values, use_cache=True).logits
            logits_with_noise = add_gumbel_noise(logits, temperature=temperature)
            x0 = torch.argmax(logits_with_noise, dim=-1)
            x0, transfer_index = get_transfer_index(logits, temperature, remasking, mask_index,
                                                    x[:, current_block_start:], num_transfer_tokens[:, i] if threshold is None else None, threshold)
            x[:, current_block_start:][transfer_index] = x0[transfer_index]
            if (x[:, current_block_start:current_block_end] == mask_id).sum() == 0:
                break
            i += 1
    return x, nfe


@torch.no_grad()
def generate_with_dual_cache(model, prompt, steps=128, gen_length=128, block_length=128, temperature=0.,
                             remasking='low_confidence', mask_id=126336, threshold=None):
    x = torch.full((1, prompt.shape[1] + gen_length), mask_id, dtype=torch.long).to(model.device)
    x[:, :prompt.shape[1]] = prompt.clone()
    assert gen_length % block_length == 0
    num_blocks = gen_length // block_length
    assert steps % num_blocks == 0
    steps = steps // num_blocks
    nfe = 0
    for num_block in range(num_blocks):
        current_block_start = prompt.shape[1] + num_block * block_length
        current_block_end = current_block_start + block_length
        block_mask_index = (x[:, current_block_start:current_block_end] == mask_id)
        num_transfer_tokens = get_num_transfer_tokens(block_mask_index, steps)
        output = model(x, use_cache=True)
        past_key_values = output.past_key_values
        mask_index = (x == mask_id)
        mask_index[:, current_block_end:] = 0
        x0, transfer_index = get_transfer_index(output.logits, temperature, remasking, mask_index, x, num_transfer_tokens[:, 0] if threshold is None else None, threshold)
        x[transfer_index] = x0[transfer_index]
        nfe += 1
        i = 1
        replace_position = torch.zeros_like(x, dtype=torch.bool)
        replace_position[:, current_block_start:current_block_end] = 1
        while True:
            nfe += 1
            mask_index = (x[:, current_block_start:current_block_end] == mask_id)
            logits = model(x[:, current_block_start:current_block_end], past_key_values=past_key_values, use_cache=True, replace_position=replace_position).logits
            x0, transfer_index = get_transfer_index(logits, temperature, remasking, mask_index,
                                                    x[:, current_block_start:current_block_end], num_transfer_tokens[:, i] if threshold is None else None, threshold)
            x[:, current_block_start:current_block_end][transfer_index] = x0[transfer_index]
            if (x[:, current_block_start:current_block_end] == mask_id).sum() == 0:
                break
            i += 1
    return x, nfe


def get_transfer_index(logits, temperature, remasking, mask_index, x, num_transfer_tokens, threshold=None):
    logits_with_noise = add_gumbel_noise(logits, temperature=temperature)
    x0 = torch.argmax(logits_with_noise, dim=-1)
    if remasking == 'low_confidence':
        p = F.softmax(logits.to(torch.float64), dim=-1)
        x0_p = torch.squeeze(torch.gather(p, dim=-1, index=torch.unsqueeze(x0, -1)), -1)
    elif remasking == 'random':
        x0_p = torch.rand((x0.shape[0], x0.shape[1]), device=x0.device)
    else:
        raise NotImplementedError(remasking)
    x0 = torch.where(mask_index, x0, x)
    confidence = torch.where(mask_index, x0_p, -np.inf)
    record_gap(logits, mask_index, confidence, num_transfer_tokens, threshold)
    transfer_index = torch.zeros_like(x0, dtype=torch.bool, device=x0.device)
    if threshold is not None:
        num_transfer_tokens = mask_index.sum(dim=1, keepdim=True)
    for j in range(confidence.shape[0]):
        _, select_index = torch.topk(confidence[j], k=num_transfer_tokens[j])
        transfer_index[j, select_index] = True
        if threshold is not None:
            for k in range(1, num_transfer_tokens[j]):
                if confidence[j, select_index[k]] < threshold:
                    transfer_index[j, select_index[k]] = False
    return x0, transfer_index


# ------------------------------------------------------------------ ties


def record_gap(logits, mask_index, confidence, num_transfer_tokens, threshold):
    """How far this step's choice is from a tie, so that float rounding elsewhere (f32
    softmax, another summation order) cannot flip it: the top-two logit gap of every masked
    row (the argmax), and the gap between the last chosen and first left confidence (fixed
    quota) or every confidence's distance to the threshold (threshold mode)."""
    rows = logits[mask_index]
    if rows.shape[0] == 0:
        return
    top2 = torch.topk(rows, 2, dim=-1).values
    gaps = [float((top2[:, 0] - top2[:, 1]).min())]
    conf = confidence[0][torch.isfinite(confidence[0])]
    if threshold is None:
        k = int(num_transfer_tokens[0])
        if 0 < k < conf.numel():
            top = torch.topk(conf, k + 1).values
            gaps.append(float(top[k - 1] - top[k]))
    else:
        if conf.numel() > 1:
            top = torch.topk(conf, 2).values
            gaps.append(float(top[0] - top[1]))
            gaps.append(float((conf - threshold).abs().min()))
    MODEL.gaps.append(min(gaps))


# ------------------------------------------------------------------ cases


def cases():
    for cache in ("prefix", "dual"):
        # Fixed quota: (steps, block_length) with 2 and 4 blocks of a 16-token answer.
        for steps, block_length in ((8, 8), (16, 8), (8, 4)):
            yield {"cache": cache, "steps": steps, "gen_length": 16, "block_length": block_length, "threshold": None}
        # Threshold mode (steps only bound the blocks' count): the random tiny network's
        # confidences are small, so thresholds that commit several tokens per step are too.
        for threshold, block_length in ((0.025, 8), (0.025, 4), (0.03, 4)):
            yield {"cache": cache, "steps": 16, "gen_length": 16, "block_length": block_length, "threshold": threshold}


def window_logits(arch, config, weights, prompt, mask_id):
    """A canvas filled, then changed inside the first block; the reference's window logits
    (Dream's shifted inside the window, as generation_utils_block.py's `_sample` does)."""
    global MODEL
    block_length, gen_length = 8, 16
    canvas = torch.full((1, prompt.shape[1] + gen_length), mask_id, dtype=torch.long)
    canvas[:, : prompt.shape[1]] = prompt
    canvas[0, prompt.shape[1] + block_length + 2] = 17  # a token after the block, for the dual cache
    start, end = prompt.shape[1], prompt.shape[1] + block_length
    changed = canvas.clone()
    changed[0, start] = 42
    changed[0, start + 3] = 7
    out = {"fill": canvas[0].tolist(), "window": changed[0].tolist(), "cases": []}
    forward = make_fixtures.llada_forward if arch == "llada" else make_fixtures.dream_forward
    for cache in ("prefix", "dual"):
        MODEL = FastModel(arch, config, weights)
        with torch.no_grad():
            filled = MODEL(canvas, use_cache=True)
            past = filled.past_key_values
            # The cache-filling pass is make_fixtures.py's forward pass (the uncached truth).
            plain = forward(config, weights, canvas)
            assert torch.allclose(filled.logits, plain, atol=1e-5), (filled.logits - plain).abs().max()
            if cache == "prefix":
                past = [(k[:, :, :start], v[:, :, :start]) for k, v in past]
                logits = MODEL(changed[:, start:], past_key_values=past, use_cache=True).logits
                window = [start, changed.shape[1]]
            else:
                replace = torch.zeros_like(changed, dtype=torch.bool)
                replace[:, start:end] = 1
                logits = MODEL(changed[:, start:end], past_key_values=past, use_cache=True, replace_position=replace).logits
                window = [start, end]
        if arch == "dream":
            logits = torch.cat([logits[:, :1], logits[:, :-1]], dim=1)
        out["cases"].append({"cache": cache, "window": window, "shape": list(logits.shape),
                             "logits": [round(float(v), 7) for v in logits.flatten()]})
    return out


def write(path, out):
    with open(path, "w") as f:
        json.dump(out, f, separators=(",", ":"))
        f.write("\n")


def windows(arch, folder):
    """cached_windows.json: the stale-window logits of `window_logits`."""
    config = json.load(open(os.path.join(folder, "config.json")))
    weights = load_file(os.path.join(folder, "model.safetensors"))
    tok = Tokenizer.from_file(os.path.join(folder, "tokenizer.json"))
    out = window_logits(arch, config, weights, torch.tensor([tok.encode(PROMPTS[0]).ids]), config["mask_token_id"])
    out["about"] = (f"Fast-dLLM's cached forward pass of {arch}-tiny: `fill` filled the cache, `window` "
                    "is the canvas at the window step (checkpoint ids); per cache mode the window's "
                    "logits; written by tools/hf-fixtures/make_cached_generations.py")
    out["reference"] = ("NVlabs/Fast-dLLM @ 24cc59e75f20a6384bae8c905965bb090b96388e "
                        + ("llada/model/modeling_llada.py" if arch == "llada" else
                           "dream/model/modeling_dream.py, generation_utils_block.py"))
    path = os.path.join(folder, "cached_windows.json")
    write(path, out)
    print(path)


def run(folder):
    global MODEL
    config = json.load(open(os.path.join(folder, "config.json")))
    weights = load_file(os.path.join(folder, "model.safetensors"))
    tok = Tokenizer.from_file(os.path.join(folder, "tokenizer.json"))
    mask_id = config["mask_token_id"]
    rows = []
    for case in cases():
        for text in PROMPTS:
            prompt = torch.tensor([tok.encode(text).ids])
            MODEL = FastModel("llada", config, weights)
            generate = generate_with_prefix_cache if case["cache"] == "prefix" else generate_with_dual_cache
            x, nfe = generate(MODEL, prompt, steps=case["steps"], gen_length=case["gen_length"],
                              block_length=case["block_length"], temperature=0.0,
                              remasking="low_confidence", mask_id=mask_id, threshold=case["threshold"])
            assert nfe == len(MODEL.calls)
            final = x[0].tolist()
            generated = final[prompt.shape[1]:]
            eos = config["eos_token_id"]
            region = generated[: generated.index(eos)] if eos in generated else generated
            rows.append({"settings": case, "prompt_text": text, "prompt": prompt[0].tolist(),
                         # What a text task receives (as make_generations.py's `completion`).
                         "completion": tok.decode(region, skip_special_tokens=True),
                         "calls": MODEL.calls, "final": final, "nfe": nfe,
                         "min_gap": min(MODEL.gaps)})
    out = {
        "about": ("Fast-dLLM's cached generations of llada-tiny: calls[i] is network call i (fill: "
                  "the whole canvas; window: positions start..end and the tokens there), checkpoint "
                  "ids with mask " f"{mask_id}; min_gap: the closest any step came to a tie; "
                  "written by tools/hf-fixtures/make_cached_generations.py"),
        "decoder": FAST_DLLM,
        "torch": torch.__version__,
        "mask_token_id": mask_id,
        "cases": rows,
    }
    path = os.path.join(folder, "cached_generations.json")
    write(path, out)
    for r in rows:
        s = r["settings"]
        print(s["cache"], s["steps"], s["block_length"], s["threshold"], "nfe", r["nfe"], "min_gap", f"{r['min_gap']:.2e}")
    print(path, len(rows), "cases")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--fixtures", default="plugins/hf/tests/fixtures")
    args = ap.parse_args()
    torch.set_num_threads(1)
    run(os.path.join(args.fixtures, "llada-tiny"))
    for arch in ("llada", "dream"):
        windows(arch, os.path.join(args.fixtures, f"{arch}-tiny"))


if __name__ == "__main__":
    main()
