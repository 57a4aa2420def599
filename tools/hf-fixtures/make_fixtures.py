#!/usr/bin/env python3
"""Build the tiny LLaDA- and Dream-architecture checkpoints dlm-hf's tests compare against.

Each fixture is a Hugging Face folder, as the real checkpoints are published:

    config.json        the architecture's own field names (LLaDA: d_model, n_layers, ...;
                       Dream: Qwen2-style hidden_size, num_hidden_layers, ...)
    model.safetensors  random f32 weights under the real checkpoints' tensor names
    tokenizer.json     a byte-level BPE trained here on GSM8K questions, with the
                       end-of-text token and the architecture's mask token added
    reference.json     fixed input ids and the logits of the PyTorch forward pass below

The forward passes are written from the architectures' published modelling code
(GSAI-ML's modeling_llada.py, LLaDALlamaBlock path; Dream-org's modeling_dream.py, a Qwen2
network with bidirectional attention), restated here in a few lines each:

* RMSNorm: x * rsqrt(mean(x^2) + eps) * weight, computed in f32.
* RoPE on q and k: inv_freq = 1 / theta^(2i/d), angles = position * inv_freq, the table is
  cat(angles, angles) and rotate_half(x) = cat(-x[d/2:], x[:d/2]) (the "half" convention).
* attention: softmax(q k^T / sqrt(d_head)) v over ALL positions (no causal mask), k/v heads
  repeated for grouped-query attention.
* SwiGLU MLP: down(silu(gate(x)) * up(x)) (LLaDA: ff_out(silu(ff_proj(x)) * up_proj(x))).
* pre-norm residual blocks, a final RMSNorm and an untied output head.

Dream's *generation* shifts the logits right by one (the logit for position i is read at
position i-1: logits = cat(logits[:, :1], logits[:, :-1])); reference.json stores the
network's raw output, and the shift is applied (and tested) by the denoiser in Rust.

Two autoregressive fixtures (qwen2-tiny, llama-tiny) take their reference logits from
transformers' own Qwen2ForCausalLM and LlamaForCausalLM (skipped without transformers).

Regenerate (Python 3.10+, CPU only; nothing of the Rust build needs Python):

    python3 -m venv /tmp/venv-hf
    /tmp/venv-hf/bin/pip install torch safetensors tokenizers numpy transformers
    /tmp/venv-hf/bin/python tools/hf-fixtures/make_fixtures.py \
        --data data/gsm8k/train.jsonl --out plugins/hf/tests/fixtures

The weights come from a fixed torch seed and the tokenizer from a fixed training run, so a
rerun with the same package versions writes the same files (reference.json records them).
"""

import argparse
import importlib.util
import json
import math
import os
import time

import numpy as np
import torch
import torch.nn.functional as F
from safetensors.torch import save_file
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

EOS = "<|endoftext|>"
MASK = {"llada": "<|mdm_mask|>", "dream": "<|mask|>", "qwen2": "<|im_start|>", "llama": "<|im_start|>"}
BPE_VOCAB = 480  # learned tokens; the special tokens follow (480: end-of-text, 481: mask, 482: spare)
EMBEDDING_ROWS = 512  # padded past the tokenizer, as the real checkpoints are


# ----------------------------------------------------------------------------- tokenizer


def train_tokenizer(data_path, mask_token):
    texts = []
    with open(data_path) as f:
        for line in f:
            row = json.loads(line)
            texts.append(row["question"])
            texts.append(row["answer"])
            if len(texts) >= 4000:
                break
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=BPE_VOCAB,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(texts, trainer=trainer)
    assert tok.get_vocab_size() == BPE_VOCAB, tok.get_vocab_size()
    # Added in order: ids 480, 481, 482. The mask token sits inside the vocabulary, not at
    # its end, as LLaDA's <|mdm_mask|> (126336) and Dream's <|mask|> (151666) do.
    tok.add_special_tokens([EOS, mask_token, "<|spare|>"])
    assert tok.token_to_id(EOS) == 480 and tok.token_to_id(mask_token) == 481
    return tok


# ----------------------------------------------------------------------------- shared math


def rms_norm(x, weight, eps):
    x32 = x.float()
    x32 = x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + eps)
    return weight * x32.to(x.dtype)


def rope_tables(length, head_dim, theta):
    inv_freq = 1.0 / (theta ** (torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim))
    pos = torch.arange(length, dtype=torch.float32)
    angles = torch.outer(pos, inv_freq)
    table = torch.cat([angles, angles], dim=-1)
    return table.cos()[None, None], table.sin()[None, None]  # [1, 1, L, d]


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat([-x[..., half:], x[..., :half]], dim=-1)


def apply_rope(x, cos, sin):
    return x * cos + rotate_half(x) * sin


def bidirectional_attention(q, k, v, n_heads, n_kv_heads, cos, sin, causal=False):
    """q: [B, L, H*d], k/v: [B, L, KV*d] -> [B, L, H*d], no causal mask (unless `causal`, which
    only the cross-check against transformers' LLaMA and Qwen2 uses)."""
    b, l, _ = q.shape
    d = q.shape[-1] // n_heads
    q = q.view(b, l, n_heads, d).transpose(1, 2)
    k = k.view(b, l, n_kv_heads, d).transpose(1, 2)
    v = v.view(b, l, n_kv_heads, d).transpose(1, 2)
    q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
    if n_kv_heads != n_heads:
        rep = n_heads // n_kv_heads
        k = k.repeat_interleave(rep, dim=1)
        v = v.repeat_interleave(rep, dim=1)
    scores = q @ k.transpose(2, 3) / math.sqrt(d)
    if causal:
        scores = scores.masked_fill(torch.ones(l, l, dtype=torch.bool).triu(1), float("-inf"))
    out = torch.softmax(scores.float(), dim=-1).to(q.dtype) @ v
    return out.transpose(1, 2).reshape(b, l, n_heads * d)


# ----------------------------------------------------------------------------- LLaDA


def llada_config(vocab_rows, mask_id, eos_id):
    return {
        "architectures": ["LLaDAModelLM"],
        "model_type": "llada",
        "activation_type": "silu",
        "alibi": False,
        "alibi_bias_max": 8.0,
        "attention_dropout": 0.0,
        "attention_layer_norm": False,
        "attention_layer_norm_with_affine": True,
        "bias_for_layer_norm": False,
        "block_group_size": 1,
        "block_type": "llama",
        "d_model": 64,
        "embedding_dropout": 0.0,
        "embedding_size": vocab_rows,
        "eos_token_id": eos_id,
        "flash_attention": False,
        "include_bias": False,
        "include_qkv_bias": False,
        "init_device": "meta",
        "init_fn": "mitchell",
        "init_std": 0.02,
        "input_emb_norm": False,
        "layer_norm_type": "rms",
        "layer_norm_with_affine": True,
        "mask_token_id": mask_id,
        "max_sequence_length": 4096,
        "mlp_hidden_size": 128,
        "mlp_ratio": 4,
        "multi_query_attention": None,
        "n_heads": 4,
        "n_kv_heads": 4,
        "n_layers": 2,
        "pad_token_id": eos_id,
        "precision": "amp_bf16",
        "residual_dropout": 0.0,
        "rms_norm_eps": 1e-05,
        "rope": True,
        "rope_full_precision": True,
        "rope_theta": 500000.0,
        "scale_logits": False,
        "use_cache": False,
        "vocab_size": vocab_rows,
        "weight_tying": False,
    }


def llada_weights(c, gen):
    d, f, kv = c["d_model"], c["mlp_hidden_size"], c["n_kv_heads"] * c["d_model"] // c["n_heads"]
    w = {}

    def lin(out_dim, in_dim):
        return torch.randn(out_dim, in_dim, generator=gen) / math.sqrt(in_dim)

    def norm(n):
        return 1.0 + 0.1 * torch.randn(n, generator=gen)

    p = "model.transformer."
    w[p + "wte.weight"] = torch.randn(c["embedding_size"], d, generator=gen)
    for i in range(c["n_layers"]):
        b = f"{p}blocks.{i}."
        w[b + "attn_norm.weight"] = norm(d)
        w[b + "q_proj.weight"] = lin(d, d)
        w[b + "k_proj.weight"] = lin(kv, d)
        w[b + "v_proj.weight"] = lin(kv, d)
        w[b + "attn_out.weight"] = lin(d, d)
        w[b + "ff_norm.weight"] = norm(d)
        w[b + "ff_proj.weight"] = lin(f, d)
        w[b + "up_proj.weight"] = lin(f, d)
        w[b + "ff_out.weight"] = lin(d, f)
    w[p + "ln_f.weight"] = norm(d)
    w[p + "ff_out.weight"] = lin(c["embedding_size"], d)
    return w


def llada_forward(c, w, ids, causal=False):
    """LLaDAModel.forward with the llama block, rope, no alibi, no attention bias."""
    p = "model.transformer."
    eps, h, kvh = c["rms_norm_eps"], c["n_heads"], c["n_kv_heads"]
    x = F.embedding(ids, w[p + "wte.weight"])
    if c["input_emb_norm"]:
        x = x * c["d_model"] ** 0.5
    cos, sin = rope_tables(ids.shape[1], c["d_model"] // h, c["rope_theta"])
    for i in range(c["n_layers"]):
        b = f"{p}blocks.{i}."
        xn = rms_norm(x, w[b + "attn_norm.weight"], eps)
        q, k, v = (F.linear(xn, w[b + n + "_proj.weight"]) for n in "qkv")
        x = x + F.linear(bidirectional_attention(q, k, v, h, kvh, cos, sin, causal), w[b + "attn_out.weight"])
        xn = rms_norm(x, w[b + "ff_norm.weight"], eps)
        gated = F.silu(F.linear(xn, w[b + "ff_proj.weight"])) * F.linear(xn, w[b + "up_proj.weight"])
        x = x + F.linear(gated, w[b + "ff_out.weight"])
    x = rms_norm(x, w[p + "ln_f.weight"], eps)
    logits = F.linear(x, w[p + "ff_out.weight"])
    if c["scale_logits"]:
        logits = logits / math.sqrt(c["d_model"])
    return logits


# ----------------------------------------------------------------------------- Dream


def dream_config(vocab_rows, mask_id, eos_id):
    return {
        "architectures": ["DreamModel"],
        "model_type": "Dream",
        "attention_dropout": 0.0,
        "bos_token_id": eos_id,
        "eos_token_id": eos_id,
        "hidden_act": "silu",
        "hidden_size": 64,
        "initializer_range": 0.02,
        "intermediate_size": 96,
        "mask_token_id": mask_id,
        "max_position_embeddings": 2048,
        "max_window_layers": 2,
        "num_attention_heads": 4,
        "num_hidden_layers": 2,
        "num_key_value_heads": 2,
        "pad_token_id": eos_id,
        "rms_norm_eps": 1e-06,
        "rope_scaling": None,
        "rope_theta": 1000000.0,
        "sliding_window": None,
        "tie_word_embeddings": False,
        "torch_dtype": "float32",
        "use_cache": False,
        "use_sliding_window": False,
        "vocab_size": vocab_rows,
    }


def dream_weights(c, gen):
    d, f = c["hidden_size"], c["intermediate_size"]
    kv = c["num_key_value_heads"] * d // c["num_attention_heads"]
    w = {}

    def lin(out_dim, in_dim):
        return torch.randn(out_dim, in_dim, generator=gen) / math.sqrt(in_dim)

    def vec(n, scale=0.1, base=0.0):
        return base + scale * torch.randn(n, generator=gen)

    w["model.embed_tokens.weight"] = torch.randn(c["vocab_size"], d, generator=gen)
    for i in range(c["num_hidden_layers"]):
        b = f"model.layers.{i}."
        w[b + "input_layernorm.weight"] = vec(d, base=1.0)
        w[b + "self_attn.q_proj.weight"] = lin(d, d)
        w[b + "self_attn.q_proj.bias"] = vec(d)
        w[b + "self_attn.k_proj.weight"] = lin(kv, d)
        w[b + "self_attn.k_proj.bias"] = vec(kv)
        w[b + "self_attn.v_proj.weight"] = lin(kv, d)
        w[b + "self_attn.v_proj.bias"] = vec(kv)
        w[b + "self_attn.o_proj.weight"] = lin(d, d)
        w[b + "post_attention_layernorm.weight"] = vec(d, base=1.0)
        w[b + "mlp.gate_proj.weight"] = lin(f, d)
        w[b + "mlp.up_proj.weight"] = lin(f, d)
        w[b + "mlp.down_proj.weight"] = lin(d, f)
    w["model.norm.weight"] = vec(d, base=1.0)
    w["lm_head.weight"] = lin(c["vocab_size"], d)
    return w


def dream_forward(c, w, ids, causal=False):
    """DreamModel.forward: Qwen2 layers (q/k/v biases, GQA), attention over all positions."""
    eps, h, kvh = c["rms_norm_eps"], c["num_attention_heads"], c["num_key_value_heads"]
    x = F.embedding(ids, w["model.embed_tokens.weight"])
    cos, sin = rope_tables(ids.shape[1], c["hidden_size"] // h, c["rope_theta"])
    for i in range(c["num_hidden_layers"]):
        b = f"model.layers.{i}."
        xn = rms_norm(x, w[b + "input_layernorm.weight"], eps)
        q, k, v = (
            F.linear(xn, w[f"{b}self_attn.{n}_proj.weight"], w[f"{b}self_attn.{n}_proj.bias"])
            for n in "qkv"
        )
        x = x + F.linear(bidirectional_attention(q, k, v, h, kvh, cos, sin, causal), w[b + "self_attn.o_proj.weight"])
        xn = rms_norm(x, w[b + "post_attention_layernorm.weight"], eps)
        gated = F.silu(F.linear(xn, w[b + "mlp.gate_proj.weight"])) * F.linear(xn, w[b + "mlp.up_proj.weight"])
        x = x + F.linear(gated, w[b + "mlp.down_proj.weight"])
    x = rms_norm(x, w["model.norm.weight"], eps)
    return F.linear(x, w["lm_head.weight"])


# ----------------------------------------------------------------------------- Qwen2 (AR)


def qwen2_config(vocab_rows, mask_id, eos_id):
    """An autoregressive Qwen2 checkpoint of Dream's size (Dream is Qwen2 made bidirectional)."""
    del mask_id
    config = dream_config(vocab_rows, None, eos_id)
    config.update(
        architectures=["Qwen2ForCausalLM"],
        model_type="qwen2",
        use_cache=True,
    )
    del config["mask_token_id"]
    return config


_QWEN2 = {}


def qwen2_forward(c, w, ids):
    """transformers' own Qwen2ForCausalLM: the reference implementation itself."""
    import transformers

    if id(w) in _QWEN2:
        with torch.no_grad():
            return _QWEN2[id(w)](input_ids=ids).logits

    hf = transformers.Qwen2Config(
        vocab_size=c["vocab_size"], hidden_size=c["hidden_size"], intermediate_size=c["intermediate_size"],
        num_hidden_layers=c["num_hidden_layers"], num_attention_heads=c["num_attention_heads"],
        num_key_value_heads=c["num_key_value_heads"], rms_norm_eps=c["rms_norm_eps"],
        rope_theta=c["rope_theta"], max_position_embeddings=c["max_position_embeddings"],
        tie_word_embeddings=False, hidden_act="silu", use_sliding_window=False,
    )
    model = transformers.Qwen2ForCausalLM(hf)
    missing, unexpected = model.load_state_dict(w, strict=False)
    assert not unexpected and all("rotary" in m for m in missing), (missing, unexpected)
    model.eval()
    _QWEN2[id(w)] = model
    with torch.no_grad():
        return model(input_ids=ids).logits


# ----------------------------------------------------------------------------- LLaMA (AR)


def llama_config(vocab_rows, mask_id, eos_id):
    """A smaller autoregressive LLaMA checkpoint: no biases, BOS fed first (bos_token_id)."""
    del mask_id
    return {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "attention_bias": False,
        "attention_dropout": 0.0,
        "bos_token_id": eos_id + 2,  # <|spare|>, standing in for <|begin_of_text|>
        "eos_token_id": eos_id,
        "hidden_act": "silu",
        "hidden_size": 32,
        "initializer_range": 0.02,
        "intermediate_size": 64,
        "max_position_embeddings": 2048,
        "mlp_bias": False,
        "num_attention_heads": 4,
        "num_hidden_layers": 2,
        "num_key_value_heads": 2,
        "rms_norm_eps": 1e-05,
        "rope_scaling": None,
        "rope_theta": 500000.0,
        "tie_word_embeddings": False,
        "torch_dtype": "float32",
        "use_cache": True,
        "vocab_size": vocab_rows,
    }


def llama_weights(c, gen):
    w = dream_weights(
        dict(c, mask_token_id=None), gen
    )
    return {k: v for k, v in w.items() if not k.endswith("_proj.bias")}


_LLAMA = {}


def llama_forward(c, w, ids):
    """transformers' own LlamaForCausalLM: the reference implementation itself."""
    import transformers

    if id(w) not in _LLAMA:
        hf = transformers.LlamaConfig(
            vocab_size=c["vocab_size"], hidden_size=c["hidden_size"], intermediate_size=c["intermediate_size"],
            num_hidden_layers=c["num_hidden_layers"], num_attention_heads=c["num_attention_heads"],
            num_key_value_heads=c["num_key_value_heads"], rms_norm_eps=c["rms_norm_eps"],
            rope_theta=c["rope_theta"], max_position_embeddings=c["max_position_embeddings"],
            attention_bias=False, mlp_bias=False, tie_word_embeddings=False, hidden_act="silu",
        )
        model = transformers.LlamaForCausalLM(hf)
        missing, unexpected = model.load_state_dict(w, strict=False)
        assert not unexpected and all("rotary" in m for m in missing), (missing, unexpected)
        model.eval()
        _LLAMA[id(w)] = model
    with torch.no_grad():
        return _LLAMA[id(w)](input_ids=ids).logits


# ----------------------------------------------------------------------------- cross-check


def check_against_transformers(arch, config, weights, ids):
    """With --check-transformers: LLaDA's llama block is LLaMA and Dream is Qwen2 but for the
    causal mask, so run transformers' LlamaForCausalLM / Qwen2ForCausalLM on the same weights
    (LLaDA's renamed) and compare with this file's forward pass made causal. This checks the
    tensor-name roles, RoPE, GQA, biases and norms against an independent implementation."""
    import transformers

    rows = weights["model.transformer.wte.weight" if arch == "llada" else "model.embed_tokens.weight"].shape[0]
    if arch == "llada":
        hf = transformers.LlamaConfig(
            vocab_size=rows, hidden_size=config["d_model"], intermediate_size=config["mlp_hidden_size"],
            num_hidden_layers=config["n_layers"], num_attention_heads=config["n_heads"],
            num_key_value_heads=config["n_kv_heads"], rms_norm_eps=config["rms_norm_eps"],
            rope_theta=config["rope_theta"], max_position_embeddings=config["max_sequence_length"],
            attention_bias=False, mlp_bias=False, tie_word_embeddings=False, hidden_act="silu",
        )
        rename = {"attn_norm": "input_layernorm", "q_proj": "self_attn.q_proj", "k_proj": "self_attn.k_proj",
                  "v_proj": "self_attn.v_proj", "attn_out": "self_attn.o_proj", "ff_norm": "post_attention_layernorm",
                  "ff_proj": "mlp.gate_proj", "up_proj": "mlp.up_proj", "ff_out": "mlp.down_proj"}
        state = {}
        for k, v in weights.items():
            parts = k.split(".")
            if parts[2] == "blocks":
                state[f"model.layers.{parts[3]}.{rename[parts[4]]}.{parts[5]}"] = v
            else:
                state[{"wte": "model.embed_tokens", "ln_f": "model.norm", "ff_out": "lm_head"}[parts[2]] + ".weight"] = v
        model = transformers.LlamaForCausalLM(hf)
        ours = llada_forward(config, weights, ids, causal=True)
    else:
        hf = transformers.Qwen2Config(
            vocab_size=rows, hidden_size=config["hidden_size"], intermediate_size=config["intermediate_size"],
            num_hidden_layers=config["num_hidden_layers"], num_attention_heads=config["num_attention_heads"],
            num_key_value_heads=config["num_key_value_heads"], rms_norm_eps=config["rms_norm_eps"],
            rope_theta=config["rope_theta"], max_position_embeddings=config["max_position_embeddings"],
            tie_word_embeddings=False, hidden_act="silu", use_sliding_window=False,
        )
        state = dict(weights)
        model = transformers.Qwen2ForCausalLM(hf)
    missing, unexpected = model.load_state_dict(state, strict=False)
    assert not unexpected and all("rotary" in m for m in missing), (missing, unexpected)
    model.eval()
    with torch.no_grad():
        theirs = model(input_ids=ids).logits
        if arch == "dream":
            ours = dream_forward(config, weights, ids, causal=True)
    diff = (theirs - ours).abs().max().item()
    print(f"{arch}: causal forward vs transformers {transformers.__version__}: max |diff| {diff:.3e}")
    assert diff < 1e-4, diff


# ----------------------------------------------------------------------------- writing


def reference_ids(tok, mask_id, masked=True):
    """Two 12-token rows: a GSM8K-like prompt, a few positions replaced by the mask token
    (none for an autoregressive model)."""
    rows = []
    for text, masked in [
        ("Natalia sold 48 clips in April and half as many in May.", [3, 7, 8, 11]),
        ("She earns $12 an hour. How much did she earn in 50 minutes?", [0, 5, 6, 10]),
    ]:
        ids = tok.encode(text).ids[:12]
        assert len(ids) == 12, (text, len(ids))
        for m in masked if mask_id is not None else []:
            ids[m] = mask_id
        rows.append(ids)
    return rows


def write_fixture(out, arch, tok, seed, check=False):
    mask_token = MASK[arch]
    mask_id, eos_id = tok.token_to_id(mask_token), tok.token_to_id(EOS)
    if arch in ("qwen2", "llama"):
        mask_id = None  # an autoregressive model: no mask token
    make_config, make_weights, forward = {
        "llada": (llada_config, llada_weights, llada_forward),
        "dream": (dream_config, dream_weights, dream_forward),
        "qwen2": (qwen2_config, dream_weights, qwen2_forward),
        "llama": (llama_config, llama_weights, llama_forward),
    }[arch]
    config = make_config(EMBEDDING_ROWS, mask_id, eos_id)
    gen = torch.Generator().manual_seed(seed)
    weights = {k: v.float().contiguous() for k, v in make_weights(config, gen).items()}
    ids = torch.tensor(reference_ids(tok, mask_id))
    if arch == "llama":
        ids[:, 0] = config["bos_token_id"]  # LLaMA's tokenizers start every text with BOS
    with torch.no_grad():
        logits = forward(config, weights, ids)
    if check and arch in ("llada", "dream"):
        check_against_transformers(arch, config, weights, ids)
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
        f.write("\n")
    save_file(weights, os.path.join(out, "model.safetensors"), metadata={"format": "pt"})
    tok.save(os.path.join(out, "tokenizer.json"))
    reference = {
        "about": (
            f"logits of transformers' {config['architectures'][0]} (causal) for input_ids"
            if arch in ("qwen2", "llama")
            else f"logits of the PyTorch {arch} forward pass in tools/hf-fixtures/make_fixtures.py "
            "(raw network output, before any shift) for input_ids, which hold the checkpoint's own "
            "ids (mask_token_id where masked)"
        ),
        "transformers": importlib.import_module("transformers").__version__
        if arch in ("qwen2", "llama")
        else None,
        "torch": torch.__version__,
        "seed": seed,
        "mask_token_id": mask_id,
        "input_ids": ids.tolist(),
        "shape": list(logits.shape),
        "logits": [float(f"{v:.9g}") for v in logits.flatten().tolist()],
    }
    with open(os.path.join(out, "reference.json"), "w") as f:
        json.dump(reference, f)
        f.write("\n")
    # The timing the README quotes: one forward pass at batch 1 x 512 tokens on this CPU.
    long_ids = torch.randint(0, 480, (1, 512), generator=gen)
    with torch.no_grad():
        forward(config, weights, long_ids)
        t0 = time.perf_counter()
        for _ in range(5):
            forward(config, weights, long_ids)
        per = (time.perf_counter() - t0) / 5
    print(f"{arch}: {out} (1 x 512 forward: {per * 1e3:.2f} ms, torch {torch.get_num_threads()} threads)")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default="data/gsm8k/train.jsonl", help="GSM8K train.jsonl")
    ap.add_argument("--out", default="plugins/hf/tests/fixtures", help="fixtures directory")
    ap.add_argument(
        "--check-transformers",
        action="store_true",
        help="also compare (made causal) with transformers' LlamaForCausalLM / Qwen2ForCausalLM",
    )
    args = ap.parse_args()
    torch.manual_seed(0)
    for arch, seed in [("llada", 1), ("dream", 2), ("qwen2", 3), ("llama", 4)]:
        if arch in ("qwen2", "llama") and importlib.util.find_spec("transformers") is None:
            print(f"{arch}: skipped (its reference is transformers' own model: pip install transformers)")
            continue
        tok = train_tokenizer(args.data, MASK[arch])
        write_fixture(os.path.join(args.out, f"{arch}-tiny"), arch, tok, seed, args.check_transformers)


if __name__ == "__main__":
    main()
