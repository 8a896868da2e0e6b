#!/usr/bin/env bash
# bench/gpu/prepare.sh - run HERE (a Debian x86-64 machine with the build tools and network),
# before a session on the GPU machine: fills the ignored folder bench/gpu/carry/ with what
# bench/gpu/run.sh needs there, where nothing can be built or fetched:
#
#   carry/tenferro/bin/tenferro            the command (check-engine, info and bench in it)
#   carry/tenferro/lib/libtenferro.so.0    the core library
#   carry/tenferro/plugins/*.so            the engine plugins (cpu is check-engine's reference)
#   carry/debs/*.deb                       Debian packages of the shared libraries those need
#                                          and the NVIDIA Vulkan driver needs (list below)
#   carry/MANIFEST.txt                     what was carried: commit, build, package versions
#
# Usage (from anywhere inside a clone):
#   bash bench/gpu/prepare.sh [--build DIR] [--no-debs]
#     --build DIR   build folder (default: build); configured RelWithDebInfo and built when
#                   needed (only the command and the two engine plugins)
#     --no-debs     keep the .deb files already in carry/debs (no apt-get)
#
# Then, on the GPU machine (the `run` tool of the device machine), carry bench/gpu/carry and
# run `bash bench/gpu/run.sh`: see bench/gpu/README.md.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/../.."
BUILD=build
DEBS=1
while [ $# -gt 0 ]; do
    case "$1" in
    --build) BUILD="$2"; shift 2 ;;
    --no-debs) DEBS=0; shift ;;
    -h | --help) sed -n '2,21p' "$0"; exit 0 ;;
    *) echo "bench/gpu/prepare.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
    esac
done

# The runtime libraries of the carried binaries that a CUDA image may lack, and those the
# NVIDIA Vulkan driver (its ICD library) loads: the Vulkan loader and the X11/GLVND client
# libraries. run.sh uses a carried library only where the machine has none of that name.
PACKAGES=(
    libvulkan1                                      # the Vulkan loader (vulkan plugin)
    libinih1 libffi8                                # libtenferro
    libopenblas0-pthread libgfortran5 libquadmath0  # the cpu plugin (check-engine's reference)
    libx11-6 libxext6 libxcb1 libxau6 libxdmcp6 libbsd0 libmd0 libglvnd0 libegl1  # NVIDIA ICD
)

if [ "$(uname -m)" != x86_64 ]; then
    echo "bench/gpu/prepare.sh: this machine is $(uname -m); the GPU machine is x86-64:" \
        "build and fetch on an x86-64 machine" >&2
    exit 1
fi

if [ ! -f "$BUILD/CMakeCache.txt" ]; then
    cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo >&2
fi
cmake --build "$BUILD" -j "$(nproc)" \
    --target tenferro_cli tenferro-engine-cpu tenferro-engine-vulkan >&2
if [ ! -f "$BUILD/plugins/tenferro-engine-vulkan.so" ]; then
    echo "bench/gpu/prepare.sh: $BUILD has no Vulkan plugin (CMake found no Vulkan or glslc;" \
        "bash scripts/setup.sh installs them)" >&2
    exit 1
fi

CARRY=bench/gpu/carry
rm -rf "$CARRY/tenferro"
mkdir -p "$CARRY/tenferro/bin" "$CARRY/tenferro/lib" "$CARRY/tenferro/plugins" "$CARRY/debs"
cp "$BUILD/tools/tenferro" "$CARRY/tenferro/bin/"
# the soname only: the binary asks for libtenferro.so.0, found through LD_LIBRARY_PATH there
cp -L "$BUILD/lib/libtenferro.so.0" "$CARRY/tenferro/lib/"
cp "$BUILD/plugins/tenferro-engine-cpu.so" "$BUILD/plugins/tenferro-engine-vulkan.so" \
    "$CARRY/tenferro/plugins/"

if [ "$DEBS" = 1 ]; then
    rm -f "$CARRY"/debs/*.deb
    (cd "$CARRY/debs" && apt-get download "${PACKAGES[@]}" >&2)
fi
for p in "${PACKAGES[@]}"; do
    if ! ls "$CARRY/debs/${p}_"*.deb >/dev/null 2>&1; then
        echo "bench/gpu/prepare.sh: $CARRY/debs lacks $p" >&2
        exit 1
    fi
done

{
    echo "prepared: $(date -u '+%Y-%m-%d %H:%M UTC') on $(. /etc/os-release && echo "$PRETTY_NAME")," \
        "glibc $(ldd --version | sed -n '1s/.* //p')"
    echo "tree: commit $(git rev-parse --short HEAD 2>/dev/null || echo '?')" \
        "$(git diff --quiet HEAD -- 2>/dev/null || echo '(plus uncommitted changes)')"
    echo "build: $BUILD, $(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$BUILD/CMakeCache.txt")"
    echo "packages:"
    for d in "$CARRY"/debs/*.deb; do
        echo "  $(dpkg-deb -f "$d" Package) $(dpkg-deb -f "$d" Version)"
    done
    echo "sha256:"
    (cd "$CARRY" && find tenferro debs -type f | sort | xargs sha256sum | sed 's/^/  /')
} >"$CARRY/MANIFEST.txt"

# What travels: the working tree (tracked and untracked, not ignored) and the carried folder,
# 64 MiB together.
tree_kib=$(git ls-files -z --cached --others --exclude-standard | du -ck --files0-from=- 2>/dev/null |
    tail -1 | cut -f1)
carry_kib=$(du -sk "$CARRY" | cut -f1)
echo "bench/gpu/prepare.sh: $CARRY holds $((carry_kib / 1024)) MiB; the working tree" \
    "$((tree_kib / 1024)) MiB; together $(((carry_kib + tree_kib) / 1024)) MiB of the 64 MiB" \
    "that may travel" >&2
if [ $((carry_kib + tree_kib)) -gt $((60 * 1024)) ]; then
    echo "bench/gpu/prepare.sh: too close to 64 MiB: the call would be refused" >&2
    exit 1
fi
echo "bench/gpu/prepare.sh: ready; see bench/gpu/README.md for the run" >&2
