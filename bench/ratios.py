#!/usr/bin/env python3
"""ratios.py - the tables of bench/run.sh and bench/gpu/run.sh: tenferro against the
machine's limits and PyTorch.

Reads the figure lines that those scripts collected (`[limit:|torch:]<workload> <metric>
<value> <unit>`, in sections headed `# threads N round R` or `# engine NAME round R`) and
prints one Markdown table per section kind (thread count, or engine) with the ratios
tenferro/limit and tenferro/torch of each figure and the targets: those of issue 24 (the CPU
engine, the default), the older ones of issue 6 (`--targets issue6`) or, with `--targets
issue5`, those of issue 5 (the Vulkan engine on a GPU against PyTorch-CUDA). With several
thread counts it ends with a table of scaling: tenferro's figure at each count over its own
figure at the smallest count, round by round (round R of one count against round R of the
other: bench/run.sh runs the counts in turn inside each round), with the issue's targets. Ratios are of the figures as printed: for times (ns, ms) lower is
better, for GFLOP/s and TFLOP/s higher. With several rounds, each figure is the median over
rounds, and each ratio the median over rounds of that round's ratio (its smallest and largest
value in brackets): the programs of one round ran one after the other, under the same load.
`met` says yes when every round meets the target, NO when none does, else how many rounds
did. The limit columns are left out of a table that has no limit figures.

usage: python3 bench/ratios.py [--targets issue24|issue21|issue6|issue5] RAW_FILE
"""
import argparse
import statistics

# (workload, metric prefix) -> list of (against, comparison, bound)
ISSUE6 = {
    ("dispatch", "forward_per_op"): [("torch", "<=", 1 / 8)],
    ("dispatch", "backward_per_op"): [("torch", "<=", 1 / 8)],
    ("mlp", "step"): [("torch", "<=", 0.8)],
    ("matmul", "f64_"): [("limit", ">=", 0.95), ("torch", ">=", 1.0)],
    ("matmul", "f32_"): [("limit", ">=", 0.95), ("torch", ">=", 1.0)],
    ("elementwise", "fwd_bwd"): [("torch", "<=", 0.5), ("limit", "<=", 2.0)],
}

# Issue 24: the true limits (a fused vectorised pass, the mlp step by hand) and real models.
ISSUE24 = {
    ("dispatch", "forward_per_op"): [("torch", "<=", 0.1)],
    ("dispatch", "backward_per_op"): [("torch", "<=", 0.1)],
    ("mlp", "step"): [("limit", "<=", 1.1), ("torch", "<=", 0.8)],
    ("matmul", "f64_"): [("limit", ">=", 0.95), ("torch", ">=", 1.0)],
    ("matmul", "f32_"): [("limit", ">=", 0.95), ("torch", ">=", 1.0)],
    ("elementwise", "fwd_bwd"): [("limit", "<=", 1.3), ("torch", "<=", 0.5)],
    ("transformer", "step"): [("torch", "<=", 0.7, 1)],  # (..., only at this thread count)
    ("svd_grad", "fwd_bwd"): [("torch", "<=", 0.7, 1)],
}
# tenferro at N threads over tenferro at the smallest count: (workload, metric) -> bound
SCALING24 = {("transformer", "step"): 0.65}

# Issue 5: the Vulkan engine on a GPU against PyTorch-CUDA eager (bench/gpu/run.sh).
ISSUE5 = {
    ("gemm", "f32_"): [("torch", ">=", 0.9)],
    ("elementwise_f32", "fwd_bwd"): [("torch", "<=", 0.5)],
    ("dispatch", "forward_per_op"): [("torch", "<=", 1 / 4)],
    ("dispatch", "backward_per_op"): [("torch", "<=", 1 / 4)],
    ("mlp", "step"): [("torch", "<=", 1.0)],
}

# Issue 21: complex numbers (the `complex` workload: c128 matmul n = 512 and exp(z) w + z).
ISSUE21 = {
    ("complex", "c128_"): [("limit", ">=", 0.95), ("torch", ">=", 1.0)],
    ("complex", "elementwise_fwd_bwd"): [("torch", "<=", 1.0)],
}

TARGET_SETS = {"issue24": ISSUE24, "issue21": ISSUE21, "issue6": ISSUE6, "issue5": ISSUE5}
SCALING_SETS = {"issue24": SCALING24}
TARGETS = ISSUE24  # the set in use, chosen by main()
SCALING = SCALING24


def parse(path):
    """{section: [{(system, workload, metric): (value, unit)} per round]}, where a section is
    ("threads", N) or ("engine", NAME)."""
    runs, current = {}, None
    with open(path) as f:
        for line in f:
            parts = line.split()
            if line.startswith("# threads") and len(parts) >= 3:
                current = {}
                runs.setdefault(("threads", int(parts[2])), []).append(current)
            elif line.startswith("# engine") and len(parts) >= 3:
                current = {}
                runs.setdefault(("engine", parts[2]), []).append(current)
            elif len(parts) == 4 and current is not None:
                name, metric, value, unit = parts
                system, _, workload = name.rpartition(":")
                current[(system or "tenferro", workload, metric)] = (float(value), unit)
    return runs


def targets_for(workload, metric, threads=None):
    """(against, comparison, bound) of the figure; a target with a fourth entry holds only
    at that thread count."""
    for (w, prefix), t in TARGETS.items():
        if w == workload and metric.startswith(prefix):
            return [g[:3] for g in t if len(g) < 4 or threads is None or g[3] == threads]
    return []


def fmt(v):
    return "-" if v is None else f"{v:.4g}"


def fmt_ratio(values):
    if not values:
        return "-"
    mid = statistics.median(values)
    if len(values) == 1:
        return fmt(mid)
    return f"{fmt(mid)} [{fmt(min(values))}, {fmt(max(values))}]"


def median_of(rounds, key):
    values = [r[key][0] for r in rounds if key in r]
    return statistics.median(values) if values else None


def ratios_of(rounds, workload, metric, against):
    """tenferro/against of every round that has both figures."""
    out = []
    for r in rounds:
        tf, other = r.get(("tenferro", workload, metric)), r.get((against, workload, metric))
        if tf and other and other[0]:
            out.append(tf[0] / other[0])
    return out


def table(section, rounds):
    kind, value = section
    plural = "s" if len(rounds) != 1 else ""
    if kind == "threads":
        print(f"\n### {value} thread{'s' if value != 1 else ''}, {len(rounds)} round{plural}\n")
    else:
        print(f"\n### engine {value}, {len(rounds)} round{plural}\n")
    limits = any(s == "limit" for r in rounds for (s, _, _) in r)
    if limits:
        print("| workload | figure | tenferro | limit | torch | tenferro/limit | tenferro/torch "
              "| target | met |")
        print("|---|---|---|---|---|---|---|---|---|")
    else:
        print("| workload | figure | tenferro | torch | tenferro/torch | target | met |")
        print("|---|---|---|---|---|---|---|")
    keys = []
    for r in rounds:
        keys += [(w, m, u) for (s, w, m), (_, u) in r.items()
                 if s == "tenferro" and (w, m, u) not in keys]
    for workload, metric, unit in keys:
        fig = {s: median_of(rounds, (s, workload, metric)) for s in ("tenferro", "limit", "torch")}
        ratio = {s: ratios_of(rounds, workload, metric, s) for s in ("limit", "torch")}
        if metric == "rss_growth":  # a difference near 0: its ratio means nothing
            ratio = {"limit": [], "torch": []}
        goals, met = [], []
        for against, cmp, bound in targets_for(workload, metric,
                                               value if kind == "threads" else None):
            goals.append(f"vs {against} {cmp} {bound:g}")
            ok = [(r <= bound if cmp == "<=" else r >= bound) for r in ratio[against]]
            met.append("?" if not ok else "yes" if all(ok) else "NO" if not any(ok) else
                       f"{sum(ok)} of {len(ok)} rounds")
        cells = [workload, f"{metric} ({unit})", fmt(fig["tenferro"])]
        if limits:
            cells.append(fmt(fig["limit"]))
        cells.append(fmt(fig["torch"]))
        if limits:
            cells.append(fmt_ratio(ratio["limit"]))
        cells += [fmt_ratio(ratio["torch"]), "; ".join(goals) or "-", "; ".join(met) or "-"]
        print("| " + " | ".join(cells) + " |")


def scaling_table(runs):
    """tenferro at each thread count over its own figure at the smallest, per round."""
    counts = sorted(v for (k, v) in runs if k == "threads")
    if len(counts) < 2:
        return
    base = runs[("threads", counts[0])]
    print(f"\n### scaling: tenferro at N threads / tenferro at {counts[0]} thread"
          f"{'s' if counts[0] != 1 else ''}, round by round\n")
    print("| workload | figure | threads | ratio | target | met |")
    print("|---|---|---|---|---|---|")
    keys = []
    for r in base:
        keys += [(w, m, u) for (s, w, m), (_, u) in r.items()
                 if s == "tenferro" and (w, m, u) not in keys and m != "rss_growth"]
    for t in counts[1:]:
        rounds = runs[("threads", t)]
        for workload, metric, unit in keys:
            key = ("tenferro", workload, metric)
            ratios = [r[key][0] / b[key][0] for r, b in zip(rounds, base)
                      if key in r and key in b and b[key][0]]
            bound = next((v for (w, p), v in SCALING.items()
                          if w == workload and metric.startswith(p)), None)
            goal, met = "-", "-"
            if bound is not None and ratios:
                goal = f"<= {bound:g}"
                ok = [x <= bound for x in ratios]
                met = "yes" if all(ok) else "NO" if not any(ok) else \
                    f"{sum(ok)} of {len(ok)} rounds"
            print(f"| {workload} | {metric} ({unit}) | {t} | {fmt_ratio(ratios)} | {goal} "
                  f"| {met} |")


def main():
    global TARGETS, SCALING
    ap = argparse.ArgumentParser(usage=__doc__.strip().splitlines()[-1].split(": ", 1)[1])
    ap.add_argument("--targets", choices=sorted(TARGET_SETS), default="issue24")
    ap.add_argument("raw_file")
    a = ap.parse_args()
    TARGETS = TARGET_SETS[a.targets]
    SCALING = SCALING_SETS.get(a.targets, {})
    runs = parse(a.raw_file)
    for section, rounds in sorted(runs.items()):
        table(section, rounds)
    scaling_table(runs)


if __name__ == "__main__":
    main()
