#!/usr/bin/env bash
# bench/run_train.sh - the training figures of docs/performance.md ("Training"), in one run:
#   tenferro bench dp           at 1 and 2 ranks (mpirun -np 1, -np 2): the step time, the
#                               bucket all-reduce on the mlp model (0.8 MB) and on 25 MiB
#   tenferro-dp-allreduce       the same buckets against raw MPI_Allreduce of the same bytes,
#                               in one process, at 2 ranks; also with a caching allocator
#   tenferro bench checkpoint   save and load against plain write and read, on the build
#                               machine's /tmp and on /dev/shm (tmpfs)
#
# Usage (from anywhere inside a clone): bash bench/run_train.sh [--build DIR] [--rounds N]
#   --build DIR   build folder (default: build); configured and built when needed
#   --rounds N    repeat everything N times (default 3): timings on shared machines drift
# Needs MPI (the dist module); as root, mpirun gets --allow-run-as-root.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
BUILD=build
ROUNDS=3
while [ $# -gt 0 ]; do
    case "$1" in
    --build) BUILD="$2"; shift 2 ;;
    --rounds) ROUNDS="$2"; shift 2 ;;
    -h | --help) sed -n '2,15p' "$0"; exit 0 ;;
    *) echo "bench/run_train.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
    esac
done
if [ ! -f "$BUILD/CMakeCache.txt" ]; then
    cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo >&2
fi
cmake --build "$BUILD" -j "$(nproc)" --target tenferro_cli tenferro-engine-cpu \
    tenferro-ext-dist tenferro_dp_allreduce >&2
MPIRUN=(mpirun --oversubscribe)
[ "$(id -u)" -eq 0 ] && MPIRUN+=(--allow-run-as-root)
CLI="$BUILD/tools/tenferro"

echo "# $(date -u '+%Y-%m-%d %H:%M UTC'); $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores"
for r in $(seq 1 "$ROUNDS"); do
    echo "# round $r, load average $(cut -d' ' -f1-3 /proc/loadavg)"
    for np in 1 2; do
        echo "## dp at $np rank(s)"
        "${MPIRUN[@]}" -np "$np" "$CLI" bench dp 2>/dev/null
    done
    echo "## buckets against raw MPI_Allreduce, 2 ranks"
    "${MPIRUN[@]}" -np 2 "$BUILD/bench/tenferro-dp-allreduce" --reps 15 814112 26214400
    echo "## the same with a caching allocator"
    "${MPIRUN[@]}" -np 2 "$BUILD/bench/tenferro-dp-allreduce" --reps 15 --cache-alloc \
        814112 26214400
    for dir in /tmp /dev/shm; do
        echo "## checkpoint in $dir"
        TMPDIR="$dir" "$CLI" bench checkpoint 2>/dev/null
    done
done
