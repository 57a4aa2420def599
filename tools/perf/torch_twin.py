#!/usr/bin/env python3
"""PyTorch twin of dlm-neural's transformer, for the side-by-side speed comparison (issue 18).

The same network as plugins/neural/src/model.rs at the CPU config: token + learned position
embeddings, pre-norm blocks (LayerNorm, fused QKV projection, attention with a learned bias per
head and relative offset, output projection, GELU feed-forward 4x), final LayerNorm, a head of
vocab + 1 logits with the mask/BOS logit suppressed. The same workloads as
plugins/neural/benches/neural.rs:

  train_step/8x512       one MDLM step: antithetic times, masking, SUBS log-probs, 1/t-weighted
                         NLL, backward, global-norm clipping at 1.0, AdamW
  mdm_forward/16x512     one forward pass, SUBS, probabilities copied out (as the host path does)
  ar_next_token/cached/P one cached next-token call for a batch of 16 after P positions, KV
                         cache preallocated and written in place, softmax copied out

Prints one line per case: name, median seconds over the rounds. Threads: --threads (default:
all cores, like Burn's rayon pool). Used by tools/perf/compare.sh; never by the build or tests.
"""
import argparse
import math
import statistics
import time

import torch
import torch.nn.functional as F

VOCAB, LENGTH, HIDDEN, LAYERS, HEADS, FF = 8, 512, 128, 4, 4, 4
NEG_INF = -1e6


class Block(torch.nn.Module):
    def __init__(self, max_len):
        super().__init__()
        h = HIDDEN
        self.norm_attn = torch.nn.LayerNorm(h)
        self.qkv = torch.nn.Linear(h, 3 * h)
        self.proj = torch.nn.Linear(h, h)
        self.norm_ff = torch.nn.LayerNorm(h)
        self.ff_in = torch.nn.Linear(h, FF * h)
        self.ff_out = torch.nn.Linear(FF * h, h)
        self.relative_bias = torch.nn.Parameter(torch.randn(2 * max_len - 1, HEADS) * 0.02)
        self.max_len = max_len

    def bias(self, start, n, total):
        i = torch.arange(start, start + n).unsqueeze(1)
        j = torch.arange(total).unsqueeze(0)
        rows = self.relative_bias[(j - i) + self.max_len - 1]  # [n, total, heads]
        return rows.permute(2, 0, 1).unsqueeze(0)  # [1, heads, n, total]

    def split(self, x):
        b, l, _ = x.shape
        q, k, v = self.qkv(self.norm_attn(x)).split(HIDDEN, dim=2)
        shape = (b, l, HEADS, HIDDEN // HEADS)
        return (t.reshape(shape).transpose(1, 2) for t in (q, k, v))

    def finish(self, x, context):
        b, _, l, _ = context.shape
        x = x + self.proj(context.transpose(1, 2).reshape(b, l, HIDDEN))
        return x + self.ff_out(F.gelu(self.ff_in(self.norm_ff(x))))

    def forward(self, x, causal):
        q, k, v = self.split(x)
        l = x.shape[1]
        mask = self.bias(0, l, l)
        if causal:
            mask = mask.masked_fill(torch.ones(l, l, dtype=torch.bool).triu(1), float("-inf"))
        return self.finish(x, F.scaled_dot_product_attention(q, k, v, attn_mask=mask))

    def forward_cached(self, x, cache, past):
        q, k, v = self.split(x)
        total = past + 1
        cache["k"][:, :, past:total] = k
        cache["v"][:, :, past:total] = v
        keys, values = cache["k"][:, :, :total], cache["v"][:, :, :total]
        mask = cache["bias"][:, :, :, self.max_len - 1 - past : self.max_len - 1 - past + total]
        return self.finish(x, F.scaled_dot_product_attention(q, keys, values, attn_mask=mask))


class Twin(torch.nn.Module):
    def __init__(self, causal, max_len=LENGTH):
        super().__init__()
        self.tok = torch.nn.Embedding(VOCAB + 1, HIDDEN)
        self.pos = torch.nn.Parameter(torch.randn(max_len, HIDDEN) * 0.02)
        self.blocks = torch.nn.ModuleList(Block(max_len) for _ in range(LAYERS))
        self.norm_out = torch.nn.LayerNorm(HIDDEN)
        self.head = torch.nn.Linear(HIDDEN, VOCAB + 1)
        self.causal = causal
        suppress = torch.zeros(VOCAB + 1)
        suppress[VOCAB] = NEG_INF
        self.register_buffer("suppress", suppress)

    def output(self, x):
        return self.head(self.norm_out(x)) + self.suppress

    def forward(self, ids):
        x = self.tok(ids) + self.pos[: ids.shape[1]]
        for block in self.blocks:
            x = block(x, self.causal)
        return self.output(x)

    def empty_cache(self, batch, capacity):
        dh = HIDDEN // HEADS
        caches = []
        for block in self.blocks:
            table = block.relative_bias.detach().t().reshape(1, HEADS, 1, -1)
            caches.append({
                "k": torch.zeros(batch, HEADS, capacity, dh),
                "v": torch.zeros(batch, HEADS, capacity, dh),
                "bias": table,
            })
        return caches

    def forward_cached(self, ids, caches, past):
        x = self.tok(ids) + self.pos[past : past + 1]
        for block, cache in zip(self.blocks, caches):
            x = block.forward_cached(x, cache, past)
        return self.output(x)


def subs_log_probs(logits, xt):
    logp = F.log_softmax(logits, dim=2)
    carry = (F.one_hot(xt, VOCAB + 1).float() - 1.0) * -NEG_INF
    return torch.where((xt != VOCAB).unsqueeze(2), carry, logp)


def mdm_loss(net, x0):
    batch, length = x0.shape
    u = torch.rand(())
    t = ((u / batch + torch.arange(batch) / batch) % 1.0) * (1 - 1e-3) + 1e-3
    masked = torch.rand(batch, length) < t.unsqueeze(1)
    xt = torch.where(masked, torch.full_like(x0, VOCAB), x0)
    weights = masked.float() / t.unsqueeze(1)
    logp = subs_log_probs(net(xt), xt)
    nll = -logp.gather(2, x0.unsqueeze(2)).squeeze(2)
    return (nll * weights).sum() / x0.numel()


def median_seconds(fn, rounds, setup=None):
    times = []
    for _ in range(rounds):
        state = setup() if setup else None
        start = time.perf_counter()
        fn(state)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--threads", type=int, default=0)
    parser.add_argument("--rounds", type=int, default=10)
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(1)

    mdm = Twin(causal=False)
    optim = torch.optim.AdamW(mdm.parameters(), lr=1e-4, betas=(0.9, 0.999), eps=1e-8,
                              weight_decay=0.0)
    x0 = torch.randint(0, VOCAB, (8, LENGTH), generator=gen)

    def train_step(_):
        optim.zero_grad(set_to_none=True)
        loss = mdm_loss(mdm, x0)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(mdm.parameters(), 1.0)
        optim.step()

    train_step(None)  # warm-up
    print(f"train_step/8x512 {median_seconds(train_step, args.rounds):.6f}")

    ids = torch.randint(0, VOCAB + 1, (16, LENGTH), generator=gen)

    @torch.no_grad()
    def forward(_):
        logp = subs_log_probs(mdm(ids), ids)
        logp[:, :, :VOCAB].exp().double().numpy()

    forward(None)
    print(f"mdm_forward/16x512 {median_seconds(forward, args.rounds):.6f}")

    ar = Twin(causal=True)
    with torch.no_grad():
        for prefix in (64, 511):
            prompt = torch.randint(0, VOCAB, (16, prefix), generator=gen)
            nxt = torch.randint(0, VOCAB, (16, 1), generator=gen)

            def setup():
                caches = ar.empty_cache(16, LENGTH)
                for p in range(prefix):
                    ar.forward_cached(prompt[:, p : p + 1], caches, p)
                return caches

            def step(caches):
                logits = ar.forward_cached(nxt, caches, prefix)
                F.softmax(logits[:, :, :VOCAB], dim=2).double().numpy()

            rounds = max(args.rounds * 5, 20)
            print(f"ar_next_token/cached/{prefix} "
                  f"{median_seconds(step, rounds, setup):.6f}")


if __name__ == "__main__":
    main()
