#!/usr/bin/env bash
# scripts/setup.sh - take a fresh Debian 12 machine to a built, running tenferro-c.
#
# Usage (from anywhere inside a clone; paths below are relative to the repo root):
#   bash scripts/setup.sh         install what is missing, build in ./build, run the main job
#   bash scripts/setup.sh bench   install what is missing and the bench's peers
#                                   (BENCH_PACKAGES), then bench/run.sh and bench/growth.py
#                                   (docs/performance.md); the tests never need those
#   bash scripts/setup.sh test    install what is missing, then run the whole suite:
#                                   ctest in ./build       (RelWithDebInfo)
#                                   ctest in ./build-asan  (-DTF_SANITIZE=address: ASan + UBSan)
#                                   ctest -L concurrency in ./build-tsan (-DTF_SANITIZE=thread),
#                                     only if tests with that label exist
#                                   libFuzzer in ./build-fuzz (clang, -DTF_BUILD_FUZZ=ON): each
#                                     harness of tests/fuzz replays its checked-in corpus, then
#                                     fuzzes for TF_FUZZ_SECONDS seconds (default 60; 0 replays
#                                     only); new inputs go to a temporary folder
#                                   the non-GPU tests of ./build under valgrind
#                                     (tests/reliability/valgrind.sh)
#
# Needs only bash and apt to start with. Packages are installed only when missing, so a
# second run installs nothing; the builds are incremental. Runs as root, or through sudo
# when it has to install something. Any failure stops the script with a non-zero status.
set -euo pipefail

# The Debian 12 packages the build, the tests and the plugins need.
PACKAGES=(
    build-essential cmake pkg-config python3
    libopenblas-dev liblapacke-dev   # CPU engine, linalg extension
    libcmocka-dev                    # tests
    libinih-dev                      # config files
    libffi-dev                       # calling extension ops by name
    libopenmpi-dev openmpi-bin       # the dist module and its multi-rank tests (mpirun)
    libvulkan-dev glslc mesa-vulkan-drivers vulkan-validationlayers # Vulkan engine
    valgrind                         # leak checks of the test suite
    clang libclang-rt-14-dev         # libFuzzer (-fsanitize=fuzzer); the runtime is only
                                     # recommended by clang, so it is named here
)

# Only for `setup.sh bench`: the peers and the plots of docs/performance.md.
BENCH_PACKAGES=(python3-torch python3-numpy python3-matplotlib)

# ---- The project's main job: train the demo model on the default engine. ----
run_main_job() {
    run ./build/tools/tenferro demo
}

log() { printf 'setup: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }
run() { log "\$ $*"; "$@"; }

cd "$(dirname "${BASH_SOURCE[0]}")/.."
JOBS="$(nproc)"

install_packages() {
    local missing=() pkg
    for pkg in "${PACKAGES[@]}"; do
        if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed'; then
            missing+=("$pkg")
        fi
    done
    if [ "${#missing[@]}" -eq 0 ]; then
        log "all ${#PACKAGES[@]} packages already installed"
        return
    fi
    log "missing packages: ${missing[*]}"

    local sudo=()
    if [ "$(id -u)" -ne 0 ]; then
        command -v sudo >/dev/null 2>&1 ||
            die "installing packages needs root: run as root, or install sudo"
        sudo=(sudo)
    fi
    run "${sudo[@]}" apt-get update
    run "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive \
        apt-get install -y --no-install-recommends "${missing[@]}"
}

# build DIR [cmake options...]: configure DIR (cheap when nothing changed) and build it.
build() {
    local dir="$1"
    shift
    run cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@"
    run cmake --build "$dir" -j "$JOBS"
}

# GCC 12's sanitizer runtimes cannot place their shadow memory when the kernel randomises
# mmap with more than 28 bits (the default of newer kernels): run those tests without ASLR then.
no_aslr=()
if [ "$(cat /proc/sys/vm/mmap_rnd_bits 2>/dev/null || echo 28)" -gt 28 ]; then
    no_aslr=(setarch "$(uname -m)" -R)
fi

# The libFuzzer harnesses of tests/fuzz (docs/reliability.md, "Fuzzing"): built with clang,
# ASan and UBSan; the ctest label "fuzz" replays each checked-in corpus, then each harness
# fuzzes for TF_FUZZ_SECONDS. libFuzzer writes new inputs to the first corpus folder it is
# given, so a temporary one comes first and the checked-in corpus stays read-only. A crash,
# leak, sanitizer report, timeout or memory blow-up fails the script, naming the reproducer.
FUZZ_HARNESSES=(config shapes call descriptor)
run_fuzz() {
    local seconds="${TF_FUZZ_SECONDS:-60}"
    [[ "$seconds" =~ ^[0-9]+$ ]] || die "TF_FUZZ_SECONDS must be a whole number of seconds"
    log "tests: libFuzzer build (./build-fuzz), corpus replay, ${seconds}s per harness"
    run cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=clang \
        -DTF_SANITIZE=address -DTF_BUILD_FUZZ=ON -DTF_BUILD_BENCH=OFF
    run cmake --build build-fuzz -j "$JOBS" --target tf_fuzz
    run env UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
        "${no_aslr[@]}" ctest --test-dir build-fuzz --output-on-failure -L fuzz
    [ "$seconds" -gt 0 ] || return 0
    local name work dict
    for name in "${FUZZ_HARNESSES[@]}"; do
        work="$(mktemp -d "${TMPDIR:-/tmp}/tf-fuzz-$name.XXXXXX")"
        mkdir "$work/new"
        dict=()
        [ -f "tests/fuzz/$name.dict" ] && dict=("-dict=tests/fuzz/$name.dict")
        log "\$ fuzz_$name for ${seconds}s (log: $work/log)"
        if ! env UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 "${no_aslr[@]}" \
            "./build-fuzz/tests/fuzz/fuzz_$name" -max_total_time="$seconds" -timeout=10 \
            -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$work/" "${dict[@]}" \
            "$work/new" "tests/fuzz/corpus/$name" >"$work/log" 2>&1; then
            grep -v 'failed to allocate' "$work/log" | tail -n 60 >&2
            die "fuzz_$name failed; the input is in $work/ (fix the bug, then add the input to tests/fuzz/corpus/$name/)"
        fi
        grep -E '^stat::number_of_executed_units' "$work/log" >&2 || true
        rm -rf "$work"
    done
}

run_tests() {
    log "tests: normal build (./build)"
    build build
    run ctest --test-dir build --output-on-failure -j2

    log "tests: ASan + UBSan build (./build-asan)"
    build build-asan -DTF_SANITIZE=address
    run env ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
        "${no_aslr[@]}" ctest --test-dir build-asan --output-on-failure -j2

    # The normal build knows the labels: skip the TSan build while no test has this one.
    local listing
    listing="$(ctest --test-dir build -N -L concurrency)"
    if grep -q 'Total Tests: [1-9]' <<<"$listing"; then
        log "tests: TSan build (./build-tsan), tests labelled concurrency"
        build build-tsan -DTF_SANITIZE=thread
        run "${no_aslr[@]}" ctest --test-dir build-tsan --output-on-failure -j2 -L concurrency
    else
        log "tests: no test is labelled concurrency yet; skipping the TSan build"
    fi

    run_fuzz

    # The non-GPU test programs of the normal build under valgrind memcheck (a few
    # minutes on two cores; the exclusions are listed in the script).
    log "tests: valgrind memcheck (./build)"
    run bash tests/reliability/valgrind.sh build
}

main() {
    local mode="${1:-demo}"
    case "$mode" in
    demo | test) ;;
    bench) PACKAGES+=("${BENCH_PACKAGES[@]}") ;;
    -h | --help)
        echo "usage: bash scripts/setup.sh [demo|test|bench]   (see the comment at the top of the script)"
        return
        ;;
    *) die "unknown mode '$mode' (expected: demo, test or bench)" ;;
    esac

    log "installing packages"
    install_packages

    if [ "$mode" = test ]; then
        run_tests
        log "all tests passed (${SECONDS}s)"
    elif [ "$mode" = bench ]; then
        run bash bench/run.sh --build build
        run /usr/bin/python3 bench/growth.py --build build
    else
        log "building (./build)"
        build build
        log "running the main job"
        run_main_job
        log "done (${SECONDS}s)"
    fi
}

main "$@"
