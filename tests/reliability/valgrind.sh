#!/usr/bin/env bash
# tests/reliability/valgrind.sh BUILD_DIR - run the non-GPU test programs of a
# configured and built tree under valgrind memcheck (issue 8, item 7).
#
# Each test program ctest knows (its command and working directory read from
# `ctest --show-only=json-v1`) runs under
#   valgrind --leak-check=full --error-exitcode=1 --errors-for-leak-kinds=definite,indirect
# with the suppressions of valgrind.supp beside this script, two at a time.
# Any memcheck error or definite/indirect leak fails the script. Child
# processes the tests spawn (the CLI tests) are not traced.
#
# Excluded, with the reason (see docs/reliability.md):
#   *vulkan*      (by name or label) GPU tests: the Vulkan loader and drivers are not ours, and
#                 there is no GPU on the CI machines.
#   label mpi     the tenferro.dist tests: Open MPI and its transports are not ours (and
#                 keep memory until exit); the AddressSanitizer run checks those tests
#                 with Open MPI's frames suppressed (tests/extensions/mpi_lsan.supp).
#   *_defer_always  the runtime suites again under TENFERRO_DEFER=always: the same programs
#                 already run here, and test_defer covers the deferred paths under valgrind.
#   test_ad_diff  the differential AD checker runs hundreds of generated programs through
#                 every path (minutes under ASan, hours under memcheck); the ASan+UBSan
#                 build runs it whole, and the paths it drives are the suites' own.
#   test_cpu_jit  the compiled FUSED programs held bit for bit to the interpreter:
#                 valgrind's emulation of AVX compares is not exact (it takes
#                 vcmpneq_oqps for the unordered form, so a vectorised sign(NaN) gives
#                 -1 under valgrind and NaN on the processor; docs/reliability.md has
#                 the five-line program), so under memcheck the test would check
#                 valgrind. The AddressSanitizer+UBSan build runs it whole.
#   scripts       tests whose command is not a program built in BUILD_DIR
#                 (test_install runs `sh test_install.sh`): valgrind would
#                 check the shell, not the library.
# Extra names to skip can be given in TF_VALGRIND_EXCLUDE (an extended regex).
set -euo pipefail

if [ $# -ne 1 ] || [ ! -f "$1/CTestTestfile.cmake" ]; then
    echo "usage: $0 BUILD_DIR   (a configured and built tree)" >&2
    exit 2
fi
build="$(cd "$1" && pwd -P)"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
exclude='vulkan|_defer_always$|^test_ad_diff$|^test_cpu_jit$'
if [ -n "${TF_VALGRIND_EXCLUDE:-}" ]; then
    exclude="$exclude|$TF_VALGRIND_EXCLUDE"
fi
command -v valgrind >/dev/null || { echo "valgrind.sh: valgrind is not installed" >&2; exit 2; }

logs="$build/valgrind-logs"
rm -rf "$logs"
mkdir -p "$logs"

# One line per test: name <TAB> working directory <TAB> command (NUL-free, tab-separated).
list="$logs/tests.tsv"
ctest --test-dir "$build" --show-only=json-v1 | python3 -c '
import json, os, re, sys
exclude, build = re.compile(sys.argv[1]), sys.argv[2]
for t in json.load(sys.stdin)["tests"]:
    name, cmd = t["name"], t.get("command")
    if not cmd or exclude.search(name):
        continue
    # Only test programs built in the tree: a test run by an interpreter
    # (sh, python3) would have valgrind check the interpreter instead.
    if not os.path.realpath(cmd[0]).startswith(build + "/"):
        continue
    props = {p["name"]: p["value"] for p in t.get("properties", [])}
    if "vulkan" in props.get("LABELS", []) or "mpi" in props.get("LABELS", []):
        continue
    wd = props.get("WORKING_DIRECTORY", ".")
    print("\t".join([name, wd] + cmd))
' "$exclude" "$build" >"$list"

run_one() {
    local line="$1" name wd
    IFS=$'\t' read -r -a parts <<<"$line"
    name="${parts[0]}"
    wd="${parts[1]}"
    local start=$SECONDS
    if (cd "$wd" && valgrind --quiet --leak-check=full --error-exitcode=1 \
        --errors-for-leak-kinds=definite,indirect --show-leak-kinds=definite,indirect \
        --suppressions="$VG_SUPP" --num-callers=30 \
        "${parts[@]:2}") >"$VG_LOGS/$name.log" 2>&1; then
        echo "valgrind: ok   $name ($((SECONDS - start)) s)"
    else
        echo "valgrind: FAIL $name ($((SECONDS - start)) s), log: $VG_LOGS/$name.log"
        return 1
    fi
}
export -f run_one
export VG_SUPP="$here/valgrind.supp" VG_LOGS="$logs"

start=$SECONDS
status=0
tr '\n' '\0' <"$list" | xargs -0 -n 1 -P "${TF_VALGRIND_JOBS:-2}" bash -c 'run_one "$1"' _ ||
    status=1
echo "valgrind: $(wc -l <"$list") programs in $((SECONDS - start)) s (excluded: $exclude)"
if [ $status -ne 0 ]; then
    echo "valgrind: failures; the logs are in $logs" >&2
    for f in "$logs"/*.log; do
        if grep -q "ERROR SUMMARY: [1-9]\|definitely lost\|indirectly lost\|Invalid" "$f"; then
            echo "==== $f" >&2
            tail -60 "$f" >&2
        fi
    done
fi
exit $status
