#!/usr/bin/env python3
"""torch_bench.py - the standard workloads of BENCHMARKS.md in PyTorch's CPU eager mode.

Prints the same lines as `tenferro bench`, with workload names prefixed `torch:`
(`torch:<workload> <metric> <value> <unit>` on stdout; everything else on stderr).
Each figure is the median of 5 timed repetitions after one untimed warm-up; peak
resident memory per workload comes from VmHWM, reset before each workload.

usage: python3 bench/torch_bench.py [--threads N] [--quick] [WORKLOAD ...]
(Debian's python3-torch lives in /usr/bin/python3; bench/run.sh runs it so.)
"""
import argparse
import statistics
import sys
import time

import torch

FULL = dict(reps=5, pairs=5000, mlp_steps=50, mlp=(64, 784, 256, 10), n=1 << 22,
            f64_n=512, f32_n=1024)
QUICK = dict(reps=1, pairs=50, mlp_steps=12, mlp=(4, 8, 6, 3), n=1 << 10, f64_n=16, f32_n=16)


def figure(workload, metric, value, unit):
    print(f"torch:{workload} {metric} {value:.6g} {unit}", flush=True)


def status_mib(name):
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(name + ":"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return None


def reset_peak():
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass


def now():
    return time.perf_counter()


def uniform(gen, shape, dtype, lo=0.0, hi=1.0):
    return (torch.rand(shape, generator=gen, dtype=torch.float64) * (hi - lo) + lo).to(dtype)


def run_dispatch(z, gen):
    x = torch.tensor([1.0, 2.0, 3.0, 4.0], dtype=torch.float64, requires_grad=True)
    c = torch.full((4,), 0.5, dtype=torch.float64)
    fwd, bwd = [], []
    for r in range(z["reps"] + 1):
        x.grad = None
        t0 = now()
        y = x
        for _ in range(z["pairs"]):
            y = y * c
            y = y + x
        loss = y.sum()
        del y
        t1 = now()
        loss.backward()
        del loss
        t2 = now()
        if r:
            fwd.append(t1 - t0)
            bwd.append(t2 - t1)
    ops = 2.0 * z["pairs"]
    figure("dispatch", "forward_per_op", 1e9 * statistics.median(fwd) / ops, "ns")
    figure("dispatch", "backward_per_op", 1e9 * statistics.median(bwd) / ops, "ns")


def run_mlp(z, gen):
    batch, n_in, hidden, n_out = z["mlp"]
    f = torch.float32
    X = uniform(gen, (batch, n_in), f)
    T = uniform(gen, (batch, n_out), f)
    s1, s2 = (3.0 / n_in) ** 0.5, (3.0 / hidden) ** 0.5
    params = [uniform(gen, (n_in, hidden), f, -s1, s1), uniform(gen, (hidden,), f, -0.1, 0.1),
              uniform(gen, (hidden, n_out), f, -s2, s2), uniform(gen, (n_out,), f, -0.1, 0.1)]
    for p in params:
        p.requires_grad_(True)
    W1, b1, W2, b2 = params

    def step():
        H = torch.tanh(X @ W1 + b1)
        O = H @ W2 + b2
        loss = ((O - T) * (O - T)).sum() * (1.0 / batch)
        for p in params:
            p.grad = None
        loss.backward()
        with torch.no_grad():
            for p in params:
                p -= 0.01 * p.grad

    steps = z["mlp_steps"]
    times, rss = [], {}
    for r in range(z["reps"] + 1):
        t0 = now()
        for i in range(1, steps + 1):
            step()
            if r == 0 and i in (steps // 5, steps):
                rss[i] = status_mib("VmRSS")
        if r:
            times.append(now() - t0)
    figure("mlp", "step", 1e3 * statistics.median(times) / steps, "ms")
    if None not in rss.values():
        figure("mlp", "rss_growth", rss[steps] - rss[steps // 5], "MiB")


def run_elementwise(z, gen):
    n = z["n"]
    x = uniform(gen, (n,), torch.float64).requires_grad_(True)
    y = uniform(gen, (n,), torch.float64)
    times = []
    for r in range(z["reps"] + 1):
        t0 = now()
        loss = (torch.exp(x) * y + x).sum()
        x.grad = None
        loss.backward()
        del loss
        if r:
            times.append(now() - t0)
    figure("elementwise", "fwd_bwd", 1e3 * statistics.median(times), "ms")


def matmul_size(z, gen, dtype, n):
    A = uniform(gen, (n, n), dtype).requires_grad_(True)
    B = uniform(gen, (n, n), dtype).requires_grad_(True)
    times = []
    for r in range(z["reps"] + 1):
        t0 = now()
        loss = (A @ B).sum()
        A.grad = None
        B.grad = None
        loss.backward()
        del loss
        if r:
            times.append(now() - t0)
    name = "f64" if dtype == torch.float64 else "f32"
    figure("matmul", f"{name}_{n}_fwd_bwd_gflops", 6.0 * n ** 3 / statistics.median(times) / 1e9,
           "GFLOP/s")


def run_matmul(z, gen):
    matmul_size(z, gen, torch.float64, z["f64_n"])
    matmul_size(z, gen, torch.float32, z["f32_n"])


WORKLOADS = {"dispatch": run_dispatch, "mlp": run_mlp, "elementwise": run_elementwise,
             "matmul": run_matmul}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=0, help="torch.set_num_threads (0: default)")
    ap.add_argument("--quick", action="store_true", help="tiny sizes, one repetition")
    ap.add_argument("workloads", nargs="*", metavar="WORKLOAD",
                    help="any of " + ", ".join(WORKLOADS) + " (default: all)")
    a = ap.parse_args()
    for name in a.workloads:
        if name not in WORKLOADS:
            ap.error(f"unknown workload '{name}'")
    if a.threads > 0:
        torch.set_num_threads(a.threads)
    z = QUICK if a.quick else FULL
    capability = [line.split(":", 1)[1].strip() for line in torch.__config__.show().splitlines()
                  if "CPU capability usage" in line]
    print(f"torch_bench: torch {torch.__version__}, {torch.get_num_threads()} thread(s), "
          f"CPU capability {capability[0] if capability else '?'}", file=sys.stderr)
    gen = torch.Generator().manual_seed(0x5EED)
    for name in a.workloads or list(WORKLOADS):
        reset_peak()
        t0 = now()
        WORKLOADS[name](z, gen)
        peak = status_mib("VmHWM")
        if peak is not None:
            figure(name, "peak_rss", peak, "MiB")
        print(f"torch_bench: {name} took {now() - t0:.2f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
