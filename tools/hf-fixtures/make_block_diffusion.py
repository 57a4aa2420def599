#!/usr/bin/env python3
"""Build the tiny SDAR (block diffusion) checkpoint dlm-hf's tests/block_diffusion.rs checks.

SDAR (github.com/JetAstra/SDAR, commit c2041a8333333d685f6e15122c84f60f51f85ebd) is a
Qwen3-style network (q/k RMSNorms on each head, no q/k/v biases, `head_dim` its own config
value) trained as a block-diffusion model: its attention is block-causal in blocks of
`block_size` positions. This script runs the reference code itself, not a restatement:

* `training/model/SDAR-4B-Chat/modeling_sdar.py` and `configuration_sdar.py` (the model; the
  8B copy is identical; it imports `fused_linear_diffusion_cross_entropy.py`, the training
  loss, unused here), written for transformers 4.52.4;
* `generate.py`'s `block_diffusion_generate` (the decoding loop: the prompt's whole blocks
  prefilled into a DynamicCache with the block-causal mask, then block by block: the block's
  queries over the cache and the block itself, `denoising_steps` steps with
  `get_num_transfer_tokens` quotas and a remasking strategy, then one more call that stores
  the finished block's keys and values).

Neither file is copied into this repository: pass the folder they are in (`--sdar`, see
below). The reference imports two CUDA-only kernels from flash-attn, which this CPU script
replaces by the same math in PyTorch (`stub_flash_attn`): `rms_norm_fn` by the RMSNorm the
modelling file keeps in its comment (x * rsqrt(mean(x^2) + eps) in f32, times the weight), and
`flash_attn_func` (the decoding path, taken when no query is masked) by
`scaled_dot_product_attention` without a mask. Training mode runs flex attention under
torch.compile; here the training pass's mask (`block_attn_mask`, the reference's function) is
given to the same layers in eval mode, which then run it through `scaled_dot_product_attention`.

Written into plugins/hf/tests/fixtures/sdar-tiny/:

    config.json        SDARConfig fields (model_type "sdar", block_size 4, head_dim 24 with
                       hidden 64 and 4 heads: SDAR-4B also has head_dim != hidden/heads)
    model.safetensors  random f32 weights (fixed seed) under SDAR's tensor names
    tokenizer.json     dream-tiny's tokenizer with the mask token renamed <|MASK|> (SDAR's)
    reference.json     logits: the block-causal forward over a canvas (the reference's prefill
                       call), a block over the cache of the blocks before it (its decoding
                       call), and the training pass over x_t (+) x_0; then generations of
                       block_diffusion_generate on two prompts

Generations: the reference always draws with torch.multinomial from softmax(logits / T). At
T = 1e-8 every draw here is the argmax with probability exactly 1.0 (the script checks it and
records the smallest top-1/top-2 logit gap), so the outputs are reproducible outside torch.
Consequence for `low_confidence_dynamic`: every confidence is 1.0, so each block is decoded in
one step (the whole block passes the threshold). `sequential` (the leftmost quota of masked
positions per step) decodes a block in `denoising_steps` steps. `stopping_criteria_idx` is left
at None (decode every block).

Regenerate (CPU; transformers 4.52.4 beside the venv's newer one, imported first):

    /tmp/venv-hf/bin/pip install --target /tmp/tf452 --no-deps transformers==4.52.4 \
        'tokenizers>=0.21,<0.22' 'huggingface_hub>=0.30,<1.0' einops requests urllib3 idna \
        charset_normalizer certifi
    mkdir -p /tmp/sdar-ref && for f in training/model/SDAR-4B-Chat/modeling_sdar.py \
        training/model/SDAR-4B-Chat/configuration_sdar.py generate.py \
        training/model/SDAR-4B-Chat/fused_linear_diffusion_cross_entropy.py; do \
        git -C SDAR show c2041a8333333d685f6e15122c84f60f51f85ebd:$f > /tmp/sdar-ref/$(basename $f); done
    /tmp/venv-hf/bin/python tools/hf-fixtures/make_block_diffusion.py \
        --sdar /tmp/sdar-ref --transformers /tmp/tf452 --out plugins/hf/tests/fixtures
"""

import argparse
import importlib
import json
import os
import sys
import types

BLOCK = 4
T_ARGMAX = 1e-8


def stub_flash_attn():
    """flash-attn's two kernels, as the same math in PyTorch (see the docstring)."""
    import torch
    import torch.nn.functional as F
    import transformers.modeling_utils  # noqa: F401  (probes flash_attn by spec before the stub)

    def rms_norm_fn(x, weight, bias=None, eps=1e-6):
        dtype = x.dtype
        h = x.to(torch.float32)
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + eps)
        return weight * h.to(dtype)

    def flash_attn_func(q, k, v, causal=False, softmax_scale=None):
        out = F.scaled_dot_product_attention(
            q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2),
            is_causal=causal, scale=softmax_scale, enable_gqa=True)
        return out.transpose(1, 2)

    root = types.ModuleType("flash_attn")
    root.flash_attn_func = flash_attn_func
    sys.modules["flash_attn"] = root
    for name in ["flash_attn.ops", "flash_attn.ops.triton"]:
        sys.modules[name] = types.ModuleType(name)
    norm = types.ModuleType("flash_attn.ops.triton.layer_norm")
    norm.rms_norm_fn = rms_norm_fn
    sys.modules["flash_attn.ops.triton.layer_norm"] = norm


def load_reference(sdar_dir):
    """modeling_sdar / configuration_sdar as a package (they import each other relatively)."""
    pkg = types.ModuleType("sdar_ref")
    pkg.__path__ = [sdar_dir]
    sys.modules["sdar_ref"] = pkg
    config = importlib.import_module("sdar_ref.configuration_sdar")
    modeling = importlib.import_module("sdar_ref.modeling_sdar")
    sys.path.insert(0, sdar_dir)
    generate = importlib.import_module("generate")
    return config, modeling, generate


def sdar_config(config_mod):
    return config_mod.SDARConfig(
        vocab_size=512, hidden_size=64, intermediate_size=96, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, head_dim=24, hidden_act="silu",
        max_position_embeddings=256, rms_norm_eps=1e-6, rope_theta=10000.0, rope_scaling=None,
        attention_bias=False, use_sliding_window=False, sliding_window=None, tie_word_embeddings=False,
        bos_token_id=480, eos_token_id=480, pad_token_id=480, mask_token_id=481, block_size=BLOCK,
        fuse_cross_entropy=False, use_cache=False, torch_dtype="float32",
        architectures=["SDARForCausalLM"], attn_implementation="sdpa",
    )


def randomize(model, seed):
    """Every parameter from one seeded generator: matrices ~ N(0, 1/fan_in), embeddings N(0, 1),
    norms (q/k norms included) 1 + 0.1 N(0, 1), so that every weight matters."""
    import torch

    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in sorted(model.named_parameters()):
            if name.endswith("norm.weight"):
                p.copy_(1.0 + 0.1 * torch.randn(p.shape, generator=gen))
            elif "embed_tokens" in name:
                p.copy_(torch.randn(p.shape, generator=gen))
            else:
                p.copy_(torch.randn(p.shape, generator=gen) / p.shape[1] ** 0.5)


def block_mask(length):
    """generate.py's block_diffusion_attention_mask: key block <= query block."""
    import torch

    blocks = (length + BLOCK - 1) // BLOCK
    m = torch.tril(torch.ones(blocks, blocks))
    return m.repeat_interleave(BLOCK, 0).repeat_interleave(BLOCK, 1)[:length, :length].unsqueeze(0)


def rounded(t):
    """Logits to 6 decimals (the tests' tolerance is 1e-5), to keep the fixture small."""
    return [round(x, 6) for x in t.flatten().tolist()]


def logits_cases(model, modeling, mask_id):
    import torch
    from transformers.cache_utils import DynamicCache

    ids = torch.tensor([[17, 240, 5, 99, 310, 12, mask_id, 77, 8, mask_id, mask_id, 401,
                         mask_id, 3, mask_id, mask_id]])
    n = ids.shape[1]
    pos = torch.arange(n).unsqueeze(0)
    out = {}
    with torch.no_grad():
        # The prefill call: every position at once under the block-causal mask.
        full = model(ids, attention_mask=block_mask(n), position_ids=pos).logits
        out["block_causal"] = {"input_ids": ids[0].tolist(), "logits": rounded(full[0])}
        # The decoding call: blocks 0-1 stored, then block 2's queries over them and itself.
        cache = DynamicCache()
        model(ids[:, :8], attention_mask=block_mask(8), position_ids=pos[:, :8],
              past_key_values=cache, use_cache=True, store_kv=True)
        window = model(ids[:, 8:12], attention_mask=torch.ones(1, 4, 12), position_ids=pos[:, 8:12],
                       past_key_values=cache, use_cache=True, store_kv=False).logits
        out["cached_block"] = {"input_ids": ids[0].tolist(), "stored": [0, 8], "block": [8, 12],
                               "logits": rounded(window[0])}
        # The training pass: x_t (+) x_0, both halves at positions 0..n, block_diff_mask.
        x0 = ids.clone()
        x0[x0 == mask_id] = 42
        xt_x0 = torch.cat([ids, x0], 1)
        mask = modeling.block_attn_mask([torch.tensor([n])], BLOCK, "cpu")  # [1, 2n, 2n]
        hidden = model.model(xt_x0, attention_mask=mask.unsqueeze(1), position_ids=torch.cat([pos, pos], 1))
        logits = model.lm_head(hidden.last_hidden_state)
        out["training"] = {"xt": ids[0].tolist(), "x0": x0[0].tolist(),
                           "logits": rounded(logits[0])}
    return out


# Prompts of whole blocks (8 and 12 tokens) whose ids survive decoding and encoding, so that
# the text path sees the same ids.
PROMPT_TEXTS = ["She has 3 cats.", "She sold 48 clips."]


def generation_cases(model, generate, mask_id, tokenizer):
    import torch

    prompts = [tokenizer.encode(text).ids for text in PROMPT_TEXTS]
    for text, ids in zip(PROMPT_TEXTS, prompts):
        assert len(ids) % BLOCK == 0 and tokenizer.decode(ids) == text, (text, ids)
    settings = [("sequential", 4), ("sequential", 2), ("low_confidence_dynamic", 4)]
    cases, min_gap = [], float("inf")
    original = generate.sample_with_temperature_topk_topp

    def checked(logits, **kw):
        nonlocal min_gap
        top = logits.float().topk(2, dim=-1).values
        min_gap = min(min_gap, (top[..., 0] - top[..., 1]).min().item())
        token, prob = original(logits, **kw)
        assert torch.all(token == logits.argmax(-1)) and torch.all(prob == 1.0), "not decided"
        return token, prob

    generate.sample_with_temperature_topk_topp = checked
    for prompt in prompts:
        for strategy, steps in settings:
            x = generate.block_diffusion_generate(
                model, {"input_ids": torch.tensor([prompt])}, mask_id, gen_length=16,
                block_length=BLOCK, denoising_steps=steps, temperature=T_ARGMAX,
                remasking_strategy=strategy, confidence_threshold=0.85)
            cases.append({"prompt": prompt, "prompt_text": tokenizer.decode(prompt), "strategy": strategy, "denoising_steps": steps,
                          "gen_length": 16, "block_length": BLOCK, "temperature": T_ARGMAX,
                          "confidence_threshold": 0.85, "output": x[0].tolist()})
    generate.sample_with_temperature_topk_topp = original
    return cases, min_gap


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sdar", required=True, help="folder with modeling_sdar.py, configuration_sdar.py, generate.py")
    ap.add_argument("--transformers", required=True, help="a --target install of transformers 4.52.4")
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=2)
    args = ap.parse_args()
    sys.path.insert(0, args.transformers)
    import torch
    import transformers
    from safetensors.torch import save_file

    assert transformers.__version__ == "4.52.4", transformers.__version__
    torch.set_num_threads(1)
    stub_flash_attn()
    config_mod, modeling, generate = load_reference(os.path.abspath(args.sdar))
    config = sdar_config(config_mod)
    model = modeling.SDARForCausalLM(config).eval()
    randomize(model, args.seed)
    mask_id = config.mask_token_id

    out = os.path.join(args.out, "sdar-tiny")
    os.makedirs(out, exist_ok=True)
    here = os.path.dirname(os.path.abspath(__file__))
    fixtures = os.path.join(here, "..", "..", "plugins", "hf", "tests", "fixtures")
    with open(os.path.join(fixtures, "dream-tiny", "tokenizer.json")) as f:
        tok = json.load(f)
    for t in tok["added_tokens"]:
        if t["id"] == mask_id:
            t["content"] = "<|MASK|>"
    with open(os.path.join(out, "tokenizer.json"), "w") as f:
        json.dump(tok, f, ensure_ascii=False)
    cfg = config.to_dict()
    keep = ["architectures", "model_type", "attention_bias", "attention_dropout", "block_size",
            "bos_token_id", "eos_token_id", "pad_token_id", "mask_token_id", "head_dim",
            "hidden_act", "hidden_size", "intermediate_size", "max_position_embeddings",
            "max_window_layers", "num_attention_heads", "num_hidden_layers", "num_key_value_heads",
            "rms_norm_eps", "rope_scaling", "rope_theta", "sliding_window", "tie_word_embeddings",
            "torch_dtype", "use_sliding_window", "vocab_size"]
    cfg = {k: cfg[k] for k in keep}
    cfg["torch_dtype"] = "float32"
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
    weights = os.path.join(out, "model.safetensors")
    save_file({k: v.contiguous() for k, v in model.state_dict().items()}, weights)
    os.chmod(weights, 0o644)

    reference = {
        "about": "SDAR's modeling_sdar.py and generate.py (JetAstra/SDAR c2041a8333333d685f6e15122c84f60f51f85ebd) "
                 "on these weights; tools/hf-fixtures/make_block_diffusion.py",
        "torch": torch.__version__, "transformers": transformers.__version__, "seed": args.seed,
        "mask_token_id": mask_id, "block_size": BLOCK,
    }
    reference.update(logits_cases(model, modeling, mask_id))
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(os.path.join(out, "tokenizer.json"))
    reference["generations"], reference["min_gap"] = generation_cases(model, generate, mask_id, tokenizer)
    with open(os.path.join(out, "reference.json"), "w") as f:
        json.dump(reference, f)
    print(f"wrote {out}: {len(reference['generations'])} generations, smallest top-1/top-2 gap {reference['min_gap']:.3g}")


if __name__ == "__main__":
    main()
