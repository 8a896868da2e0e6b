#!/usr/bin/env bash
# bench/run.sh - the standard workloads (../shared/BENCHMARKS.md) in one run, three ways:
# `tenferro bench`, the machine's limits (bench/limits.c) and PyTorch's CPU eager mode
# (bench/torch_bench.py), at 1 thread and at the core count; then a table of ratios.
#
# Usage (from anywhere inside a clone):
#   bash bench/run.sh [--build DIR] [--threads "1 2"] [--rounds N] [--quick]
#                     [--targets SET] [--interleave] [--coretype NAME] [WORKLOAD ...]
#     --build DIR     build folder (default: build); configured and built when needed
#     --threads LIST  thread counts to run (default: "1 $(nproc)")
#     --rounds N      run the three programs N times in turn at each thread count
#                     (default 3; each round runs every thread count); the table gives
#                     the median over rounds of each figure and of each ratio, so that
#                     load from other processes hits all three sides alike
#     --quick         tiny sizes: checks the plumbing, the figures mean nothing
#     --targets SET   the goals the table checks (bench/ratios.py: issue24, the default;
#                     issue21 for the complex workload)
#     --coretype NAME run all three sides with OpenBLAS's kernels for NAME
#                     (OPENBLAS_CORETYPE=NAME, e.g. SkylakeX or Haswell) rather than its own
#                     choice, which on a processor newer than the OpenBLAS is a pre-AVX kernel
#                     (docs/performance.md, "OpenBLAS on a newer processor")
#     --interleave    inside each round and thread count, run one workload at a time on
#                     the three sides (tenferro, its limit, PyTorch) before the next, so
#                     that the two figures of a ratio are seconds apart rather than a
#                     whole program's run; by default each program runs every workload
#                     in one process
#     WORKLOAD ...    run these workloads of `tenferro bench` and torch_bench.py instead of
#                     the standard ones (e.g. `complex`), and the limits program's limits
#                     of them (none for a workload that has no limit)
#   PYTHON=...        the interpreter with torch (default: /usr/bin/python3, Debian's
#                     python3-torch)
#
# stdout: the figure lines of each run under a "# threads N round R" header, the OpenBLAS
# kernel each side chose, and the table (bench/ratios.py). Every program's own stderr is kept
# in $BUILD/bench-run.log, the figure lines in $BUILD/bench-run.txt. Timings on shared
# machines drift: compare ratios of one run only.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
BUILD=build
THREADS="1 $(nproc)"
ROUNDS=3
QUICK=()
TARGETS=issue24
INTERLEAVE=0
CORETYPE=
WORKLOADS=()
PYTHON="${PYTHON:-/usr/bin/python3}"
while [ $# -gt 0 ]; do
    case "$1" in
    --build) BUILD="$2"; shift 2 ;;
    --threads) THREADS="$2"; shift 2 ;;
    --rounds) ROUNDS="$2"; shift 2
        [[ "$ROUNDS" =~ ^[1-9][0-9]*$ ]] || { echo "bench/run.sh: --rounds needs N >= 1" >&2; exit 2; } ;;
    --quick) QUICK=(--quick); shift ;;
    --targets) TARGETS="$2"; shift 2 ;;
    --interleave) INTERLEAVE=1; shift ;;
    --coretype) CORETYPE="$2"; shift 2
        [[ "$CORETYPE" =~ ^[A-Za-z0-9_]+$ ]] || { echo "bench/run.sh: --coretype needs a kernel name" >&2; exit 2; } ;;
    -h | --help) sed -n '2,35p' "$0"; exit 0 ;;
    -*) echo "bench/run.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
    *) WORKLOADS+=("$1"); shift ;;
    esac
done

# This machine's environment may pin OpenBLAS to an older kernel (OPENBLAS_CORETYPE,
# OPENBLAS_L2_SIZE). The bench measures OpenBLAS's own choice: both are unset for this
# command only; tests and CI keep them.
unset OPENBLAS_CORETYPE OPENBLAS_L2_SIZE
if [ -n "$CORETYPE" ]; then
    export OPENBLAS_CORETYPE="$CORETYPE"
fi

if [ ! -f "$BUILD/CMakeCache.txt" ]; then
    cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo >&2
fi
cmake --build "$BUILD" -j "$(nproc)" --target tenferro_cli tenferro_limits tenferro-engine-cpu >&2

LOG="$BUILD/bench-run.log"
RAW="$BUILD/bench-run.txt"
: >"$LOG"
: >"$RAW"

# The three sides at thread count $1 on workloads $2... (none: each program's default
# set; the limits program then runs all its limits, else those it has of them).
run_sides() {
    local t=$1
    shift
    local limits=() w
    for w in "$@"; do
        if printf '%s\n' "${LIMITS_HAS[@]}" | grep -qx -- "$w"; then limits+=("$w"); fi
    done
    # The CPU engine sets OpenBLAS to one thread itself and splits work over its own pool
    # of --threads; the limits program sets OpenBLAS's threads through its API; PyTorch
    # gets torch.set_num_threads plus the OpenMP and OpenBLAS variables for its BLAS.
    env OPENBLAS_NUM_THREADS="$t" "$BUILD/tools/tenferro" bench --threads "$t" "${QUICK[@]}" \
        "$@" 2>>"$LOG" | tee -a "$RAW"
    if [ $# -eq 0 ] || [ ${#limits[@]} -gt 0 ]; then
        "$BUILD/bench/tenferro-limits" --threads "$t" "${QUICK[@]}" "${limits[@]}" 2>>"$LOG" |
            tee -a "$RAW"
    fi
    env OMP_NUM_THREADS="$t" OPENBLAS_NUM_THREADS="$t" MKL_NUM_THREADS="$t" \
        "$PYTHON" bench/torch_bench.py --threads "$t" "${QUICK[@]}" "$@" \
        2>>"$LOG" | tee -a "$RAW"
}
# The workloads the limits program has limits for, and (for --interleave, unless some are
# named) the bench's standard ones, as each program lists them.
LIMITS_HAS=()
[ ! -x "$BUILD/bench/tenferro-limits" ] || mapfile -t LIMITS_HAS < <("$BUILD/bench/tenferro-limits" --list)
EACH=("${WORKLOADS[@]}")
[ ${#EACH[@]} -gt 0 ] || mapfile -t EACH < <("$BUILD/tools/tenferro" bench --list | awk '$2 == "standard" { print $1 }')

echo "# $(date -u '+%Y-%m-%d %H:%M UTC'); $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores;" \
    "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
# Rounds outside, thread counts inside: each round runs every count in turn, so that the
# scaling ratios (round R of one count against round R of another) meet the same load.
for r in $(seq 1 "$ROUNDS"); do
  for t in $THREADS; do
    echo "# threads $t round $r" | tee -a "$RAW"
    if [ "$INTERLEAVE" = 1 ]; then
      for w in "${EACH[@]}"; do
        run_sides "$t" "$w"
      done
    else
      run_sides "$t" "${WORKLOADS[@]}"
    fi
  done
done

echo "# OpenBLAS kernel (limits): $(sed -n 's/^limits: OpenBLAS kernel \([^,]*\),.*/\1/p' "$LOG" | sort -u | tr '\n' ' ')"
echo "# CPU engine driver: $(sed -n 's/^bench: device: .*; driver: //p' "$LOG" | sort -u)"
echo "# torch: $(sed -n 's/^torch_bench: \(torch [^,]*\),.*/\1/p' "$LOG" | sort -u)"
echo "# load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
"$PYTHON" bench/ratios.py --targets "$TARGETS" "$RAW"
