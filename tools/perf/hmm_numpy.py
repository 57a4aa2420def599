"""numpy's batched HMM forward pass, the reference for dlm-formal's `score_batch` bench (issue 34).

The same work as `cargo bench -p dlm-formal --bench formal -- score_batch/hmm`: the exact
log-likelihood of N sequences of length L under an H-state HMM with V tokens, by the scaled
forward algorithm run over all sequences at once (one (H x H) @ (H x N) product per position,
times the emission column of each sequence's token, each sequence's vector divided by its
maximum and the log of that maximum accumulated). The tables are drawn like Table 1's SER HMM (softmax of
normals at temperature 3.2, entries below 0.003 pruned, rows renormalised); the cost does not
depend on their values. Prints the median time in seconds as `hmm_forward/NxL <seconds>` (or
`--name`, as `tools/perf/compare.sh` does to pair it with the bench).

    /tmp/venv-hf/bin/python tools/perf/hmm_numpy.py --threads 1 --rounds 10

`--threads` is set for the BLAS before numpy loads (OpenBLAS, MKL and OpenMP variables), so
the matrix products run on that many threads; the element-wise work is single-threaded.
"""

import argparse
import os
import sys
import time


def parse():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--rounds", type=int, default=10)
    p.add_argument("--sequences", type=int, default=2000)
    p.add_argument("--length", type=int, default=512)
    p.add_argument("--states", type=int, default=32)
    p.add_argument("--vocab", type=int, default=8)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--name", default=None, help="the case name printed (default hmm_forward/NxL)")
    return p.parse_args()


ARGS = parse()
for var in ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "OMP_NUM_THREADS"):
    os.environ[var] = str(ARGS.threads)
import numpy as np  # noqa: E402  (after the thread variables, which numpy reads at load)


def table(rng, rows, cols, temperature=3.2, threshold=0.003):
    z = rng.standard_normal((rows, cols)) * temperature
    p = np.exp(z - z.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    p[p < threshold] = 0.0
    return p / p.sum(axis=1, keepdims=True)


def sample(rng, init, trans, emit, n, length):
    h, v = emit.shape
    z = np.array([rng.choice(h, p=init) for _ in range(n)])
    x = np.empty((n, length), dtype=np.int64)
    cum_t, cum_e = trans.cumsum(axis=1), emit.cumsum(axis=1)
    for t in range(length):
        if t > 0:
            u = rng.random(n)[:, None]
            z = np.minimum((u > cum_t[z]).sum(axis=1), h - 1)
        u = rng.random(n)[:, None]
        x[:, t] = np.minimum((u > cum_e[z]).sum(axis=1), v - 1)
    return x


def forward(init, trans_t, emit, x_t):
    """ln q(x) of every sequence (the columns of x_t, L x N): scaled forward pass, every
    sequence at once. State-major layout (H x N), the faster of the two on this CPU: the
    per-sequence maximum is then a reduction over contiguous rows, not along 32-wide ones."""
    alpha = init[:, None] * np.take(emit, x_t[0], axis=1)
    buf = np.empty_like(alpha)
    m = np.empty(x_t.shape[1])
    log_prob = np.zeros(x_t.shape[1])
    for t in range(x_t.shape[0]):
        if t > 0:
            np.matmul(trans_t, alpha, out=buf)
            np.multiply(buf, np.take(emit, x_t[t], axis=1), out=alpha)
        alpha.max(axis=0, out=m)
        log_prob += np.log(m)
        np.divide(1.0, m, out=m)
        alpha *= m
    return log_prob + np.log(alpha.sum(axis=0))


def main():
    rng = np.random.default_rng(ARGS.seed)
    h, v = ARGS.states, ARGS.vocab
    init = table(rng, 1, h)[0]
    trans = table(rng, h, h)
    emit = table(rng, h, v)
    x = sample(rng, init, trans, emit, ARGS.sequences, ARGS.length)
    x_t = np.ascontiguousarray(x.T)
    trans_t = np.ascontiguousarray(trans.T)
    # Check against an unscaled forward on a short prefix (no underflow at 20 steps).
    short = x[:8, :20]
    a = init[None, :] * emit[:, short[:, 0]].T
    for t in range(1, short.shape[1]):
        a = (a @ trans) * emit[:, short[:, t]].T
    scaled = forward(init, trans_t, emit, np.ascontiguousarray(short.T))
    assert np.allclose(scaled, np.log(a.sum(axis=1)), rtol=1e-12)
    times = []
    for _ in range(ARGS.rounds):
        start = time.perf_counter()
        forward(init, trans_t, emit, x_t)
        times.append(time.perf_counter() - start)
    times.sort()
    median = times[len(times) // 2]
    name = ARGS.name or f"hmm_forward/{ARGS.sequences}x{ARGS.length}"
    print(f"{name} {median:.6f}")
    print(
        f"# numpy {np.__version__}, {ARGS.threads} BLAS thread(s), {ARGS.rounds} rounds, "
        f"min {times[0] * 1e3:.1f} ms, max {times[-1] * 1e3:.1f} ms",
        file=sys.stderr,
    )


if __name__ == "__main__":
    main()
