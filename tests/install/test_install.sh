#!/bin/sh
# test_install.sh BUILD_DIR APP_SOURCE LIBDIR CC
#
# Installs BUILD_DIR into a temporary prefix, moves the prefix, and checks
# that the moved tree works on its own: the SONAME, the layout, `tenferro
# info --json` finding the bundled plugins next to the moved library and
# selecting the configured engine, a config file naming the engine, and an
# application built against the moved prefix with find_package(tenferro)
# and, separately, with pkg-config.
set -eu
build=$1 app_src=$2 libdir=$3 cc=$4
work=$(mktemp -d /tmp/tf-install-XXXXXX)
trap 'rm -rf "$work"' EXIT
fail() { echo "test_install: $*" >&2; exit 1; }

cmake --install "$build" --prefix "$work/first" >/dev/null
mv "$work/first" "$work/moved"
p=$work/moved
for f in include/tenferro/tenferro.h include/tenferro/config.h include/tenferro/engine_abi.h \
         "$libdir/libtenferro.so" "$libdir/tenferro/plugins/tenferro-engine-cpu.so" bin/tenferro \
         "$libdir/cmake/tenferro/tenferroConfig.cmake" \
         "$libdir/cmake/tenferro/tenferroConfigVersion.cmake" \
         "$libdir/pkgconfig/tenferro.pc" "$libdir/pkgconfig/tenferro-plugin.pc"; do
    [ -e "$p/$f" ] || fail "missing $f"
done
objdump -p "$p/$libdir/libtenferro.so" | grep -q 'SONAME *libtenferro\.so\.[0-9]' ||
    fail "libtenferro has no versioned SONAME"
grep -rq "$work/first" "$p" && fail "the installed tree names the original prefix"

# A fresh HOME and no tenferro variables: nothing but the moved tree.
mkdir "$work/home"
run() { env -i PATH="$PATH" HOME="$work/home" "$@"; }
out=$(run "$p/bin/tenferro" info --json)
echo "$out" | grep -q "\"plugin_path\": \[\"$p/$libdir/tenferro/plugins\"\]" ||
    fail "plugin path is not the moved plugin folder: $out"
echo "$out" | grep -q "\"path\": \"$p/$libdir/tenferro/plugins/tenferro-engine-cpu.so\", \"kind\": \"engine\", \"status\": \"loaded\"" ||
    fail "the moved cpu engine did not load: $out"
echo "$out" | grep -q '"selected_engine": "cpu"' || fail "no engine selected: $out"

# A configuration file chooses the engine (a missing one first, to fall back).
printf '[engine]\ndefault = missing\nfallback = cpu\n[engine.cpu]\nthreads = 1\n' > "$work/c.ini"
out=$(run TENFERRO_CONFIG="$work/c.ini" "$p/bin/tenferro" info --json)
echo "$out" | grep -q "\"config\": {\"file\": \"$work/c.ini\"" || fail "config not used: $out"
echo "$out" | grep -q '"engines": \["missing", "cpu"\], "selected_engine": "cpu"' ||
    fail "config engines: $out"

# An app through the CMake package.
cmake -S "$app_src" -B "$work/app-build" -DCMAKE_PREFIX_PATH="$p" -DCMAKE_C_COMPILER="$cc" \
    >/dev/null || fail "find_package(tenferro) failed"
cmake --build "$work/app-build" >/dev/null || fail "the app did not build with the CMake package"
out=$(run TENFERRO_CONFIG="$work/c.ini" LD_LIBRARY_PATH="$p/$libdir" "$work/app-build/app")
[ "$out" = "engine cpu" ] || fail "CMake-built app printed '$out'"

# The same app through pkg-config; the plugin headers alone through tenferro-plugin.
export PKG_CONFIG_PATH="$p/$libdir/pkgconfig"
"$cc" -o "$work/app-pc" "$app_src/app.c" $(pkg-config --cflags --libs tenferro) ||
    fail "the app did not build with pkg-config"
out=$(run LD_LIBRARY_PATH="$p/$libdir" "$work/app-pc")
[ "$out" = "engine cpu" ] || fail "pkg-config-built app printed '$out'"
"$cc" -shared -fPIC -o "$work/abi.so" "$app_src/abi_only.c" $(pkg-config --cflags tenferro-plugin) ||
    fail "tenferro-plugin.pc does not give the ABI headers"
[ "$(pkg-config --variable=plugindir tenferro)" -ef "$p/$libdir/tenferro/plugins" ] ||
    fail "plugindir does not name the moved plugin folder"
echo "test_install: ok ($p)"
