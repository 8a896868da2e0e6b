#!/usr/bin/env bash
# bench/gpu/run.sh - the figures of issue 5 on a real GPU in one command: the Vulkan engine
# against PyTorch-CUDA eager, measured in the same run on the same machine.
#
# Run on the GPU machine from the repository root, with bench/gpu/carry filled here
# beforehand by bench/gpu/prepare.sh (the machine has no compilers, no Debian packages and
# no network). It
#   1. unpacks the carried .deb files into a private folder under /tmp (never into /) and
#      puts on the library path of the tenferro commands only those libraries the machine
#      lacks (the Vulkan loader, the X11/GLVND client libraries the NVIDIA Vulkan driver
#      loads, OpenBLAS, inih, ...); finds the NVIDIA Vulkan driver's manifest;
#   2. runs `tenferro info` (the Vulkan engine's device 0 must be a GPU) and
#      `tenferro check-engine --quick vulkan` (correctness on the real driver);
#   3. runs, for each round, `tenferro bench --engine vulkan` and `bench/torch_bench.py
#      --device cuda` on the workloads dispatch, mlp, gemm and elementwise_f32, one after
#      the other;
#   4. prints the table of ratios with issue 5's targets (bench/ratios.py --targets issue5).
#
# Usage:
#   bash bench/gpu/run.sh [--rounds N] [--quick] [--torch-device cuda|cpu] [--out DIR]
#                         [--budget SECONDS] [--allow-software-device] [--skip-check]
#     --rounds N               rounds of both programs (default 3)
#     --budget SECONDS         start no further round once this long has passed since the
#                              start plus the last round's length (default 330), so that the
#                              table is written inside the device call's time limit
#     --quick                  tiny sizes: a dry run of the plumbing, the figures mean nothing
#     --torch-device cpu       PyTorch on the CPU (a dry run where CUDA is absent)
#     --out DIR                where the files go (default: $OUT, else build-gpu-run)
#     --allow-software-device  go on when the Vulkan device is a CPU one (lavapipe)
#     --skip-check             skip check-engine
#   PYTHON=...                 the interpreter with torch (default: python3)
#   TF_GPU_CARRIED_LIBS=all    use every carried library, even where the machine has its own
#   TF_GPU_PY_UNPACK=1         unpack with bench/gpu/unpack_deb.py, even where dpkg-deb exists
#
# Files in the output folder: env.txt (machine, driver, libraries), info.txt, check-engine.txt,
# raw.txt (the figure lines, under "# engine vulkan round R"), log.txt (every program's
# stderr), table.md. Exit status 0 when every step ran and check-engine passed, else 1.
set -uo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/../.." || exit 2
ROOT=$(pwd)
CARRY="$ROOT/bench/gpu/carry"
OUT_DIR="${OUT:-build-gpu-run}"
ROUNDS=3
QUICK=()
TORCH_DEVICE=cuda
ALLOW_SOFTWARE=0
CHECK=1
BUDGET=330
ENGINE=vulkan
WORKLOADS=(dispatch mlp gemm elementwise_f32)
PYTHON="${PYTHON:-python3}"
while [ $# -gt 0 ]; do
    case "$1" in
    --rounds) ROUNDS="$2"; shift 2
        [[ "$ROUNDS" =~ ^[1-9][0-9]*$ ]] || { echo "bench/gpu/run.sh: --rounds needs N >= 1" >&2; exit 2; } ;;
    --quick) QUICK=(--quick); shift ;;
    --torch-device) TORCH_DEVICE="$2"; shift 2
        [[ "$TORCH_DEVICE" =~ ^(cpu|cuda)$ ]] || { echo "bench/gpu/run.sh: --torch-device cpu|cuda" >&2; exit 2; } ;;
    --out) OUT_DIR="$2"; shift 2 ;;
    --budget) BUDGET="$2"; shift 2
        [[ "$BUDGET" =~ ^[1-9][0-9]*$ ]] || { echo "bench/gpu/run.sh: --budget needs SECONDS >= 1" >&2; exit 2; } ;;
    --allow-software-device) ALLOW_SOFTWARE=1; shift ;;
    --skip-check) CHECK=0; shift ;;
    -h | --help) sed -n '2,37p' "$0"; exit 0 ;;
    *) echo "bench/gpu/run.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
    esac
done

if [ ! -f "$CARRY/tenferro/bin/tenferro" ] || ! ls "$CARRY"/debs/*.deb >/dev/null 2>&1; then
    echo "bench/gpu/run.sh: $CARRY is empty: run bash bench/gpu/prepare.sh on the build machine" \
        "and carry bench/gpu/carry (bench/gpu/README.md)" >&2
    exit 2
fi

mkdir -p "$OUT_DIR"
OUT_DIR=$(cd "$OUT_DIR" && pwd)
ENV_TXT="$OUT_DIR/env.txt" INFO="$OUT_DIR/info.txt" CHECK_TXT="$OUT_DIR/check-engine.txt"
RAW="$OUT_DIR/raw.txt" LOG="$OUT_DIR/log.txt" TABLE="$OUT_DIR/table.md"
: >"$ENV_TXT"; : >"$RAW"; : >"$LOG"
STATUS=0
T_START=$(date +%s)

note() { echo "run.sh: $*" | tee -a "$LOG" >&2; }
fail() { note "$*"; STATUS=1; }
section() { printf '\n## %s\n' "$*" >>"$ENV_TXT"; }

# ---- 1. libraries and driver ---------------------------------------------------------------

{
    section "machine"
    echo "date: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
    echo "uname: $(uname -srm); $( (. /etc/os-release && echo "$PRETTY_NAME") 2>/dev/null)"
    echo "cpu: $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1), $(nproc) cores"
    section "nvidia-smi"
    if command -v nvidia-smi >/dev/null; then
        nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem,temperature.gpu \
            --format=csv 2>&1
    else
        echo "(no nvidia-smi)"
    fi
    section "carried build"
    sed -n '1,3p' "$CARRY/MANIFEST.txt" 2>/dev/null
} >>"$ENV_TXT" 2>&1

PRIV=$(mktemp -d "${TMPDIR:-/tmp}/tenferro-gpu.XXXXXX")
mkdir -p "$PRIV/root" "$PRIV/lib" "$PRIV/bin"
# a copy that is surely executable, whatever modes the transfer kept
TENFERRO="$PRIV/bin/tenferro"
cp "$CARRY/tenferro/bin/tenferro" "$TENFERRO" && chmod 755 "$TENFERRO"
for deb in "$CARRY"/debs/*.deb; do
    if [ -z "${TF_GPU_PY_UNPACK:-}" ] && command -v dpkg-deb >/dev/null; then
        dpkg-deb -x "$deb" "$PRIV/root" || fail "dpkg-deb -x $deb failed"
    else
        "$PYTHON" "$ROOT/bench/gpu/unpack_deb.py" "$deb" "$PRIV/root" || fail "unpacking $deb failed"
    fi
done

LDCONFIG=$(command -v ldconfig || echo /sbin/ldconfig)
SYSTEM_LIBS=$("$LDCONFIG" -p 2>/dev/null | sed -n 's/^[[:space:]]*\([^ ]*\) (.*x86-64.*/\1/p')
# True when the machine already provides the shared library named $1.
system_has() {
    grep -qxF "$1" <<<"$SYSTEM_LIBS" && return 0
    local d
    IFS=: read -ra dirs <<<"${LD_LIBRARY_PATH:-}"
    for d in "${dirs[@]}"; do
        [ -n "$d" ] && [ -e "$d/$1" ] && return 0
    done
    return 1
}

section "carried libraries (soname: used, or the machine's own)"
while IFS= read -r f; do
    name=$(basename "$f")
    if [ "${TF_GPU_CARRIED_LIBS:-}" != all ] && system_has "$name"; then
        echo "$name: the machine's own" >>"$ENV_TXT"
    elif [ ! -e "$PRIV/lib/$name" ]; then
        ln -s "$f" "$PRIV/lib/$name"
        echo "$name: carried (${f#"$PRIV/root"})" >>"$ENV_TXT"
    fi
done < <(find "$PRIV/root" -regextype posix-extended -regex '.*/lib[^/]*\.so\.[0-9]+' | sort)

DRIVER_LIBS=""
for d in /usr/local/nvidia/lib64 /usr/local/nvidia/lib; do
    [ -d "$d" ] && DRIVER_LIBS="$DRIVER_LIBS:$d"
done
TF_LD="$PRIV/lib:$CARRY/tenferro/lib$DRIVER_LIBS${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

# The NVIDIA driver's Vulkan manifest: where the loader looks by itself, else in the driver's
# own folder (the machine mounts it at /usr/local/nvidia), named to the loader explicitly.
if [ -z "${VK_DRIVER_FILES:-}${VK_ICD_FILENAMES:-}" ]; then
    std=$(ls /etc/vulkan/icd.d/nvidia*.json /usr/share/vulkan/icd.d/nvidia*.json \
        /usr/local/share/vulkan/icd.d/nvidia*.json 2>/dev/null | head -1)
    if [ -z "$std" ]; then
        icd=$(find /usr/local/nvidia /usr/share/nvidia /usr/lib/nvidia /etc/nvidia /opt/nvidia \
            -maxdepth 6 -name 'nvidia_icd*.json' 2>/dev/null | head -1)
        if [ -n "$icd" ]; then
            export VK_DRIVER_FILES="$icd" VK_ICD_FILENAMES="$icd"
        fi
    fi
fi
egl=/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json
if [ -z "${__EGL_VENDOR_LIBRARY_FILENAMES:-}" ] && [ -f "$egl" ] &&
    ! ls /usr/share/glvnd/egl_vendor.d/*nvidia*.json >/dev/null 2>&1; then
    export __EGL_VENDOR_LIBRARY_FILENAMES="$egl"
fi

# The tenferro commands run with the private library path; PyTorch keeps the machine's own.
# Each command gets a time limit, so that a hang costs one step, not the whole call.
tf() {
    local limit=$1
    shift
    timeout "$limit" env LD_LIBRARY_PATH="$TF_LD" TENFERRO_PLUGIN_PATH="$CARRY/tenferro/plugins" \
        "$TENFERRO" "$@"
}

{
    section "Vulkan driver manifest"
    echo "VK_DRIVER_FILES=${VK_DRIVER_FILES:-(unset)}"
    echo "__EGL_VENDOR_LIBRARY_FILENAMES=${__EGL_VENDOR_LIBRARY_FILENAMES:-(unset)}"
    icds=$(echo "${VK_DRIVER_FILES:-}" | tr ':' ' ')
    [ -n "$icds" ] || icds=$(ls /etc/vulkan/icd.d/*.json /usr/share/vulkan/icd.d/*.json \
        /usr/local/share/vulkan/icd.d/*.json 2>/dev/null)
    for j in $icds; do
        echo "--- $j"
        cat "$j"
        echo
        lib=$(sed -n 's/.*"library_path"[[:space:]]*:[[:space:]]*"\([^"]*\)".*/\1/p' "$j")
        if [ -n "$lib" ]; then
            # a bare name is found as the dynamic loader would: the library path, then the cache
            path="$lib"
            if [[ "$lib" == */* && "$lib" != /* ]]; then
                path="$(dirname "$j")/$lib" # relative to the manifest
            elif [[ "$lib" != /* ]]; then
                path=$("$LDCONFIG" -p 2>/dev/null | awk -v n="$lib" '$1 == n { print $NF; exit }')
                for d in ${TF_LD//:/ }; do
                    [ -e "$d/$lib" ] && path="$d/$lib" && break
                done
            fi
            echo "--- its library $lib (${path:-not on the library path}); what it lacks:"
            if [ -n "$path" ] && [ -e "$path" ]; then
                LD_LIBRARY_PATH="$TF_LD" ldd "$path" 2>&1 | grep 'not found' || echo "(nothing)"
            fi
        fi
    done
    section "tenferro's libraries, as the dynamic loader finds them"
    for b in "$TENFERRO" "$CARRY"/tenferro/plugins/*.so; do
        echo "--- $(basename "$b")"
        LD_LIBRARY_PATH="$TF_LD" ldd "$b" 2>&1
    done
} >>"$ENV_TXT" 2>&1
grep -q 'not found' "$ENV_TXT" && fail "libraries are missing: see $ENV_TXT"

# ---- 2. the device and correctness ---------------------------------------------------------------

note "tenferro info"
tf 60 info >"$INFO" 2>&1 || fail "tenferro info failed"
DEVICE_LINE=$(awk -v e="engine '$ENGINE'" 'index($0, e) { on = 1; next }
    on && /device 0:/ { print; exit } on && /engine '\''/ { exit }' "$INFO" |
    sed 's/^ *device 0: //')
note "vulkan engine's device 0: ${DEVICE_LINE:-(none: the plugin did not load or found no device, see info.txt)}"
if [[ "$DEVICE_LINE" != *gpu,* ]]; then
    if [ "$ALLOW_SOFTWARE" = 0 ]; then
        fail "the Vulkan engine has no GPU device: stopping (see $ENV_TXT, $INFO;" \
            "--allow-software-device to go on)"
        exit 1
    fi
    note "not a GPU: going on (--allow-software-device)"
fi

if [ "$CHECK" = 1 ]; then
    note "tenferro check-engine --quick $ENGINE"
    t0=$(date +%s)
    tf 200 check-engine --quick --timeout 180 "$ENGINE" >"$CHECK_TXT" 2>&1
    rc=$?
    note "check-engine: exit $rc after $(($(date +%s) - t0)) s: $(grep -E '^(PASS|FAIL)' "$CHECK_TXT" | tail -1)"
    [ "$rc" = 0 ] || fail "check-engine failed on the real driver: see $CHECK_TXT"
else
    echo "(skipped: --skip-check)" >"$CHECK_TXT"
fi

# ---- 3. the rounds ------------------------------------------------------------------------------

TORCH=1
LAST_ROUND=0
for r in $(seq 1 "$ROUNDS"); do
    elapsed=$(($(date +%s) - T_START))
    if [ "$r" -gt 1 ] && [ $((elapsed + LAST_ROUND)) -gt "$BUDGET" ]; then
        fail "stopping after $((r - 1)) round(s): ${elapsed} s spent, a round takes ${LAST_ROUND} s," \
            "the budget is ${BUDGET} s (--budget)"
        break
    fi
    t_round=$(date +%s)
    echo "# engine $ENGINE round $r" | tee -a "$RAW"
    note "round $r: tenferro bench --engine $ENGINE ${QUICK[*]} ${WORKLOADS[*]}"
    tf 240 bench --engine "$ENGINE" "${QUICK[@]}" "${WORKLOADS[@]}" 2>>"$LOG" | tee -a "$RAW"
    rc=${PIPESTATUS[0]}
    [ "$rc" = 0 ] || fail "round $r: tenferro bench exited $rc (see $LOG)"
    if [ "$TORCH" = 1 ]; then
        note "round $r: torch_bench.py --device $TORCH_DEVICE ${QUICK[*]} ${WORKLOADS[*]}"
        PYTHONUNBUFFERED=1 timeout 240 "$PYTHON" bench/torch_bench.py --device "$TORCH_DEVICE" "${QUICK[@]}" \
            "${WORKLOADS[@]}" 2>>"$LOG" | tee -a "$RAW"
        rc=${PIPESTATUS[0]}
        if [ "$rc" = 3 ]; then
            fail "PyTorch has no CUDA here: no torch figures (--torch-device cpu for a dry run)"
            TORCH=0
        elif [ "$rc" != 0 ]; then
            fail "round $r: torch_bench.py exited $rc (see $LOG)"
        fi
    fi
    LAST_ROUND=$(($(date +%s) - t_round))
done

# ---- 4. the table -------------------------------------------------------------------------------

{
    echo "# $(date -u '+%Y-%m-%d %H:%M UTC'); ${ROUNDS} round(s)${QUICK:+, --quick (tiny sizes)}"
    dev=$(sed -n 's/^bench: device: //p' "$LOG" | sort -u | tr '\n' ' ')
    torch=$(sed -n 's/^torch_bench: \(torch [^,]*\),.*; \(device .*\)/\1; \2/p' "$LOG" | sort -u)
    check=$(grep -E '^(PASS|FAIL)' "$CHECK_TXT" | tail -1)
    echo "# vulkan device: ${dev:-(none)}"
    echo "# torch: ${torch:-(no figures)}"
    echo "# check-engine: ${check:-(not run)}"
    "$PYTHON" bench/ratios.py --targets issue5 "$RAW"
} >"$TABLE" 2>&1 || fail "bench/ratios.py failed (see $TABLE)"
if command -v nvidia-smi >/dev/null; then
    section "nvidia-smi after the rounds"
    nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv \
        >>"$ENV_TXT" 2>&1
fi
cat "$TABLE"
note "done in $(($(date +%s) - T_START)) s, status $STATUS; files in $OUT_DIR"
rm -rf "$PRIV"
exit "$STATUS"
