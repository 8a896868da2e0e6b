#!/usr/bin/env bash
# bench/ab.sh - an A/B of two builds: `tenferro bench` run alternately from build A and
# build B, N rounds, then the median of every figure and B's median over A's. Alternating
# spreads the machine's noise (other jobs, frequency changes) over both builds alike;
# compare the ratios, not single runs.
#
# Usage: bash bench/ab.sh BUILD_A BUILD_B [ROUNDS] [-- BENCH_ARGS...]
#   BUILD_A, BUILD_B  build folders holding tools/tenferro (each finds its own plugins)
#   ROUNDS            rounds of one run each (default 12)
#   BENCH_ARGS        passed to `tenferro bench` (default: --engine cpu --threads 1)
# Prints one line per figure: name, median A, median B, B/A. The runs' outputs stay in
# a temporary folder, named on stderr.
set -euo pipefail

[ $# -ge 2 ] || { sed -n '2,12p' "$0" >&2; exit 2; }
A=$1 B=$2
shift 2
ROUNDS=12
if [ $# -gt 0 ] && [ "$1" != "--" ]; then ROUNDS=$1; shift; fi
[ $# -gt 0 ] && [ "$1" = "--" ] && shift
ARGS=("$@")
[ ${#ARGS[@]} -gt 0 ] || ARGS=(--engine cpu --threads 1)
for d in "$A" "$B"; do
    [ -x "$d/tools/tenferro" ] || { echo "ab.sh: no $d/tools/tenferro" >&2; exit 2; }
done

OUT=$(mktemp -d /tmp/tenferro-ab.XXXXXX)
echo "ab.sh: $ROUNDS rounds of: tenferro bench ${ARGS[*]}; outputs in $OUT" >&2
for i in $(seq 1 "$ROUNDS"); do
    "$A/tools/tenferro" bench "${ARGS[@]}" 2>/dev/null >"$OUT/a.$i.txt"
    "$B/tools/tenferro" bench "${ARGS[@]}" 2>/dev/null >"$OUT/b.$i.txt"
done

python3 - "$OUT" <<'PY'
import collections, glob, os, statistics, sys
runs = collections.defaultdict(lambda: {"a": [], "b": []})
for path in glob.glob(os.path.join(sys.argv[1], "*.txt")):
    side = os.path.basename(path)[0]
    for line in open(path):
        f = line.split()
        if len(f) == 4:
            try:
                runs[f"{f[0]} {f[1]} ({f[3]})"][side].append(float(f[2]))
            except ValueError:
                pass
for name in sorted(runs):
    a, b = runs[name]["a"], runs[name]["b"]
    if a and b:
        ma, mb = statistics.median(a), statistics.median(b)
        ratio = f"{mb / ma:.3f}" if ma else "-"
        print(f"{name:48s} A {ma:10.4g}  B {mb:10.4g}  B/A {ratio}")
PY
