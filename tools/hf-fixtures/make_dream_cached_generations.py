#!/usr/bin/env python3
"""Fast-dLLM's cached generations of the tiny Dream fixture, call by call.

Runs Fast-dLLM's Dream block loop (`DreamGenerationMixin._sample` of
`dream/model/generation_utils_block.py`: prefix cache, or dual cache with `dual_cache=True`;
`alg='confidence_threshold'` with `threshold`, or any other `alg`, which that loop decodes by
negative entropy with a fixed quota) on the committed plugins/hf/tests/fixtures/dream-tiny
weights (read, never rewritten) and writes `cached_generations.json` beside them: per case the
settings, the prompt, every network call (a fill: the whole canvas; a window: its positions and
the tokens there), the output, the completion a text task receives and how far each step's
choice was from a tie. dlm-hf's tests/dream_cache.rs replays the cases through the SDK's
`dream_cache` sampler and compares every call and the output, token for token; the root
tests/reference_generations.rs runs them through `dlm-bench run`.

What the reference loop does, per block `s..e` of `block_length` positions (steps per block
`S = steps / num_blocks`, grid `linspace(1, eps, S + 1)` in float32):

* a full forward pass that fills the cache, its logits shifted right by one (the logit of
  position i is the output at i − 1); the block's first position `s` is committed at once to
  its `x0` (argmax at temperature 0), whatever the rule;
* then window calls over the cache until the block holds no mask — prefix cache: the window is
  `s..end` with the cached keys and values of `0..s`; dual cache: the window is `s..e`, the
  cache holding the rest (the block's rows are overwritten in place by the window's). The
  window's logits are shifted inside the window (position `s` gets its own output, which is
  never read: `s` is committed at the fill; every other position reads the output one before);
* `confidence_threshold`: the block's masked positions' `x0` and `p(x0)`; the top-1 and every
  position with `p(x0) >= threshold` are committed; no step limit;
* otherwise (`entropy`): at window step i (1..S−1) the confidence is Σ p ln(p + 1e-10) and the
  `int(n · (1 − t_{i+1}/t_i))` most confident of the block's `n` masked positions are committed,
  all of them at i = S − 1 (with S = 1 the loop stops after one window call with the block
  unfinished, so the cases below have S ≥ 2).

Reference (github.com/NVlabs/Fast-dLLM, commit 24cc59e75f20a6384bae8c905965bb090b96388e):
`dream/model/generation_utils_block.py` (`_sample`, `sample_tokens`), copied below (Apache
License 2.0, Copyright 2025 NVIDIA CORPORATION & AFFILIATES) for batch 1 with no attention mask
and `self(...)` calls made to make_cached_generations.py's `FastModel`, which restates
`dream/model/modeling_dream.py`'s cached attention (`DreamSdpaAttention.forward` with
`past_key_value` / `replace_position`, `DreamBaseModel.forward`'s position ids); a record of the
confidence gaps is added.

Everything runs in float32 on the CPU, batch 1, temperature 0. Run (nothing of the Rust build or
tests runs Python):

    /tmp/venv-hf/bin/python tools/hf-fixtures/make_dream_cached_generations.py \\
        --fixtures plugins/hf/tests/fixtures
"""

import argparse
import importlib.util
import json
import os

import torch
import torch.nn.functional as F
from safetensors.torch import load_file
from tokenizers import Tokenizer

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location(
    "make_cached_generations", os.path.join(HERE, "make_cached_generations.py"))
cached = importlib.util.module_from_spec(spec)
spec.loader.exec_module(cached)

FAST_DLLM = ("NVlabs/Fast-dLLM dream/model/generation_utils_block.py @ "
             "24cc59e75f20a6384bae8c905965bb090b96388e")


class DreamCall:
    """`self(x, attention_mask, tok_idx, past_key_values=…, use_cache=…, dual_cache=…,
    replace_position=…)` as `_sample` calls the model, on `FastModel` (whose cached keys are laid
    out `[batch, kv_heads, positions, head_dim]`, Dream's `[batch, positions, kv_width]`: the
    prefix cut below is on the positions either way)."""

    def __init__(self, model):
        self.model = model
        self.device = torch.device("cpu")

    def __call__(self, x, attention_mask, tok_idx, past_key_values=None, use_cache=False,
                 dual_cache=False, replace_position=None):
        assert attention_mask == "full" and tok_idx is None
        return self.model(x, use_cache=use_cache, past_key_values=past_key_values,
                          replace_position=replace_position if dual_cache else None)


# ------------------------------------------------------------------ Fast-dLLM generation_utils_block.py
# Copied from the reference (Apache-2.0, NVIDIA): `sample_tokens` whole; `_sample` for batch 1
# without an attention mask (the `histories` bookkeeping dropped), `self` being `DreamCall`, the
# prefix cut on FastModel's layout, and `record(...)` calls added.

def sample_tokens(logits, temperature=0.0, top_p=None, top_k=None, margin_confidence=False, neg_entropy=False):
    assert temperature == 0 and top_p is None and top_k is None  # the cases below
    probs = torch.softmax(logits, dim=-1)
    confidence, x0 = probs.max(dim=-1)
    if margin_confidence:
        sorted_probs, _ = torch.sort(probs, dim=-1, descending=True)
        top1_probs = sorted_probs[:, 0]
        top2_probs = sorted_probs[:, 1]
        confidence = top1_probs - top2_probs
    if neg_entropy:
        epsilon = 1e-10
        log_probs = torch.log(probs + epsilon)
        confidence = torch.sum(probs * log_probs, dim=-1)
    return confidence, x0


def _sample(self, input_ids, max_length, mask_token_id, steps, eps, alg, alg_temp,
            temperature=0.0, top_p=None, top_k=None, threshold=0.9, block_length=32, dual_cache=False):
    x = F.pad(input_ids, (0, max_length - input_ids.shape[1]), value=mask_token_id)
    gen_length = max_length - input_ids.shape[1]
    if block_length is None:
        block_length = gen_length
    assert gen_length % block_length == 0, f"gen_length ({gen_length}) must be divisible by block_length ({block_length})"
    num_blocks = gen_length // block_length
    assert steps % num_blocks == 0, f"steps ({steps}) must be divisible by num_blocks ({num_blocks})"
    steps_per_block = steps // num_blocks
    timesteps = torch.linspace(1, eps, steps_per_block + 1, device=x.device)
    tok_idx = None
    attention_mask = "full"
    past_key_values = None
    for num_block in range(num_blocks):
        current_block_start = input_ids.shape[1] + num_block * block_length
        current_block_end = current_block_start + block_length
        # update cache
        model_output = self(x, attention_mask, tok_idx, use_cache=True)
        past_key_values = model_output.past_key_values
        logits = model_output.logits
        logits = torch.cat([logits[:, :1], logits[:, :-1]], dim=1)
        confidence, x0 = sample_tokens(logits, temperature=temperature, top_p=top_p, top_k=top_k)
        record_fill(logits, current_block_start, x0, mask_token_id)
        x[:, current_block_start] = x0[:, current_block_start]
        if not dual_cache:
            # Dream cuts [:, :current_block_start, :] of its [batch, positions, width] cache.
            past_key_values = [tuple(t[:, :, :current_block_start] for t in layer) for layer in past_key_values]
        else:
            replace_position = torch.zeros_like(x, dtype=torch.bool)
            replace_position[:, current_block_start:current_block_end] = 1
        i = 1
        while True:
            if dual_cache:
                mask_index = (x[:, current_block_start:current_block_end] == mask_token_id)
            else:
                mask_index = (x[:, current_block_start:] == mask_token_id)
            current_attention_mask = attention_mask
            if dual_cache:
                model_output = self(x[:, current_block_start:current_block_end], current_attention_mask,
                                    None, past_key_values=past_key_values, use_cache=True,
                                    dual_cache=dual_cache, replace_position=replace_position)
            else:
                model_output = self(x[:, current_block_start:], current_attention_mask, None,
                                    past_key_values=past_key_values, use_cache=True)
            logits = model_output.logits
            logits = torch.cat([logits[:, :1], logits[:, :-1]], dim=1)
            if alg == 'confidence_threshold':
                mask_logits = logits[mask_index]
                confidence, x0 = sample_tokens(mask_logits, temperature=temperature, top_p=top_p, top_k=top_k)
                if dual_cache:
                    x_ = torch.zeros_like(x[:, current_block_start:current_block_end], dtype=torch.long) + mask_token_id
                    full_confidence = torch.full_like(x[:, current_block_start:current_block_end], -torch.inf, dtype=logits.dtype)
                else:
                    x_ = torch.zeros_like(x[:, current_block_start:], dtype=torch.long) + mask_token_id
                    full_confidence = torch.full_like(x[:, current_block_start:], -torch.inf, dtype=logits.dtype)
                x_[mask_index] = x0.clone()
                full_confidence[mask_index] = confidence
                full_confidence[:, block_length:] = -torch.inf
                current_transfer_tokens = (x[:, current_block_start:current_block_end] == mask_token_id).sum()
                selected_confidence, select_index = torch.topk(full_confidence, current_transfer_tokens)
                transfer_index = torch.zeros_like(x_, dtype=torch.bool)
                transfer_index[0, select_index[0]] = True
                for k in range(1, current_transfer_tokens):
                    if selected_confidence[0, k] < threshold:
                        transfer_index[0, select_index[0, k]] = False
                record_step(mask_logits, full_confidence, None, threshold, x_[transfer_index], mask_token_id)
                if dual_cache:
                    x[:, current_block_start:current_block_end][transfer_index] = x_[transfer_index]
                else:
                    x[:, current_block_start:][transfer_index] = x_[transfer_index]
            else:
                if i == steps_per_block:
                    break
                t = timesteps[i]
                s = timesteps[i + 1]
                mask_index[:, block_length:] = False
                mask_logits = logits[mask_index]
                confidence, x0 = sample_tokens(mask_logits, temperature, top_p=top_p, top_k=top_k, neg_entropy=True)
                num_mask_token = mask_index.sum() / mask_index.shape[0]
                number_transfer_tokens = int(num_mask_token * (1 - s / t)) if i < steps_per_block - 1 else int(num_mask_token)
                if dual_cache:
                    full_confidence = torch.full_like(x[:, current_block_start:current_block_end], -torch.inf, dtype=logits.dtype)
                else:
                    full_confidence = torch.full_like(x[:, current_block_start:], -torch.inf, dtype=logits.dtype)
                full_confidence[mask_index] = confidence
                full_confidence[:, block_length:] = -torch.inf
                MODEL.counts.append(number_transfer_tokens)
                if number_transfer_tokens > 0:
                    assert alg_temp is None or alg_temp == 0  # the cases below
                    _, transfer_index = torch.topk(full_confidence, number_transfer_tokens)
                    if dual_cache:
                        x_ = torch.zeros_like(x[:, current_block_start:current_block_end], dtype=torch.long) + mask_token_id
                    else:
                        x_ = torch.zeros_like(x[:, current_block_start:], dtype=torch.long) + mask_token_id
                    x_[mask_index] = x0.clone()
                    record_step(mask_logits, full_confidence, number_transfer_tokens, None,
                                x_[0, transfer_index[0]], mask_token_id)
                    row_indices = torch.arange(x.size(0)).unsqueeze(1).expand_as(transfer_index)
                    if dual_cache:
                        x[:, current_block_start:current_block_end][row_indices, transfer_index] = x_[row_indices, transfer_index]
                    else:
                        x[:, current_block_start:][row_indices, transfer_index] = x_[row_indices, transfer_index]
                i += 1
            if (x[:, current_block_start:current_block_end] == mask_token_id).sum() == 0:
                break
    return x


# ------------------------------------------------------------------ ties and mask draws

MODEL = None


def record_fill(logits, start, x0, mask_id):
    """The fill step's argmax at the block's first position: its top-two logit gap."""
    top2 = torch.topk(logits[0, start], 2).values
    MODEL.gaps.append(float(top2[0] - top2[1]))
    MODEL.mask_commits += int(x0[0, start] == mask_id)


def record_step(mask_logits, full_confidence, count, threshold, committed, mask_id):
    """How far a window step's choice is from a tie (as make_cached_generations.py's
    `record_gap`): the top-two logit gap of every masked row, and the gap between the last
    chosen and the first left confidence (fixed quota) or the top two confidences and every
    confidence's distance to the threshold (threshold mode). Also counts commits of the mask
    token itself, which the reference reads as masked again and the SDK as decided."""
    MODEL.mask_commits += int((committed == mask_id).sum())
    if mask_logits.shape[0] == 0:
        return
    top2 = torch.topk(mask_logits, 2, dim=-1).values
    gaps = [float((top2[:, 0] - top2[:, 1]).min())]
    conf = full_confidence[0][torch.isfinite(full_confidence[0])]
    if threshold is None:
        if 0 < count < conf.numel():
            top = torch.topk(conf, count + 1).values
            gaps.append(float(top[count - 1] - top[count]))
    elif conf.numel() > 1:
        top = torch.topk(conf, 2).values
        gaps.append(float(top[0] - top[1]))
        gaps.append(float((conf - threshold).abs().min()))
    MODEL.gaps.append(min(gaps))


# ------------------------------------------------------------------ cases


def cases():
    for cache in ("prefix", "dual"):
        # Fixed quota by negative entropy: (steps, block_length), 2 or 4 blocks of 16 tokens,
        # 2 to 8 steps per block.
        for steps, block_length in ((8, 8), (16, 8), (8, 4), (16, 4)):
            yield {"cache": cache, "alg": "entropy", "steps": steps, "gen_length": 16,
                   "block_length": block_length, "threshold": None, "eps": 1e-3}
        # Threshold mode: steps only count the blocks (Fast-dLLM's eval passes steps = blocks).
        # The random tiny network's confidences lie near 0.015–0.03, so are the thresholds:
        # 0.01 commits a block's rest in one window, 0.018–0.02 one to a few tokens a window.
        for threshold, block_length in ((0.01, 8), (0.018, 8), (0.018, 4), (0.02, 4)):
            yield {"cache": cache, "alg": "confidence_threshold", "steps": 16 // block_length,
                   "gen_length": 16, "block_length": block_length, "threshold": threshold,
                   "eps": 1e-3}


def run(folder):
    global MODEL
    config = json.load(open(os.path.join(folder, "config.json")))
    weights = load_file(os.path.join(folder, "model.safetensors"))
    tok = Tokenizer.from_file(os.path.join(folder, "tokenizer.json"))
    mask_id = config["mask_token_id"]
    rows = []
    for case in cases():
        for text in cached.PROMPTS:
            prompt = torch.tensor([tok.encode(text).ids])
            MODEL = cached.FastModel("dream", config, weights)
            MODEL.counts, MODEL.mask_commits = [], 0
            with torch.no_grad():
                x = _sample(DreamCall(MODEL), prompt, prompt.shape[1] + case["gen_length"], mask_id,
                            case["steps"], case["eps"], case["alg"], 0.0, threshold=case["threshold"] or 0.9,
                            block_length=case["block_length"], dual_cache=case["cache"] == "dual")
            final = x[0].tolist()
            generated = final[prompt.shape[1]:]
            eos = config["eos_token_id"]
            region = generated[: generated.index(eos)] if eos in generated else generated
            rows.append({"settings": case, "prompt_text": text, "prompt": prompt[0].tolist(),
                         # What a text task receives (as make_generations.py's `completion`).
                         "completion": tok.decode(region, skip_special_tokens=True),
                         "calls": MODEL.calls, "final": final, "nfe": len(MODEL.calls),
                         "counts": MODEL.counts, "mask_commits": MODEL.mask_commits,
                         "min_gap": min(MODEL.gaps)})
    out = {
        "about": ("Fast-dLLM's cached generations of dream-tiny (its Dream block loop): calls[i] "
                  "is network call i (fill: the whole canvas; window: positions start..end and "
                  "the tokens there), checkpoint ids with mask " f"{mask_id}; counts: the fixed "
                  "quota's per-step counts; mask_commits: commits of the mask token itself; "
                  "min_gap: the closest any step came to a tie; written by "
                  "tools/hf-fixtures/make_dream_cached_generations.py"),
        "decoder": FAST_DLLM,
        "torch": torch.__version__,
        "mask_token_id": mask_id,
        "cases": rows,
    }
    path = os.path.join(folder, "cached_generations.json")
    cached.write(path, out)
    for r in rows:
        s = r["settings"]
        print(s["cache"], s["alg"], s["steps"], s["block_length"], s["threshold"], "nfe", r["nfe"],
              "counts", r["counts"], "mask commits", r["mask_commits"], "min_gap", f"{r['min_gap']:.2e}")
    print(path, len(rows), "cases")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--fixtures", default="plugins/hf/tests/fixtures")
    args = ap.parse_args()
    torch.set_num_threads(1)
    run(os.path.join(args.fixtures, "dream-tiny"))


if __name__ == "__main__":
    main()
