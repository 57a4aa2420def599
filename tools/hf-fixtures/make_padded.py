#!/usr/bin/env python3
"""Reference logits of a LEFT-PADDED batch for dlm-hf's tiny LLaDA and Dream fixtures.

dlm-hf gives every prompt exactly `generation_length` completion positions whatever shares its
batch, by left-padding the batch and hiding the padding from attention. This script writes,
next to each existing fixture (the weights are read, never regenerated),

    padded.json   a batch of three prompts of different lengths, left-padded with the
                  end-of-text id, each followed by a completion region (mostly masks);
                  the padding counts; and the logits of every NON-padding position

from the forward pass of make_fixtures.py (imported, not copied), run with the padding
handled the way each reference handles it:

* Dream (Dream-org's generation_utils.py `_sample`, as vendored in NVlabs/Fast-dLLM
  dream/model/generation_utils.py at commit 24cc59e75f20a6384bae8c905965bb090b96388e, lines
  396-409): `tok_idx = attention_mask.cumsum(-1) - 1` with padding positions set to 1, and the
  4-D boolean mask `attention_mask[:, None, None, :] & attention_mask[:, None, :, None]`
  handed to `scaled_dot_product_attention` (modeling_dream.py).
* LLaDA (modeling_llada.py's `LLaDAModel.forward`, same repository, llada/model/
  modeling_llada.py lines 1402-1443): the padding becomes an additive bias
  `(1 - attention_mask) * finfo.min` on the attention scores, positions stay 0..L-1 (its RoPE
  takes no position ids). Note: the published checkpoint's modeling_llada.py then calls the
  attention with `attn_mask=None`, so it attends to the padding anyway (ML-GSAI/LLaDA issues
  #89 and #90); the bias applied here is what its generate.py's `attention_mask` asks for.
  ML-GSAI/LLaDA generate.py at b7e6c3565f194352da44b38dd12b6970597309f3 left-pads (lines
  63-64, 129-131).

It also prints, per fixture, the largest difference between a padded row's logits and the
same row run alone without padding (the property dlm-hf's batch independence rests on).

    /tmp/venv-hf/bin/python tools/hf-fixtures/make_padded.py --fixtures plugins/hf/tests/fixtures
"""

import argparse
import contextlib
import importlib.util
import json
import math
import os

import torch
import torch.nn.functional as F
from safetensors.torch import load_file
from tokenizers import Tokenizer

_spec = importlib.util.spec_from_file_location(
    "make_fixtures", os.path.join(os.path.dirname(os.path.abspath(__file__)), "make_fixtures.py")
)
mf = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(mf)

PROMPTS = [
    "Natalia sold 48 clips in April.",
    "How much?",
    "She earns $12 an hour.",
]
GENERATE = 6  # completion positions per prompt
COMMITTED = {0: [1, 4], 1: [2], 2: []}  # region offsets already holding a token, per row


def padded_batch(tok, mask_id, eos_id):
    """Rows [eos x pad, prompt, region]; the region is masks but for a few committed tokens."""
    prompts = [tok.encode(p).ids for p in PROMPTS]
    longest = max(len(p) for p in prompts)
    rows, padding = [], []
    for b, p in enumerate(prompts):
        pad = longest - len(p)
        region = [mask_id] * GENERATE
        for k, at in enumerate(COMMITTED[b]):
            region[at] = p[k]  # any real token
        rows.append([eos_id] * pad + p + region)
        padding.append(pad)
    return torch.tensor(rows), padding


@contextlib.contextmanager
def padded_forward(arch, attention_mask):
    """make_fixtures' forward passes with the reference's padding handling swapped in for its
    RoPE table and attention (both module globals the forward functions call)."""
    saved = mf.rope_tables, mf.bidirectional_attention
    am = attention_mask.bool()
    if arch == "dream":
        positions = attention_mask.long().cumsum(-1) - 1
        positions.masked_fill_(~am, 1)
        mask4 = am[:, None, None, :] & am[:, None, :, None]  # True: attend
        bias = None
    else:
        positions = torch.arange(attention_mask.shape[1])[None].expand(attention_mask.shape[0], -1)
        mask4 = None
        bias = (1.0 - attention_mask.float())[:, None, None, :] * torch.finfo(torch.float32).min

    def rope_tables(length, head_dim, theta):
        inv_freq = 1.0 / (theta ** (torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim))
        angles = positions[..., None].float() * inv_freq  # [B, L, d/2]
        table = torch.cat([angles, angles], dim=-1)
        return table.cos()[:, None], table.sin()[:, None]  # [B, 1, L, d]

    def attention(q, k, v, n_heads, n_kv_heads, cos, sin, causal=False):
        assert not causal
        b, l, _ = q.shape
        d = q.shape[-1] // n_heads
        q = q.view(b, l, n_heads, d).transpose(1, 2)
        k = k.view(b, l, n_kv_heads, d).transpose(1, 2)
        v = v.view(b, l, n_kv_heads, d).transpose(1, 2)
        q, k = mf.apply_rope(q, cos, sin), mf.apply_rope(k, cos, sin)
        rep = n_heads // n_kv_heads
        k, v = k.repeat_interleave(rep, dim=1), v.repeat_interleave(rep, dim=1)
        if mask4 is not None:
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask4)
        else:
            scores = q @ k.transpose(2, 3) / math.sqrt(d) + bias
            out = torch.softmax(scores, dim=-1) @ v
        return out.transpose(1, 2).reshape(b, l, n_heads * d)

    mf.rope_tables, mf.bidirectional_attention = rope_tables, attention
    try:
        yield
    finally:
        mf.rope_tables, mf.bidirectional_attention = saved


def write(fixtures, arch):
    folder = os.path.join(fixtures, f"{arch}-tiny")
    with open(os.path.join(folder, "config.json")) as f:
        config = json.load(f)
    weights = load_file(os.path.join(folder, "model.safetensors"))
    tok = Tokenizer.from_file(os.path.join(folder, "tokenizer.json"))
    mask_id, eos_id = config["mask_token_id"], tok.token_to_id(mf.EOS)
    forward = {"llada": mf.llada_forward, "dream": mf.dream_forward}[arch]
    ids, padding = padded_batch(tok, mask_id, eos_id)
    attention_mask = torch.ones_like(ids)
    for b, pad in enumerate(padding):
        attention_mask[b, :pad] = 0
    with torch.no_grad(), padded_forward(arch, attention_mask):
        logits = forward(config, weights, ids)
    kept = []
    worst_alone = 0.0
    for b, pad in enumerate(padding):
        kept.append(logits[b, pad:])
        with torch.no_grad():
            alone = forward(config, weights, ids[b : b + 1, pad:])[0]
        worst_alone = max(worst_alone, (alone - logits[b, pad:]).abs().max().item())
    kept = torch.cat(kept)
    assert torch.isfinite(kept).all()
    print(f"{arch}: padded rows vs each row alone: max |diff| {worst_alone:.3e}")
    out = {
        "about": (
            f"raw {arch} network logits (before Dream's shift) of the non-padding positions of a "
            "left-padded batch, from tools/hf-fixtures/make_padded.py: rows in order, each from its "
            "first real token; input_ids hold the checkpoint's ids (end-of-text as padding)"
        ),
        "torch": torch.__version__,
        "input_ids": ids.tolist(),
        "left_padding": padding,
        "shape": list(kept.shape),
        "logits": [float(f"{v:.9g}") for v in kept.flatten().tolist()],
    }
    with open(os.path.join(folder, "padded.json"), "w") as f:
        json.dump(out, f)
        f.write("\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--fixtures", default="plugins/hf/tests/fixtures", help="fixtures directory")
    args = ap.parse_args()
    for arch in ("llada", "dream"):
        write(args.fixtures, arch)


if __name__ == "__main__":
    main()
