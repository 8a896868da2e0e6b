#!/usr/bin/env python3
"""check_transformer.py - is `tenferro bench transformer` the block of BENCHMARKS.md?

Rebuilds, in PyTorch, the exact inputs and weights of tools/bench_models.c (its
fixed-seed generator, tools/bench_util.c, and its column-major layout), runs the same
training steps (pre-norm block, mean squared loss, AdamW) and compares the losses with
the ones `tenferro bench --quick transformer` prints on stderr for its warm-up steps.
The losses of step 1 check the forward pass; those of the later steps also check the
backward and the optimizer (they differ by rounding only). Exit status 0 when every
loss agrees to 1e-5 relative, else 1. An interop check for the bench, not a test: the
test suite never needs Python.

usage: python3 bench/check_transformer.py [--build DIR]
"""
import argparse
import os
import re
import subprocess
import sys

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MASK = (1 << 64) - 1
# tf_bench_models_quick in tools/bench_models.c
BATCH, SEQ, MODEL, HEADS, FFN, STEPS = 2, 4, 8, 2, 16, 2


def uniform(seed, n, lo, hi):
    """tf_bench_rng (xorshift64*), as tf_bench_random draws: double, then f32."""
    x = seed if seed else 0x9E3779B97F4A7C15
    out = []
    for _ in range(n):
        x ^= x >> 12
        x ^= (x << 25) & MASK
        x ^= x >> 27
        u = ((x * 0x2545F4914F6CDD1D) & MASK) >> 11
        out.append(lo + (hi - lo) * (u / 9007199254740992.0))
    return torch.tensor(out, dtype=torch.float64).to(torch.float32)


def col_major(seed, shape, lo, hi):
    """A column-major tensor of `shape` as tenferro fills it, in PyTorch's indexing."""
    n = 1
    for e in shape:
        n *= e
    return uniform(seed, n, lo, hi).reshape(tuple(reversed(shape))).permute(
        *reversed(range(len(shape)))).contiguous()


def torch_losses():
    d, f = MODEL, FFN
    x = col_major(91, (BATCH, SEQ, d), -1, 1)
    y = col_major(92, (BATCH, SEQ, d), -1, 1)
    # G1, N1, WQ, BQ, WK, BK, WV, BV, WO, BO, G2, N2, W1, B1, W2, B2 (seed 100 + index)
    shapes = [(0, d), (0, d), (d, d), (0, d), (d, d), (0, d), (d, d), (0, d),
              (d, d), (0, d), (0, d), (0, d), (d, f), (0, f), (f, d), (0, d)]
    params = []
    for i, (fan_in, out) in enumerate(shapes):
        if fan_in:
            a = 1.0 / fan_in ** 0.5
            p = col_major(100 + i, (fan_in, out), -a, a)
        else:
            p = torch.full((out,), 1.0 if i in (0, 10) else 0.0)
        params.append(p.requires_grad_(True))
    g1, n1, wq, bq, wk, bk, wv, bv, wo, bo, g2, n2, w1, b1, w2, b2 = params
    opt = torch.optim.AdamW(params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01)
    fn = torch.nn.functional
    hd = d // HEADS

    def split(t):
        return t.view(BATCH, SEQ, HEADS, hd).transpose(1, 2)

    losses = []
    for _ in range(STEPS):
        a = fn.layer_norm(x, (d,), g1, n1, 1e-5)
        q, k, v = split(a @ wq + bq), split(a @ wk + bk), split(a @ wv + bv)
        att = torch.softmax(q @ k.transpose(-2, -1) / hd ** 0.5, dim=-1) @ v
        h = x + att.transpose(1, 2).reshape(BATCH, SEQ, d) @ wo + bo
        m = fn.layer_norm(h, (d,), g2, n2, 1e-5)
        out = h + fn.gelu(m @ w1 + b1) @ w2 + b2
        loss = ((out - y) ** 2).mean()
        losses.append(loss.item())
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    return losses


def tenferro_losses(build):
    err = subprocess.run([os.path.join(build, "tools", "tenferro"), "bench", "--quick",
                          "--threads", "1", "transformer"], check=True, text=True,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE).stderr
    return [float(v) for v in re.findall(r"transformer loss at step \d+: (\S+)", err)]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    a = ap.parse_args()
    ours, theirs = tenferro_losses(a.build), torch_losses()
    ok = len(ours) == len(theirs) and all(
        abs(p - q) <= 1e-5 * max(abs(q), 1e-30) for p, q in zip(ours, theirs))
    for i, (p, q) in enumerate(zip(ours, theirs)):
        print(f"step {i + 1}: tenferro {p:.9g}  torch {q:.9g}  rel {abs(p - q) / abs(q):.2e}")
    print("check_transformer: " + ("the same block" if ok else "MISMATCH"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
