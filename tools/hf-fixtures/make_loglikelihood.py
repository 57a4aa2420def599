#!/usr/bin/env python3
"""LLaDA's Monte-Carlo log-likelihood (its ELBO) of the tiny LLaDA fixture, mask by mask.

Runs LLaDA's own `get_log_likelihood` on the committed plugins/hf/tests/fixtures/llada-tiny
weights (read, never rewritten) and writes `loglikelihood.json` beside them: per case the
prompt and answer ids, `mc_num`, `batch_size`, every mini-batch's masks (positions within the
answer, as `forward_process` drew them), every mini-batch's loss (`loss.item()`) and the
returned estimate. dlm-hf's tests/loglikelihood.rs gives the SDK's `elbo_terms` the same masks
and compares every mini-batch's loss and the estimate.

Reference (github.com/ML-GSAI/LLaDA, commit b7e6c3565f194352da44b38dd12b6970597309f3,
`get_log_likelihood.py`, MIT licence): `forward_process`, `get_logits` and
`get_log_likelihood` are copied below unchanged except for one added line in
`get_log_likelihood` that records each mini-batch's masks and loss. The model is
make_fixtures.py's restatement of `modeling_llada.py`'s forward pass (the one whose logits
tests/reference.rs checks), in float32 on the CPU, one thread.

    /tmp/venv-hf/bin/python tools/hf-fixtures/make_loglikelihood.py \\
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
spec = importlib.util.spec_from_file_location("make_fixtures", os.path.join(HERE, "make_fixtures.py"))
make_fixtures = importlib.util.module_from_spec(spec)
spec.loader.exec_module(make_fixtures)

LLADA = "ML-GSAI/LLaDA get_log_likelihood.py @ b7e6c3565f194352da44b38dd12b6970597309f3"

# (prompt, answer, mc_num, batch_size, seed): answers of 1 token (a single-token choice, as
# LLaDA's MMLU), of a few tokens, and batches larger than the answer (draws share counts).
CASES = [
    ("Natalia sold 48 clips in April", " and half as many in May.", 8, 4, 0),
    ("She earns $12 an hour.", " How much did she earn in 50 minutes?", 16, 8, 1),
    ("Weng earns", " $", 4, 2, 2),
    ("Betty is saving money for a new wallet", " which costs $100.", 32, 16, 3),
]

RECORD = []


class Output:
    def __init__(self, logits):
        self.logits = logits


class TinyLlada:
    """The fixture's forward pass with the interface `get_log_likelihood` calls."""

    def __init__(self, config, weights):
        self.c, self.w = config, weights
        self.device = torch.device("cpu")

    def __call__(self, input):
        return Output(make_fixtures.llada_forward(self.c, self.w, input))


# ---------------------------------------------------------------- copied from get_log_likelihood.py


def forward_process(batch, prompt_index, mask_id):
    b, l = batch.shape

    target_len = (l - prompt_index.sum()).item()
    k = torch.randint(1, target_len + 1, (), device=batch.device)

    x = torch.round(torch.linspace(float(k), k + (b - 1) * (target_len / b), steps=b, device=batch.device)).long()
    x = ((x - 1) % target_len) + 1
    assert x.min() >= 1 and x.max() <= target_len

    indices = torch.arange(target_len, device=batch.device).repeat(b, 1)
    is_mask = indices < x.unsqueeze(1)
    for i in range(b):
        is_mask[i] = is_mask[i][torch.randperm(target_len)]

    is_mask = torch.cat((torch.zeros(b, prompt_index.sum(), dtype=torch.bool, device=batch.device), is_mask), dim=1)
    noisy_batch = torch.where(is_mask, mask_id, batch)

    # Return the masked batch and the mask ratio
    return noisy_batch, (x / target_len).unsqueeze(1).repeat(1, l)


def get_logits(model, batch, prompt_index, cfg_scale, mask_id):
    if cfg_scale > 0.:
        assert len(prompt_index) == batch.shape[1]
        prompt_index = prompt_index.unsqueeze(0).repeat(batch.shape[0], 1)
        un_batch = batch.clone()
        un_batch[prompt_index] = mask_id
        batch = torch.cat([batch, un_batch])

    input = batch
    logits = model(input).logits

    if cfg_scale > 0.:
        logits, un_logits = torch.chunk(logits, 2, dim=0)
        logits = un_logits + (cfg_scale + 1) * (logits - un_logits)
    return logits


@ torch.no_grad()
def get_log_likelihood(model, prompt, answer, mc_num=128, batch_size=16, cfg_scale=0., mask_id=126336):
    seq = torch.concatenate([prompt, answer])[None, :]
    seq = seq.repeat((batch_size, 1)).to(model.device)
    prompt_index = torch.arange(seq.shape[1], device=model.device) < len(prompt)

    loss_ = []
    for _ in range(mc_num // batch_size):
        perturbed_seq, p_mask = forward_process(seq, prompt_index, mask_id)
        mask_index = perturbed_seq == mask_id

        logits = get_logits(model, perturbed_seq, prompt_index, cfg_scale, mask_id)

        loss = F.cross_entropy(logits[mask_index], seq[mask_index], reduction='none') / p_mask[mask_index]
        loss = loss.sum() / batch_size

        loss_.append(loss.item())
        # Added: the mini-batch's masks (answer positions) and loss.
        RECORD.append({"masks": [row[len(prompt):].nonzero().flatten().tolist() for row in mask_index],
                       "loss": loss.item()})

    return - sum(loss_) / len(loss_)


# ----------------------------------------------------------------------------------------------


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--fixtures", default="plugins/hf/tests/fixtures")
    args = ap.parse_args()
    torch.set_num_threads(1)
    folder = os.path.join(args.fixtures, "llada-tiny")
    with open(os.path.join(folder, "config.json")) as f:
        config = json.load(f)
    weights = load_file(os.path.join(folder, "model.safetensors"))
    tok = Tokenizer.from_file(os.path.join(folder, "tokenizer.json"))
    model = TinyLlada(config, weights)
    mask_id = config["mask_token_id"]
    cases = []
    for prompt, answer, mc_num, batch_size, seed in CASES:
        prompt_ids, answer_ids = tok.encode(prompt).ids, tok.encode(answer).ids
        torch.manual_seed(seed)
        RECORD.clear()
        value = get_log_likelihood(model, torch.tensor(prompt_ids), torch.tensor(answer_ids),
                                   mc_num=mc_num, batch_size=batch_size, mask_id=mask_id)
        cases.append({
            "prompt": prompt, "answer": answer, "prompt_ids": prompt_ids, "answer_ids": answer_ids,
            "mc_num": mc_num, "batch_size": batch_size, "seed": seed,
            "batches": list(RECORD), "log_likelihood": value,
        })
        print(f"{answer!r}: {len(answer_ids)} tokens, mc_num {mc_num}, batch {batch_size}: {value:.6f}")
    out = {
        "about": "LLaDA's get_log_likelihood on llada-tiny: per mini-batch the masks (answer "
                 "positions) and loss, and the estimate (minus the mean loss)",
        "reference": LLADA,
        "torch": torch.__version__,
        "mask_token_id": mask_id,
        "cases": cases,
    }
    with open(os.path.join(folder, "loglikelihood.json"), "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
