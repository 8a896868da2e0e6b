#!/usr/bin/env python3
"""growth.py - how cost grows with size, tenferro beside PyTorch, drawn as one PNG.

Runs `tenferro bench --threads T growth` (tools/bench_growth.c) and
`bench/torch_bench.py --threads T growth` in turn, ROUNDS times at each thread count
(the two programs alternate, so that the machine's load meets both alike), keeps the
median of every figure over the rounds and draws two panels: the time of one mul
forward + backward per op against the tensor size (1 ... 2^22 elements, f32), and the
GFLOP/s of the matmul workload's step (f32, 3 products) against n (16 ... 2048).
The raw figure lines go to OUT with the suffix .txt.

usage: python3 bench/growth.py [--build DIR] [--threads "1 2"] [--rounds N] [--quick]
                               [--out docs/growth.png]
Needs matplotlib (Debian: python3-matplotlib) and torch (python3-torch); run it with
/usr/bin/python3. bench/run.sh's notes on OpenBLAS apply: OPENBLAS_CORETYPE and
OPENBLAS_L2_SIZE are unset for the programs it starts.
"""
import argparse
import collections
import os
import re
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(cmd, env):
    out = subprocess.run(cmd, env=env, check=True, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, text=True).stdout
    return out.splitlines()


def collect(build, threads, rounds, quick):
    """{(system, threads, kind): {n: [values per round]}} and the raw lines."""
    figures = collections.defaultdict(lambda: collections.defaultdict(list))
    raw = []
    base = {k: v for k, v in os.environ.items()
            if k not in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")}
    q = ["--quick"] if quick else []
    for r in range(rounds):
        for t in threads:
            env = dict(base, OPENBLAS_NUM_THREADS=str(t), OMP_NUM_THREADS=str(t),
                       MKL_NUM_THREADS=str(t))
            sides = [("tenferro", [os.path.join(build, "tools", "tenferro"), "bench",
                                   "--threads", str(t)] + q + ["growth"]),
                     ("torch", [sys.executable, os.path.join(ROOT, "bench", "torch_bench.py"),
                                "--threads", str(t)] + q + ["growth"])]
            if r % 2:
                sides.reverse()
            for system, cmd in sides:
                raw.append(f"# {system} threads {t} round {r + 1} "
                           f"load {os.getloadavg()[0]:.2f}")
                for line in run(cmd, env):
                    raw.append(line)
                    m = re.match(r"(?:torch:)?growth (mul|matmul)_(\d+)_\w+ (\S+) ", line + " ")
                    if m:
                        figures[(system, t, m.group(1))][int(m.group(2))].append(
                            float(m.group(3)))
    return figures, raw


def draw(figures, threads, path, title):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    styles = {"tenferro": "-", "torch": "--"}
    marks = {threads[0]: "o"}
    for t in threads[1:]:
        marks[t] = "s"
    for (system, t, kind), by_n in sorted(figures.items()):
        ns = sorted(by_n)
        ys = [statistics.median(by_n[n]) for n in ns]
        if kind == "mul":
            ys = [y / 1e3 for y in ys]  # ns -> microseconds
        ax = left if kind == "mul" else right
        ax.plot(ns, ys, styles[system], marker=marks.get(t, "^"), markersize=4,
                label=f"{system}, {t} thread{'s' if t != 1 else ''}")
    left.set_xscale("log", base=2)
    left.set_yscale("log")
    left.set_xlabel("elements (f32)")
    left.set_ylabel("microseconds per op")
    left.set_title("mul forward + backward, per op (lower is better)")
    right.set_xscale("log", base=2)
    right.set_xlabel("n (f32 [n, n] x [n, n])")
    right.set_ylabel("GFLOP/s")
    right.set_title("matmul step: 3 products (higher is better)")
    for ax in (left, right):
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--threads", default="1 2")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="tiny sizes: checks the plumbing")
    ap.add_argument("--out", default=os.path.join(ROOT, "docs", "growth.png"))
    a = ap.parse_args()
    threads = [int(t) for t in a.threads.split()]
    if a.rounds < 1 or not threads or min(threads) < 1:
        ap.error("--rounds and every thread count must be >= 1")
    load = os.getloadavg()[0]
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    figures, raw = collect(a.build, threads, a.rounds, a.quick)
    with open(os.path.splitext(a.out)[0] + ".txt", "w") as f:
        f.write("\n".join(raw) + "\n")
    title = (f"{started}, {os.cpu_count()} cores, load average {load:.1f} before and "
             f"{os.getloadavg()[0]:.1f} after; median of {a.rounds} round(s)")
    draw(figures, threads, a.out, title)
    print(f"growth.py: wrote {a.out} ({title})")


if __name__ == "__main__":
    main()
