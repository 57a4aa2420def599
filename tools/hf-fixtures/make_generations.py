#!/usr/bin/env python3
"""Reference generations of the tiny diffusion fixtures, step by step.

Runs the published decoders on the committed tiny checkpoints (plugins/hf/tests/fixtures/
llada-tiny and dream-tiny; the weights are read, never rewritten) and writes
`generations.json` beside each: for every case, the prompt ids, the settings, the canvas
(checkpoint ids, the checkpoint's own mask id where masked) before every forward pass, and the
final tokens. dlm-hf's tests/generations.rs replays each case through the SDK's samplers and
compares every forward pass's input, i.e. which positions were committed to what at every step.

The decoders are restated from (read at these commits; ours is a transcription, line for line,
with a history added):

* LLaDA `generate` — github.com/ML-GSAI/LLaDA, generate.py, commit
  b7e6c3565f194352da44b38dd12b6970597309f3 (`get_num_transfer_tokens`, `add_gumbel_noise` in
  float64, `remasking='low_confidence'`: softmax over the model's full output row). Fast-dLLM's
  llada/generate.py `generate` (github.com/NVlabs/Fast-dLLM, commit
  24cc59e75f20a6384bae8c905965bb090b96388e) is the same loop.
* Dream `_sample` / `sample_tokens` / `top_p_logits` / `top_k_logits` — Dream-org's
  generation_utils.py, as copied into github.com/NVlabs/Fast-dLLM dream/model/
  generation_utils.py at commit 24cc59e75f20a6384bae8c905965bb090b96388e (that copy adds only
  an `alg='confidence_threshold'` branch, not used here). The logits are shifted right by one
  (`cat(logits[:, :1], logits[:, :-1])`), the schedule is `linspace(1, eps, steps + 1)` and a
  step commits `int(n · (1 − s/t))` of the n masked positions (all at the last step).

The network is make_fixtures.py's forward pass (checked against the Burn one by
tests/reference.rs). Everything runs in float32 on the CPU, batch 1, as the references do.

What cannot be reproduced elsewhere is marked on each case rather than left out:

* `random_draws`: `alg='origin'` (positions unmask by torch.rand) and sampled `alg_temp`
  draws use torch's generator; a case's tokens then depend on torch's random stream.
* `decided`: for temperature > 0, whether every draw the decoder made equals the argmax of the
  distribution it drew from, so any sampler drawing at that temperature agrees with
  overwhelming probability (the smallest top-two logit gap over the draws is recorded).
* `min_cut`: the smallest gap, over the steps, between the confidence of the last position
  committed and the first left masked (float32). Where it is 0 (a tie, e.g. confidences that
  saturate at 1.0 at low temperature), torch.topk's order among equals decided, and `decided`
  is false.
* `outside_ids`: whether the reference ever chose an id past the tokenizer or the mask token
  itself (its softmax and argmax run over all 512 rows of the padded output).

Run (CPU only; nothing of the Rust build or tests runs Python):

    /tmp/venv-hf/bin/python tools/hf-fixtures/make_generations.py \
        --fixtures plugins/hf/tests/fixtures
"""

import argparse
import importlib.util
import json
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
TOKENIZER_IDS = 483  # make_fixtures.py: 480 learned tokens, end-of-text, mask, spare


class Recorder:
    """The network, recording the canvas it is called on (the state before each step)."""

    def __init__(self, arch, config, weights):
        self.forward = make_fixtures.llada_forward if arch == "llada" else make_fixtures.dream_forward
        self.config, self.weights, self.states = config, weights, []
        self.gaps = []  # top-two logit gaps of the rows drawn at temperature > 0
        self.cuts = []  # confidence gaps between the last committed and the first kept position

    def cut(self, confidence, k):
        """Record how far the k-th highest confidence is above the (k+1)-th (float32)."""
        finite = confidence[torch.isfinite(confidence)]
        if 0 < k < finite.numel():
            top = torch.topk(finite, k + 1).values
            self.cuts.append(float(top[k - 1] - top[k]))

    def __call__(self, x):
        self.states.append(x[0].tolist())
        return self.forward(self.config, self.weights, x)


# ------------------------------------------------------------------ LLaDA generate.py


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
    num = torch.zeros(mask_num.size(0), steps, dtype=torch.int64) + base
    for i in range(mask_num.size(0)):
        num[i, : remainder[i]] += 1
    return num


def llada_generate(model, prompt, steps, gen_length, block_length, temperature, mask_id):
    x = torch.full((1, prompt.shape[1] + gen_length), mask_id, dtype=torch.long)
    x[:, : prompt.shape[1]] = prompt.clone()
    decided = True
    num_blocks = gen_length // block_length
    steps = steps // num_blocks
    for num_block in range(num_blocks):
        lo = prompt.shape[1] + num_block * block_length
        block_mask_index = x[:, lo : lo + block_length] == mask_id
        num_transfer_tokens = get_num_transfer_tokens(block_mask_index, steps)
        for i in range(steps):
            mask_index = x == mask_id
            logits = model(x)
            logits_with_noise = add_gumbel_noise(logits, temperature=temperature)
            x0 = torch.argmax(logits_with_noise, dim=-1)
            if temperature > 0:
                decided &= bool((x0[mask_index] == torch.argmax(logits, dim=-1)[mask_index]).all())
                top2 = torch.topk(logits[mask_index], 2, dim=-1).values
                model.gaps.append(float((top2[:, 0] - top2[:, 1]).min()))
            p = F.softmax(logits, dim=-1)
            x0_p = torch.squeeze(torch.gather(p, dim=-1, index=torch.unsqueeze(x0, -1)), -1)
            x0_p[:, lo + block_length :] = -np.inf
            x0 = torch.where(mask_index, x0, x)
            confidence = torch.where(mask_index, x0_p, -np.inf)
            transfer_index = torch.zeros_like(x0, dtype=torch.bool)
            model.cut(confidence[0], int(num_transfer_tokens[0, i]))
            _, select_index = torch.topk(confidence[0], k=int(num_transfer_tokens[0, i]))
            transfer_index[0, select_index] = True
            x[transfer_index] = x0[transfer_index]
    return x, decided


# ------------------------------------------------------------------ Dream generation_utils.py


def top_p_logits(logits, top_p):
    sorted_logits, sorted_indices = torch.sort(logits, descending=True)
    cumulative_probs = torch.cumsum(F.softmax(sorted_logits, dim=-1), dim=-1)
    sorted_indices_to_remove = cumulative_probs > top_p
    sorted_indices_to_remove[..., 1:] = sorted_indices_to_remove[..., :-1].clone()
    sorted_indices_to_remove[..., 0] = 0
    mask = torch.zeros_like(logits, dtype=torch.bool)
    mask = mask.scatter_(-1, sorted_indices, sorted_indices_to_remove)
    return logits.masked_fill(mask, torch.finfo(logits.dtype).min)


def top_k_logits(logits, top_k):
    top_k = min(top_k, logits.size(-1))
    indices_to_remove = logits < torch.topk(logits, top_k)[0][..., -1, None]
    return logits.masked_fill(indices_to_remove, torch.finfo(logits.dtype).min)


def sample_tokens(logits, temperature, top_p, top_k, margin_confidence=False, neg_entropy=False, gaps=None):
    if temperature > 0:
        logits = logits / temperature
    if top_p is not None and top_p < 1:
        logits = top_p_logits(logits, top_p)
    if top_k is not None:
        logits = top_k_logits(logits, top_k)
    probs = torch.softmax(logits, dim=-1)
    decided = True
    if temperature > 0:
        x0 = torch.distributions.Categorical(probs=probs).sample()
        confidence = torch.gather(probs, -1, x0.unsqueeze(-1)).squeeze(-1)
        decided = bool((x0 == probs.argmax(dim=-1)).all())
        if logits.shape[0] > 0:
            top2 = torch.topk(logits, 2, dim=-1).values * temperature
            gaps.append(float((top2[:, 0] - top2[:, 1]).min()))
    else:
        confidence, x0 = probs.max(dim=-1)
    if margin_confidence:
        sorted_probs, _ = torch.sort(probs, dim=-1, descending=True)
        confidence = sorted_probs[:, 0] - sorted_probs[:, 1]
    if neg_entropy:
        confidence = torch.sum(probs * torch.log(probs + 1e-10), dim=-1)
    return confidence, x0, decided


def dream_sample(model, prompt, steps, gen_length, temperature, top_p, top_k, alg, alg_temp, eps, mask_id):
    x = F.pad(prompt, (0, gen_length), value=mask_id)
    timesteps = torch.linspace(1, eps, steps + 1)
    decided, counts = True, []
    for i in range(steps):
        mask_index = x == mask_id
        logits = model(x)
        logits = torch.cat([logits[:, :1], logits[:, :-1]], dim=1)
        mask_logits = logits[mask_index]
        t, s = timesteps[i], timesteps[i + 1]
        if alg == "origin":
            p_transfer = 1 - s / t if i < steps - 1 else 1
            x0 = torch.zeros_like(x[mask_index], dtype=torch.long) + mask_id
            transfer_index_t_s = torch.rand(*x0.shape) < p_transfer
            _, x0[transfer_index_t_s], ok = sample_tokens(
                mask_logits[transfer_index_t_s], temperature, top_p, top_k, gaps=model.gaps
            )
            decided &= ok
            counts.append(int(transfer_index_t_s.sum()))
            x[mask_index] = x0.clone()
            continue
        confidence, x0, ok = sample_tokens(
            mask_logits,
            temperature,
            top_p,
            top_k,
            margin_confidence=alg == "topk_margin",
            neg_entropy=alg == "entropy",
            gaps=model.gaps,
        )
        decided &= ok
        num_mask_token = mask_index.sum() / mask_index.shape[0]
        number_transfer_tokens = int(num_mask_token * (1 - s / t)) if i < steps - 1 else int(num_mask_token)
        counts.append(number_transfer_tokens)
        full_confidence = torch.full_like(x, -torch.inf, dtype=logits.dtype)
        full_confidence[mask_index] = confidence
        if number_transfer_tokens > 0:
            if alg_temp is None or alg_temp == 0:
                model.cut(full_confidence[0], number_transfer_tokens)
                _, transfer_index = torch.topk(full_confidence, number_transfer_tokens)
            else:
                full_confidence = F.softmax(full_confidence / alg_temp, dim=-1)
                transfer_index = torch.multinomial(full_confidence, num_samples=number_transfer_tokens)
            x_ = torch.zeros_like(x, dtype=torch.long) + mask_id
            x_[mask_index] = x0.clone()
            row_indices = torch.arange(x.size(0)).unsqueeze(1).expand_as(transfer_index)
            x[row_indices, transfer_index] = x_[row_indices, transfer_index]
    return x, decided, counts


# ------------------------------------------------------------------ cases


def llada_cases():
    for temperature in (0.0, 0.01):
        for steps, block_length in ((16, 16), (16, 8), (8, 4)):
            yield {"steps": steps, "gen_length": 16, "block_length": block_length, "temperature": temperature}


def dream_cases():
    for alg in ("origin", "maskgit_plus", "topk_margin", "entropy"):
        for temperature in (0.0, 0.01):
            for top_k in (None, 5):
                for steps in (16, 8):
                    yield {
                        "alg": alg,
                        "steps": steps,
                        "gen_length": 16,
                        "temperature": temperature,
                        "top_p": None,
                        "top_k": top_k,
                        "alg_temp": 0.0,
                        "eps": 1e-3,
                    }
    # top_p before the confidence, and a sampled alg_temp (torch's multinomial: random draws)
    for alg, top_p, alg_temp in (("maskgit_plus", 0.9, 0.0), ("entropy", 0.5, 0.0), ("maskgit_plus", None, 0.5)):
        yield {"alg": alg, "steps": 16, "gen_length": 16, "temperature": 0.0, "top_p": top_p,
               "top_k": None, "alg_temp": alg_temp, "eps": 1e-3}


def run(arch, folder, seed):
    config = json.load(open(os.path.join(folder, "config.json")))
    weights = load_file(os.path.join(folder, "model.safetensors"))
    tok = Tokenizer.from_file(os.path.join(folder, "tokenizer.json"))
    mask_id = config["mask_token_id"]
    rows = []
    cases = llada_cases() if arch == "llada" else dream_cases()
    for case in cases:
        for text in PROMPTS:
            prompt = torch.tensor([tok.encode(text).ids])
            model = Recorder(arch, config, weights)
            torch.manual_seed(seed)
            with torch.no_grad():
                if arch == "llada":
                    x, decided = llada_generate(
                        model, prompt, case["steps"], case["gen_length"], case["block_length"],
                        case["temperature"], mask_id,
                    )
                    counts, random_draws = None, False
                else:
                    x, decided, counts = dream_sample(
                        model, prompt, case["steps"], case["gen_length"], case["temperature"],
                        case["top_p"], case["top_k"], case["alg"], case["alg_temp"], case["eps"], mask_id,
                    )
                    random_draws = case["alg"] == "origin" or case["alg_temp"] > 0
            final = x[0].tolist()
            generated = final[prompt.shape[1]:]
            states = model.states + [final]
            outside = any(t >= TOKENIZER_IDS or t == mask_id for s in states for t in s[prompt.shape[1]:] if t != mask_id) \
                or mask_id in generated
            eos = config["eos_token_id"]
            region = generated[: generated.index(eos)] if eos in generated else generated
            rows.append({
                "settings": case,
                "prompt_text": text,
                "prompt": prompt[0].tolist(),
                # What a text task receives: the region up to end-of-text, special tokens
                # (and ids the tokenizer lacks) left out.
                "completion": tok.decode(region, skip_special_tokens=True),
                "states": model.states,
                "final": final,
                "counts": counts,
                "random_draws": random_draws,
                "decided": (decided or case["temperature"] == 0) and min(model.cuts, default=1.0) > 0,
                "min_gap": min(model.gaps) if model.gaps else None,
                "min_cut": min(model.cuts) if model.cuts else None,
                "outside_ids": outside,
            })
    out = {
        "about": (
            f"reference generations of {arch}-tiny: states[i] is the canvas (checkpoint ids, "
            f"mask {mask_id}) fed to forward pass i, final the output; written by "
            "tools/hf-fixtures/make_generations.py"
        ),
        "decoder": "LLaDA generate.py @ b7e6c3565f194352da44b38dd12b6970597309f3"
        if arch == "llada"
        else "Dream generation_utils.py _sample (via NVlabs/Fast-dLLM @ 24cc59e75f20a6384bae8c905965bb090b96388e)",
        "torch": torch.__version__,
        "seed": seed,
        "mask_token_id": mask_id,
        "cases": rows,
    }
    path = os.path.join(folder, "generations.json")
    with open(path, "w") as f:
        json.dump(out, f, separators=(",", ":"))
        f.write("\n")
    summary = {
        "cases": len(rows),
        "random_draws": sum(r["random_draws"] for r in rows),
        "undecided": sum(not r["decided"] for r in rows),
        "outside_ids": sum(r["outside_ids"] for r in rows),
    }
    print(path, summary)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--fixtures", default="plugins/hf/tests/fixtures")
    ap.add_argument("--seed", type=int, default=1234)
    args = ap.parse_args()
    torch.set_num_threads(1)
    run("llada", os.path.join(args.fixtures, "llada-tiny"), args.seed)
    run("dream", os.path.join(args.fixtures, "dream-tiny"), args.seed)


if __name__ == "__main__":
    main()
