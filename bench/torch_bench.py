#!/usr/bin/env python3
"""torch_bench.py - the workloads of `tenferro bench` in PyTorch's eager mode (CPU or CUDA).

Prints the same lines as `tenferro bench`, with workload names prefixed `torch:`
(`torch:<workload> <metric> <value> <unit>` on stdout; everything else on stderr).
Each figure is the median of 5 timed repetitions (15 for matmul, whose f64 step takes
only ~10 ms) after one untimed warm-up (elementwise: warm-up steps until they took half a
second, as `tenferro bench` does); peak
resident memory (of the host process) per workload comes from VmHWM, reset before
each workload. Without a workload named it runs the six standard ones of
BENCHMARKS.md; the extra ones (gemm, elementwise_f32, complex, growth, einsum_path, einsum_tn) run only
when named (the einsum peers, NumPy and a randomized greedy besides torch, live in
bench/einsum_peers.py).

On `--device cuda` every timed section starts and ends with torch.cuda.synchronize(),
as `tenferro bench` ends its own with tf_engine_synchronize, and TF32 is off for
matrix products and cuDNN (plain fp32 arithmetic, as the Vulkan engine does). Where
CUDA is not available it says so on stderr and exits with status 3, printing no
figure.

usage: python3 bench/torch_bench.py [--device cpu|cuda] [--threads N] [--quick]
                                    [--gemm-n N] [WORKLOAD ...]
(Debian's python3-torch lives in /usr/bin/python3; bench/run.sh runs it so.)
"""
import argparse
import statistics
import sys
import time

import torch

FULL = dict(reps=5, elementwise_warm_s=0.5, pairs=5000, mlp_steps=50, mlp=(64, 784, 256, 10), n=1 << 22,
            f64_n=512, f32_n=1024, matmul_reps=15, gemm_n=4096, gemm_products=10, f32_elements=1 << 26,
            block=(8, 128, 256, 4, 1024), block_steps=3, svd_n=256, complex_n=1 << 21,
            complex_matmul_n=512)
QUICK = dict(reps=1, elementwise_warm_s=0, pairs=50, mlp_steps=12, mlp=(4, 8, 6, 3), n=1 << 10, f64_n=16, f32_n=16, matmul_reps=1,
             gemm_n=16, gemm_products=2, f32_elements=1 << 10, block=(2, 4, 8, 2, 16), block_steps=2,
             svd_n=8, complex_n=1 << 10, complex_matmul_n=16)

# The device every tensor lives on ("cpu" or "cuda"), set once by main().
DEVICE = torch.device("cpu")


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


def sync():
    """Waits for the device's queued work (CUDA runs asynchronously to the host)."""
    if DEVICE.type == "cuda":
        torch.cuda.synchronize()


def now():
    """The host clock, after the device's work so far is done."""
    sync()
    return time.perf_counter()


def uniform(gen, shape, dtype, lo=0.0, hi=1.0):
    """Drawn on the host from the fixed-seed generator, then moved to DEVICE."""
    if dtype.is_complex:  # both parts uniform, as tenferro bench draws them
        re, im = (uniform(gen, shape, torch.float64, lo, hi) for _ in range(2))
        return torch.complex(re, im).to(dtype)
    host = torch.rand(shape, generator=gen, dtype=torch.float64) * (hi - lo) + lo
    return host.to(dtype).to(DEVICE)


def run_dispatch(z, gen):
    x = torch.tensor([1.0, 2.0, 3.0, 4.0], dtype=torch.float64, device=DEVICE,
                     requires_grad=True)
    c = torch.full((4,), 0.5, dtype=torch.float64, device=DEVICE)
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


def real_sum(v):
    """The loss of a step: sum(v), its real part for a complex v."""
    s = v.sum()
    return s.real if s.is_complex() else s


def elementwise_run(z, gen, workload, dtype, n, metric="fwd_bwd"):
    x = uniform(gen, (n,), dtype).requires_grad_(True)
    y = uniform(gen, (n,), dtype)

    def step():
        t0 = now()
        loss = real_sum(torch.exp(x) * y + x)
        x.grad = None
        loss.backward()
        del loss
        return now() - t0

    warmed = 0.0
    while True:  # the warm-up: steps until they took elementwise_warm_s, as tenferro bench's
        warmed += step()
        if warmed >= z["elementwise_warm_s"]:
            break
    times = [step() for _ in range(z["reps"])]
    figure(workload, metric, 1e3 * statistics.median(times), "ms")


def run_elementwise(z, gen):
    elementwise_run(z, gen, "elementwise", torch.float64, z["n"])


def run_complex(z, gen):
    """Extra: the matmul and elementwise steps in c128, the loss the real part of the sum."""
    matmul_size(z, gen, torch.complex128, z["complex_matmul_n"], "complex")
    elementwise_run(z, gen, "complex", torch.complex128, z["complex_n"], "elementwise_fwd_bwd")


def run_elementwise_f32(z, gen):
    """Extra: the elementwise work in f32 on 2^26 elements."""
    elementwise_run(z, gen, "elementwise_f32", torch.float32, z["f32_elements"])


def matmul_gflops(gen, dtype, n, reps):
    """GFLOP/s of the matmul workload's step (sum(A @ B), backward) at size n: the median
    of reps timed steps after one warm-up, counting 3 * 2 n^3 flops (complex: 4 times as
    many real flops)."""
    A = uniform(gen, (n, n), dtype).requires_grad_(True)
    B = uniform(gen, (n, n), dtype).requires_grad_(True)
    times = []
    for r in range(reps + 1):
        t0 = now()
        loss = real_sum(A @ B)
        A.grad = None
        B.grad = None
        loss.backward()
        del loss
        if r:
            times.append(now() - t0)
    return (4.0 if dtype.is_complex else 1.0) * 6.0 * n ** 3 / statistics.median(times) / 1e9


def matmul_size(z, gen, dtype, n, workload="matmul"):
    name = {torch.float64: "f64", torch.float32: "f32", torch.complex128: "c128"}[dtype]
    figure(workload, f"{name}_{n}_fwd_bwd_gflops", matmul_gflops(gen, dtype, n, z["matmul_reps"]),
           "GFLOP/s")


def run_matmul(z, gen):
    matmul_size(z, gen, torch.float64, z["f64_n"])
    matmul_size(z, gen, torch.float32, z["f32_n"])


def run_transformer(z, gen):
    """A pre-norm transformer block's training step with AdamW (BENCHMARKS.md)."""
    batch, seq, d, heads, ffn = z["block"]
    f = torch.float32
    hd = d // heads
    x = uniform(gen, (batch, seq, d), f, -1.0, 1.0)
    y = uniform(gen, (batch, seq, d), f, -1.0, 1.0)

    def weight(fan_in, fan_out):
        a = 1.0 / fan_in ** 0.5
        return uniform(gen, (fan_in, fan_out), f, -a, a).requires_grad_(True)

    def vector(n, value):
        return torch.full((n,), value, dtype=f, device=DEVICE).requires_grad_(True)

    g1, n1, g2, n2 = vector(d, 1.0), vector(d, 0.0), vector(d, 1.0), vector(d, 0.0)
    wq, wk, wv, wo = weight(d, d), weight(d, d), weight(d, d), weight(d, d)
    bq, bk, bv, bo = vector(d, 0.0), vector(d, 0.0), vector(d, 0.0), vector(d, 0.0)
    w1, b1, w2, b2 = weight(d, ffn), vector(ffn, 0.0), weight(ffn, d), vector(d, 0.0)
    params = [g1, n1, wq, bq, wk, bk, wv, bv, wo, bo, g2, n2, w1, b1, w2, b2]
    opt = torch.optim.AdamW(params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01)
    fn = torch.nn.functional

    def split(t):
        return t.view(batch, seq, heads, hd).transpose(1, 2)

    def step():
        a = fn.layer_norm(x, (d,), g1, n1, 1e-5)
        q, k, v = split(a @ wq + bq), split(a @ wk + bk), split(a @ wv + bv)
        att = torch.softmax(q @ k.transpose(-2, -1) / hd ** 0.5, dim=-1) @ v
        h = x + att.transpose(1, 2).reshape(batch, seq, d) @ wo + bo
        m = fn.layer_norm(h, (d,), g2, n2, 1e-5)
        out = h + fn.gelu(m @ w1 + b1) @ w2 + b2
        loss = ((out - y) ** 2).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    times = []
    for r in range(z["reps"] + 1):
        t0 = now()
        for _ in range(z["block_steps"]):
            step()
        if r:
            times.append(now() - t0)
    figure("transformer", "step", 1e3 * statistics.median(times) / z["block_steps"], "ms")


def run_svd_grad(z, gen):
    """The backward of sum(S * w), S the singular values of A (thin SVD)."""
    n = z["svd_n"]
    A = uniform(gen, (n, n), torch.float64).requires_grad_(True)
    w = uniform(gen, (n,), torch.float64)
    times = []
    for r in range(z["reps"] + 1):
        t0 = now()
        S = torch.linalg.svd(A, full_matrices=False).S
        loss = (S * w).sum()
        A.grad = None
        loss.backward()
        del loss, S
        if r:
            times.append(now() - t0)
    figure("svd_grad", "fwd_bwd", 1e3 * statistics.median(times), "ms")


def run_growth(z, gen):
    """Extra: per-op time of mul forward + backward from 1 element up, and matmul GFLOP/s
    from n = 16 up (tools/bench_growth.c does the same; bench/growth.py draws both)."""
    quick = z["reps"] == 1
    n = 1
    while n <= 1 << (10 if quick else 22):
        x = uniform(gen, (n,), torch.float32).requires_grad_(True)
        c = uniform(gen, (n,), torch.float32)
        seed = torch.ones(n, dtype=torch.float32, device=DEVICE)
        count = max(1, min(4096, (1 << 24) // n))
        times = []
        for r in range(6):
            x.grad = None
            t0 = now()
            for _ in range(count):
                y = x * c
                y.backward(seed)
                del y
            if r:
                times.append((now() - t0) / count)
        figure("growth", f"mul_{n}_ns", 1e9 * statistics.median(times), "ns")
        n *= 4
    n = 16
    while n <= (64 if quick else 2048):
        figure("growth", f"matmul_{n}_gflops", matmul_gflops(gen, torch.float32, n, 5),
               "GFLOP/s")
        n *= 2


def run_gemm(z, gen):
    """Extra: untracked f32 products C = A @ B, gemm_products per timed repetition."""
    n, count = z["gemm_n"], z["gemm_products"]
    A = uniform(gen, (n, n), torch.float32)
    B = uniform(gen, (n, n), torch.float32)
    times = []
    with torch.no_grad():
        for r in range(z["reps"] + 1):
            t0 = now()
            for _ in range(count):
                C = A @ B
                del C
            if r:
                times.append(now() - t0)
    figure("gemm", f"f32_{n}_tflops", 2.0 * n ** 3 * count / statistics.median(times) / 1e12,
           "TFLOP/s")


STANDARD = {"dispatch": run_dispatch, "mlp": run_mlp, "elementwise": run_elementwise,
            "matmul": run_matmul, "transformer": run_transformer, "svd_grad": run_svd_grad}
def einsum_figure(system, workload, metric, value, unit):
    print(f"{system}:{workload} {metric} {value:.6g} {unit}", flush=True)


def run_einsum_path(z, gen):
    """Extra: NumPy's and a randomized greedy's contraction paths (bench/einsum_peers.py)."""
    import einsum_peers
    einsum_peers.run_path(einsum_figure, z["reps"] == 1)  # --quick runs one repetition


def run_einsum_tn(z, gen):
    """Extra: MPS-MPO-MPS and the four-index transformation, NumPy and torch.einsum."""
    import einsum_peers
    einsum_peers.run_tn(torch, einsum_figure, z["reps"], z["reps"] == 1)


EXTRA = {"gemm": run_gemm, "elementwise_f32": run_elementwise_f32, "complex": run_complex,
         "growth": run_growth, "einsum_path": run_einsum_path, "einsum_tn": run_einsum_tn}
WORKLOADS = {**STANDARD, **EXTRA}


def describe_cuda():
    """Turns TF32 off and returns a line naming the GPU; exits 3 where CUDA is absent."""
    if not torch.cuda.is_available():
        print(f"torch_bench: CUDA is not available to this torch ({torch.__version__}, built "
              f"with CUDA {torch.version.cuda or 'none'}): nothing run; use --device cpu",
              file=sys.stderr)
        sys.exit(3)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    if hasattr(torch, "set_float32_matmul_precision"):
        torch.set_float32_matmul_precision("highest")
    torch.cuda.init()
    return (f"device cuda: {torch.cuda.get_device_name()}, CUDA {torch.version.cuda}, "
            f"TF32 off (matmul {torch.backends.cuda.matmul.allow_tf32}, "
            f"cudnn {torch.backends.cudnn.allow_tf32})")


def main():
    global DEVICE
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", choices=("cpu", "cuda"), default="cpu",
                    help="where tensors live (default cpu)")
    ap.add_argument("--threads", type=int, default=0, help="torch.set_num_threads (0: default)")
    ap.add_argument("--quick", action="store_true", help="tiny sizes, one repetition")
    ap.add_argument("--gemm-n", type=int, default=None, metavar="N",
                    help="gemm's matrix size (default 4096, 16 with --quick)")
    ap.add_argument("workloads", nargs="*", metavar="WORKLOAD",
                    help="any of " + ", ".join(WORKLOADS) + " (default: the standard "
                    + ", ".join(STANDARD) + ")")
    a = ap.parse_args()
    for name in a.workloads:
        if name not in WORKLOADS:
            ap.error(f"unknown workload '{name}'")
    if a.gemm_n is not None and not 1 <= a.gemm_n <= 65536:
        ap.error("--gemm-n needs 1 <= N <= 65536")
    device_line = describe_cuda() if a.device == "cuda" else "device cpu"
    DEVICE = torch.device(a.device)
    if a.threads > 0:
        torch.set_num_threads(a.threads)
    z = dict(QUICK if a.quick else FULL)
    if a.gemm_n is not None:
        z["gemm_n"] = a.gemm_n
    capability = [line.split(":", 1)[1].strip() for line in torch.__config__.show().splitlines()
                  if "CPU capability usage" in line]
    print(f"torch_bench: torch {torch.__version__}, {torch.get_num_threads()} thread(s), "
          f"CPU capability {capability[0] if capability else '?'}; {device_line}",
          file=sys.stderr)
    gen = torch.Generator().manual_seed(0x5EED)
    for name in a.workloads or list(STANDARD):
        reset_peak()
        t0 = now()
        WORKLOADS[name](z, gen)
        peak = status_mib("VmHWM")
        if peak is not None:
            figure(name, "peak_rss", peak, "MiB")
        print(f"torch_bench: {name} took {now() - t0:.2f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
