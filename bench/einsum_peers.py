"""einsum_peers.py - the peers of `tenferro bench einsum_path` and `einsum_tn`, for
bench/torch_bench.py: NumPy's einsum_path ('optimal' and 'greedy', through its own
functions so that networks with more than 52 indices work), a randomized greedy (the
opt_einsum algorithm: Boltzmann choices among the best candidate pairs, a random weight
on the inputs' sizes) with the best of 64 restarts, NumPy's einsum with
optimize='optimal', and torch.einsum.

The networks are generated exactly as tools/bench_einsum.c generates them (the same
64-bit LCG, the same stub matching), so both sides see the same expressions.
Costs are NumPy's: per step the product of every extent involved, twice that when an
index is summed away.
"""
import math
import random
import time

import numpy as np
from numpy.core import einsumfunc as ef

MASK = (1 << 64) - 1


class Lcg:
    """state = state * 6364136223846793005 + 1442695040888963407 (mod 2^64); draws use
    the top 31 bits, as tools/bench_einsum.c does."""

    def __init__(self, seed):
        self.state = seed & MASK

    def next(self):
        self.state = (self.state * 6364136223846793005 + 1442695040888963407) & MASK
        return self.state >> 33

    def below(self, n):
        return self.next() % n


def regular_network(n, seed):
    """A closed random 3-regular network of n tensors: per tensor the list of its edges."""
    rng = Lcg(seed)
    while True:
        stubs = [i // 3 for i in range(3 * n)]
        for i in range(3 * n, 1, -1):
            j = rng.below(i)
            stubs[i - 1], stubs[j] = stubs[j], stubs[i - 1]
        edges = [[] for _ in range(n)]
        ok = True
        for e in range(0, 3 * n, 2):
            a, b = stubs[e], stubs[e + 1]
            if a == b or set(edges[a]) & set(edges[b]):
                ok = False
                break
            edges[a].append(e // 2)
            edges[b].append(e // 2)
        if ok:
            return edges


def symbol(k):
    """Index k's character: the 52 letters, then U+0100 onwards (as bench_einsum.c)."""
    letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
    return letters[k] if k < 52 else chr(0x100 + k - 52)


# The small expressions of the einsum_path workload (the same list as bench_einsum.c).
SMALL = [
    ("ij,jk,kl,lm->im", "20x30,30x40,40x10,10x50"),
    ("pi,qj,ijkl,rk,sl->pqrs", "24x24,24x24,24x24x24x24,24x24,24x24"),
    ("ea,fb,abcd,gc,hd->efgh", "10x10,10x10,10x10x10x10,10x10,10x10"),
    ("ab,bc,cd,de,ef,fg,ga->", "5x4,4x6,6x3,3x5,5x2,2x6,6x5"),
    ("abA,bcA,cdB,deB,efC,fgC,ghD,haD->", "4x3x2,3x5x2,5x2x3,2x4x3,4x3x5,3x2x5,2x4x2,4x4x2"),
    ("abA,bcA,cdB,deB,efC,fgC,ghD,hiD,ia->",
     "4x3x2,3x5x2,5x2x3,2x4x3,4x3x5,3x2x5,2x4x2,4x3x2,3x4"),
    ("abA,bcA,cdB,deB,efC,fgC,ghD,hiD,ijE,jaE->",
     "4x3x2,3x5x2,5x2x3,2x4x3,4x3x5,3x2x5,2x4x2,4x3x2,3x5x3,5x4x3"),
    ("ai,ab,bc,cd,de,ef,fg,gh,hi->", "3x5,3x4,4x6,6x3,3x5,5x2,2x6,6x4,4x5"),
]


def shapes_of(text):
    return [tuple(int(x) for x in s.split("x")) if s else () for s in text.split(",")]


def _replay(path, inputs, output, dims):
    """Total flops of numpy's path (position tuples) over index sets, as einsum_path counts."""
    sets = [set(t) for t in inputs]
    total = 0
    for con in path:
        con = tuple(sorted(con, reverse=True))
        _, sets, removed, contract = ef._find_contraction(con, sets, set(output))
        total += ef._flop_count(contract, removed, len(con), dims)
    return total


def numpy_optimal_flops(expr, shapes):
    """numpy.einsum_path(optimize='optimal') with its default memory limit (the largest
    input or output), and its count: (flops, pairwise) - pairwise is False when NumPy
    left a multi-operand contraction because nothing fitted the limit."""
    ops = [np.empty(s) for s in shapes]
    path, _ = np.einsum_path(expr, *ops, optimize="optimal")
    inputs, output = expr.split("->")
    inputs = inputs.split(",")
    dims = {}
    for t, s in zip(inputs, shapes):
        dims.update(zip(t, s))
    steps = path[1:]
    return _replay(steps, inputs, output, dims), all(len(c) == 2 for c in steps)


def numpy_greedy_flops(inputs, output, dims):
    """NumPy's 'greedy' with its default memory limit (the largest input or output),
    on index sets of any symbols (einsum_path's own steps, without its 52-letter parser)."""
    sizes = [math.prod(dims[c] for c in t) for t in inputs + [output]]
    sets = [set(t) for t in inputs]
    path = ef._greedy_path(sets, set(output), dims, max(sizes))
    return _replay(path, inputs, output, dims)


def _result(a, b, others, output):
    both = a | b
    keep = set(output)
    for o in others:
        keep |= o
    return both & keep


def _flops(a, b, res, dims):
    both = a | b
    return math.prod(dims[c] for c in both) * (2 if both != res else 1)


def random_greedy_once(inputs, output, dims, rng, costmod, temperature):
    """One randomized greedy path (opt_einsum's RandomGreedy): among the best candidate
    pairs (shared indices) pick by Boltzmann weights on cost = size(ab) - costmod*(size(a)
    + size(b)), relative temperature; outer products of what is left at the end. Returns
    its flops."""
    live = {i: frozenset(t) for i, t in enumerate(inputs)}
    size = lambda s: math.prod(dims[c] for c in s)
    nxt, total = len(inputs), 0
    while len(live) > 1:
        cands = []
        keys = list(live)
        for x in range(len(keys)):
            for y in range(x + 1, len(keys)):
                a, b = live[keys[x]], live[keys[y]]
                if not a & b:
                    continue
                others = [live[k] for k in keys if k not in (keys[x], keys[y])]
                res = _result(a, b, others, output)
                cost = size(res) - costmod * (size(a) + size(b))
                cands.append((cost, keys[x], keys[y], res))
        if not cands:  # outer products, smallest first
            x, y = sorted(keys, key=lambda k: size(live[k]))[:2]
            others = [live[k] for k in keys if k not in (x, y)]
            res = _result(live[x], live[y], others, output)
            cands = [(0, x, y, res)]
        cands.sort(key=lambda c: c[0])
        best = cands[:8]
        c0 = best[0][0]
        if temperature > 0 and len(best) > 1:
            t = temperature * max(abs(c0), 1.0)
            weights = [math.exp(-(c[0] - c0) / t) for c in best]
            pick = rng.choices(best, weights=weights)[0]
        else:
            pick = best[0]
        _, x, y, res = pick
        total += _flops(live[x], live[y], res, dims)
        del live[x], live[y]
        live[nxt] = res
        nxt += 1
    return total


def random_greedy_best(inputs, output, dims, restarts=64, seed=1):
    """The least flops of `restarts` randomized greedy paths (costmod uniform in [0.1, 4],
    temperature log-uniform in [0.001, 1], as opt_einsum's defaults)."""
    rng = random.Random(seed)
    best = math.inf
    for _ in range(restarts):
        costmod = rng.uniform(0.1, 4.0)
        temperature = math.exp(rng.uniform(math.log(0.001), math.log(1.0)))
        best = min(best, random_greedy_once(inputs, output, dims, rng, costmod, temperature))
    return best


def regular_sets(n, seed):
    edges = regular_network(n, seed)
    inputs = ["".join(symbol(e) for e in sorted(es)) for es in edges]
    dims = {symbol(e): 2 for es in edges for e in es}
    return inputs, "", dims


# ---- einsum_tn: the MPS-MPO-MPS expectation and the four-index transformation ----

def mps_tensors(sites, bond, phys, mpo_bond, seed):
    """Random f64 MPS A (bra), MPO W, MPS B (ket) in [-1, 1): A_i [left, phys, right],
    W_i [left, phys_a, phys_b, right], B_i [left, phys, right]; the boundary bonds are 1."""
    rs = np.random.RandomState(seed)
    A, W, B = [], [], []
    for i in range(sites):
        l = 1 if i == 0 else bond
        r = 1 if i == sites - 1 else bond
        lw = 1 if i == 0 else mpo_bond
        rw = 1 if i == sites - 1 else mpo_bond
        A.append(rs.uniform(-1, 1, (l, phys, r)) / bond ** 0.5)
        W.append(rs.uniform(-1, 1, (lw, phys, phys, rw)) / mpo_bond ** 0.5)
        B.append(rs.uniform(-1, 1, (l, phys, r)) / bond ** 0.5)
    return A, W, B


SITE = "awb,apc,wpqv,bqd->cvd"  # env [a, w, b] through one site into [c, v, d]

# NumPy's 'optimal' with a memory limit it never hits: with its default (the largest
# input or output) no intermediate of a site fits, and NumPy falls back to one naive
# four-operand loop (12 s a site at bond 64) instead of pairwise BLAS steps.
OPTIMAL = ("optimal", 1 << 62)


def mps_numpy(A, W, B, backward):
    """The expectation <A|W|B> by a sweep of per-site einsums (optimize='optimal'), and,
    with backward, the gradient of every tensor from left and right environments."""
    n = len(A)
    env = [np.ones((1, 1, 1))]
    for i in range(n):
        env.append(np.einsum(SITE, env[i], A[i], W[i], B[i], optimize=OPTIMAL))
    value = env[n].reshape(())
    if not backward:
        return value
    right = [None] * (n + 1)
    right[n] = np.ones((1, 1, 1))
    for i in range(n - 1, -1, -1):
        right[i] = np.einsum("apc,wpqv,bqd,cvd->awb", A[i], W[i], B[i], right[i + 1],
                             optimize=OPTIMAL)
    grads = []
    for i in range(n):
        L, R = env[i], right[i + 1]
        grads.append(np.einsum("awb,wpqv,bqd,cvd->apc", L, W[i], B[i], R, optimize=OPTIMAL))
        grads.append(np.einsum("awb,apc,bqd,cvd->wpqv", L, A[i], B[i], R, optimize=OPTIMAL))
        grads.append(np.einsum("awb,apc,wpqv,cvd->bqd", L, A[i], W[i], R, optimize=OPTIMAL))
    return value, grads


def mps_torch(torch, A, W, B, backward):
    """The same sweep with torch.einsum; backward through autograd."""
    env = torch.ones((1, 1, 1), dtype=torch.float64)
    for a, w, b in zip(A, W, B):
        env = torch.einsum(SITE, env, a, w, b)
    value = env.reshape(())
    if backward:
        value.backward()
    return value


FOUR_INDEX = "pi,qj,ijkl,rk,sl->pqrs"


def median_time(fn, reps):
    """The median of `reps` timed calls after one untimed warm-up."""
    fn()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    times.sort()
    return times[len(times) // 2]


# ---- the workloads of torch_bench.py (figure(system, workload, metric, value, unit)) ----

def run_path(figure, quick):
    """einsum_path: NumPy's optimal on the small expressions (its default memory limit;
    without one up to 7 operands, where its exhaustive search takes seconds), NumPy's
    greedy and the best of 64 randomized greedy paths on the 3-regular networks."""
    for k, (expr, text) in enumerate(SMALL):
        flops, pairwise = numpy_optimal_flops(expr, shapes_of(text))
        if pairwise:
            figure("numpy", "einsum_path", f"small{k}_log10_flops", math.log10(flops), "log10")
        n_ops = expr.count(",") + 1
        if n_ops <= 7:
            ops = [np.empty(s) for s in shapes_of(text)]
            path, _ = np.einsum_path(expr, *ops, optimize=("optimal", 10 ** 30))
            inputs, output = expr.split("->")
            dims = {}
            for t, s in zip(inputs.split(","), shapes_of(text)):
                dims.update(zip(t, s))
            free = _replay(path[1:], inputs.split(","), output, dims)
            figure("numpy", "einsum_path", f"small{k}_unlimited_log10_flops", math.log10(free),
                   "log10")
    for n in (30, 40, 80):
        inputs, output, dims = regular_sets(n, n)
        figure("numpy", "einsum_path", f"reg{n}_greedy_log10_flops",
               math.log10(numpy_greedy_flops(inputs, output, dims)), "log10")
        t0 = time.perf_counter()
        best = random_greedy_best(inputs, output, dims, 8 if quick else 64, seed=n)
        figure("rgreedy64", "einsum_path", f"reg{n}_log10_flops", math.log10(best), "log10")
        figure("rgreedy64", "einsum_path", f"reg{n}_seconds", time.perf_counter() - t0, "s")


def four_index_numpy_grads(C, T):
    """pqrs = C_pi C_qj T_ijkl C_rk C_sl and the gradients of sum(pqrs) by hand."""
    out = np.einsum(FOUR_INDEX, C[0], C[1], T, C[2], C[3], optimize=OPTIMAL)
    G = np.ones_like(out)
    o = dict(optimize=OPTIMAL)
    grads = [np.einsum("pqrs,qj,ijkl,rk,sl->pi", G, C[1], T, C[2], C[3], **o),
             np.einsum("pqrs,pi,ijkl,rk,sl->qj", G, C[0], T, C[2], C[3], **o),
             np.einsum("pqrs,pi,qj,rk,sl->ijkl", G, C[0], C[1], C[2], C[3], **o),
             np.einsum("pqrs,pi,qj,ijkl,sl->rk", G, C[0], C[1], T, C[3], **o),
             np.einsum("pqrs,pi,qj,ijkl,rk->sl", G, C[0], C[1], T, C[2], **o)]
    return out, grads


def run_tn(torch, figure, reps, quick):
    """einsum_tn with NumPy (optimize='optimal'; backward by hand) and torch.einsum."""
    sites, bond, n = (4, 4, 4) if quick else (32, 64, 24)
    A, W, B = mps_tensors(sites, bond, 2, 4, seed=7)
    ms = lambda fn: 1e3 * median_time(fn, reps)
    figure("numpy", "einsum_tn", "mps_fwd", ms(lambda: mps_numpy(A, W, B, False)), "ms")
    figure("numpy", "einsum_tn", "mps_fwd_bwd", ms(lambda: mps_numpy(A, W, B, True)), "ms")
    tA, tW, tB = ([torch.tensor(x, requires_grad=True) for x in xs] for xs in (A, W, B))
    with torch.no_grad():
        figure("torch", "einsum_tn", "mps_fwd", ms(lambda: mps_torch(torch, tA, tW, tB, False)),
               "ms")

    def torch_mps_bwd():
        for t in tA + tW + tB:
            t.grad = None
        mps_torch(torch, tA, tW, tB, True)
    figure("torch", "einsum_tn", "mps_fwd_bwd", ms(torch_mps_bwd), "ms")
    rs = np.random.RandomState(11)
    C = [rs.uniform(-1, 1, (n, n)) for _ in range(4)]
    T = rs.uniform(-1, 1, (n, n, n, n))
    figure("numpy", "einsum_tn", "four_index_fwd",
           ms(lambda: np.einsum(FOUR_INDEX, C[0], C[1], T, C[2], C[3], optimize=OPTIMAL)), "ms")
    figure("numpy", "einsum_tn", "four_index_fwd_bwd", ms(lambda: four_index_numpy_grads(C, T)),
           "ms")
    tC = [torch.tensor(c, requires_grad=True) for c in C]
    tT = torch.tensor(T, requires_grad=True)
    with torch.no_grad():
        figure("torch", "einsum_tn", "four_index_fwd",
               ms(lambda: torch.einsum(FOUR_INDEX, tC[0], tC[1], tT, tC[2], tC[3])), "ms")

    def torch_four_bwd():
        for t in tC + [tT]:
            t.grad = None
        torch.einsum(FOUR_INDEX, tC[0], tC[1], tT, tC[2], tC[3]).sum().backward()
    figure("torch", "einsum_tn", "four_index_fwd_bwd", ms(torch_four_bwd), "ms")
