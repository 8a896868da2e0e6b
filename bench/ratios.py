#!/usr/bin/env python3
"""ratios.py - the table of bench/run.sh: tenferro against the machine's limits and PyTorch.

Reads the figure lines that run.sh collected (`[limit:|torch:]<workload> <metric> <value>
<unit>`, in sections headed `# threads N round R`) and prints one Markdown table per thread
count with the ratios tenferro/limit and tenferro/torch of each figure and the targets of
issue 6. Ratios are of the figures as printed: for times (ns, ms) lower is better, for
GFLOP/s higher. With several rounds, each figure is the median over rounds, and each ratio
the median over rounds of that round's ratio (its smallest and largest value in brackets):
the three programs of one round ran one after the other, under the same load. `met` says
yes when every round meets the target, NO when none does, else how many rounds did.

usage: python3 bench/ratios.py RAW_FILE
"""
import statistics
import sys

# (workload, metric prefix) -> list of (against, comparison, bound)
TARGETS = {
    ("dispatch", "forward_per_op"): [("torch", "<=", 1 / 8)],
    ("dispatch", "backward_per_op"): [("torch", "<=", 1 / 8)],
    ("mlp", "step"): [("torch", "<=", 0.8)],
    ("matmul", "f64_"): [("limit", ">=", 0.95), ("torch", ">=", 1.0)],
    ("matmul", "f32_"): [("limit", ">=", 0.95), ("torch", ">=", 1.0)],
    ("elementwise", "fwd_bwd"): [("torch", "<=", 0.5), ("limit", "<=", 2.0)],
}


def parse(path):
    """{threads: [{(system, workload, metric): (value, unit)} per round]}"""
    runs, current = {}, None
    with open(path) as f:
        for line in f:
            parts = line.split()
            if line.startswith("# threads"):
                current = {}
                runs.setdefault(int(parts[2]), []).append(current)
            elif len(parts) == 4 and current is not None:
                name, metric, value, unit = parts
                system, _, workload = name.rpartition(":")
                current[(system or "tenferro", workload, metric)] = (float(value), unit)
    return runs


def targets_for(workload, metric):
    for (w, prefix), t in TARGETS.items():
        if w == workload and metric.startswith(prefix):
            return t
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


def table(threads, rounds):
    print(f"\n### {threads} thread{'s' if threads != 1 else ''}, "
          f"{len(rounds)} round{'s' if len(rounds) != 1 else ''}\n")
    print("| workload | figure | tenferro | limit | torch | tenferro/limit | tenferro/torch "
          "| target | met |")
    print("|---|---|---|---|---|---|---|---|---|")
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
        for against, cmp, bound in targets_for(workload, metric):
            goals.append(f"vs {against} {cmp} {bound:g}")
            ok = [(r <= bound if cmp == "<=" else r >= bound) for r in ratio[against]]
            met.append("?" if not ok else "yes" if all(ok) else "NO" if not any(ok) else
                       f"{sum(ok)} of {len(ok)} rounds")
        print(f"| {workload} | {metric} ({unit}) | {fmt(fig['tenferro'])} | {fmt(fig['limit'])} "
              f"| {fmt(fig['torch'])} | {fmt_ratio(ratio['limit'])} | "
              f"{fmt_ratio(ratio['torch'])} | {'; '.join(goals) or '-'} | "
              f"{'; '.join(met) or '-'} |")


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__.strip().splitlines()[-1])
    for threads, rounds in parse(sys.argv[1]).items():
        table(threads, rounds)


if __name__ == "__main__":
    main()
