#!/usr/bin/env bash
# bench/einsum_run.sh - the einsum workloads in one run, side by side: `tenferro bench
# einsum_path einsum_tn` and their peers (NumPy, a randomized greedy, torch.einsum;
# bench/einsum_peers.py through torch_bench.py), then the comparisons of docs/performance.md
# (search against the best of 64 randomized greedy paths, tenferro's times against the
# faster peer).
#
# Usage: bash bench/einsum_run.sh [--build DIR] [--threads N] [--quick]
#   PYTHON=...   the interpreter with numpy and torch (default /usr/bin/python3)
# The figure lines go to stdout and to $BUILD/einsum-run.txt; the programs' stderr to
# $BUILD/einsum-run.log.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
BUILD=build
THREADS=1
QUICK=()
PYTHON="${PYTHON:-/usr/bin/python3}"
while [ $# -gt 0 ]; do
    case "$1" in
    --build) BUILD="$2"; shift 2 ;;
    --threads) THREADS="$2"; shift 2 ;;
    --quick) QUICK=(--quick); shift ;;
    -h | --help) sed -n '2,12p' "$0"; exit 0 ;;
    *) echo "bench/einsum_run.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
    esac
done
unset OPENBLAS_CORETYPE OPENBLAS_L2_SIZE
RAW="$BUILD/einsum-run.txt"
LOG="$BUILD/einsum-run.log"
echo "# $(date -u '+%Y-%m-%d %H:%M UTC'); $(lscpu | sed -n 's/^Model name: *//p'), threads $THREADS;" \
    "load average before: $(cut -d' ' -f1-3 /proc/loadavg)" | tee "$RAW"
env OPENBLAS_NUM_THREADS="$THREADS" "$BUILD/tools/tenferro" bench --threads "$THREADS" \
    "${QUICK[@]}" einsum_path einsum_tn 2>"$LOG" | tee -a "$RAW"
env OMP_NUM_THREADS="$THREADS" OPENBLAS_NUM_THREADS="$THREADS" MKL_NUM_THREADS="$THREADS" \
    "$PYTHON" bench/torch_bench.py --threads "$THREADS" "${QUICK[@]}" einsum_path einsum_tn \
    2>>"$LOG" | tee -a "$RAW"
echo "# load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
"$PYTHON" - "$RAW" <<'EOF'
import sys
fig = {}
for line in open(sys.argv[1]):
    p = line.split()
    if len(p) == 4 and not line.startswith("#"):
        fig[p[0] + " " + p[1]] = float(p[2])
print("\n| case | tenferro | peer | tenferro / peer |\n|---|---|---|---|")
for k in range(8):
    t, n = fig.get(f"einsum_path small{k}_log10_flops"), fig.get(f"numpy:einsum_path small{k}_log10_flops")
    if t is not None and n is not None:
        print(f"| small{k} optimal (log10 flops) | {t:.5f} | numpy {n:.5f} | {'equal' if abs(t - n) < 1e-4 else 'DIFFERENT'} |")
for n in (30, 40, 80):
    for m in ("search", "auto"):
        t, r = fig.get(f"einsum_path reg{n}_{m}_log10_flops"), fig.get(f"rgreedy64:einsum_path reg{n}_log10_flops")
        if t is not None and r is not None:
            print(f"| reg{n} {m} (log10 flops) | {t:.3f} | rgreedy64 {r:.3f} | {10 ** (t - r):.3f}x the flops |")
for case in ("mps_fwd", "mps_fwd_bwd", "four_index_fwd", "four_index_fwd_bwd"):
    t = fig.get(f"einsum_tn {case}")
    peers = {s: fig.get(f"{s}:einsum_tn {case}") for s in ("numpy", "torch")}
    peers = {s: v for s, v in peers.items() if v is not None}
    if t is not None and peers:
        s, v = min(peers.items(), key=lambda kv: kv[1])
        print(f"| {case} (ms) | {t:.3g} | {s} {v:.3g} | {t / v:.2f} |")
EOF
