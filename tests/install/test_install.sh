#!/bin/sh
# test_install.sh BUILD_DIR APP_SOURCE LIBDIR CC TEMPLATES
#
# Installs BUILD_DIR into a temporary prefix, moves the prefix, and checks
# that the moved tree works on its own: the SONAME, the layout, `tenferro
# info --json` finding the bundled plugins next to the moved library and
# selecting the configured engine, a config file naming the engine, and an
# application built against the moved prefix with find_package(tenferro)
# and, separately, with pkg-config. Then the SDK templates (TEMPLATES, i.e.
# sdk/templates): the engine and the extension module are built out of tree
# with only the moved prefix, once through the CMake package and once through
# pkg-config; each pair is put in a plugin folder that a configuration file
# names, with the template engine as the default engine, and the template's
# check program runs the module's fused op and its derivatives on it.
set -eu
build=$1 app_src=$2 libdir=$3 cc=$4 templates=$5
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
              "$libdir/cmake/tenferro/TenferroPluginHelpers.cmake" \
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

# The conformance kit of the moved tree passes the bundled CPU engine.
out=$(run "$p/bin/tenferro" check-engine --quick cpu) || fail "check-engine cpu failed: $out"
echo "$out" | grep -q "^PASS: engine 'cpu': [1-9][0-9]* passed, 0 failed" ||
    fail "check-engine cpu printed: $out"

# ---- the SDK templates ----------------------------------------------------
# A plugin must export exactly its entry symbol and must not need libtenferro.
check_plugin() { # FILE ENTRY
    syms=$(nm -D --defined-only "$1" | awk '{print $3}')
    [ "$syms" = "$2" ] || fail "$1 exports '$syms', expected only $2"
    objdump -p "$1" | grep NEEDED | grep -q libtenferro && fail "$1 links libtenferro"
    return 0
}
# A plugin folder the loader accepts: absolute, not writable by group/others.
plugin_dir() { # DIR ENGINE.so EXT.so
    mkdir "$1"
    cp "$2" "$3" "$1/"
    chmod 755 "$1"
    chmod 644 "$1"/*.so
}
# A configuration naming that folder and the template engine as the default.
config_for() { # DIR -> prints the config file's path
    printf '[engine]\ndefault = example\nfallback = cpu\n[plugins]\npath = %s\n' "$1" \
        > "$1.ini"
    echo "$1.ini"
}
# `tenferro info` through CONFIG loads both templates from DIR and selects the
# template engine; then CHECK (the extension template's check program) runs
# the fused op and its derivatives on the configured engine.
check_templates() { # DIR CONFIG CHECK LABEL
    out=$(run TENFERRO_CONFIG="$2" "$p/bin/tenferro" info --json)
    for f in "tenferro-engine-example.so\", \"kind\": \"engine\", \"status\": \"loaded\"" \
             "tenferro-ext-example.so\", \"kind\": \"extension\", \"status\": \"loaded\""; do
        echo "$out" | grep -q "\"path\": \"$1/$f" || fail "$4: $f not in: $out"
    done
    echo "$out" | grep -q '"engines": \["example", "cpu"\], "selected_engine": "example"' ||
        fail "$4: the template engine is not selected: $out"
    out=$(run TENFERRO_CONFIG="$2" LD_LIBRARY_PATH="$p/$libdir" "$3" 2>&1) ||
        fail "$4: check_fused failed: $out"
    [ "$out" = "check_fused: ok on engine example" ] || fail "$4: check_fused printed '$out'"
    # The conformance kit, found through the same configuration, passes it.
    out=$(run TENFERRO_CONFIG="$2" "$p/bin/tenferro" check-engine example) ||
        fail "$4: check-engine example failed: $out"
    echo "$out" | grep -q "^PASS: engine 'example': [1-9][0-9]* passed, 0 failed" ||
        fail "$4: check-engine example printed: $out"
}

# Through the CMake package (tenferro_add_engine_plugin & co.).
for t in engine extension; do
    cmake -S "$templates/$t" -B "$work/$t-build" -DCMAKE_PREFIX_PATH="$p" \
        -DCMAKE_C_COMPILER="$cc" >/dev/null || fail "the $t template did not configure"
    cmake --build "$work/$t-build" >/dev/null || fail "the $t template did not build"
done
eng=$work/engine-build/plugins/tenferro-engine-example.so
ext=$work/extension-build/plugins/tenferro-ext-example.so
check_plugin "$eng" tf_engine_plugin_v1
check_plugin "$ext" tf_extension_module_v1
# The extension template's own test (check_fused on the cpu engine).
run ctest --test-dir "$work/extension-build" --output-on-failure >/dev/null ||
    fail "the extension template's ctest failed"
# Its install rule puts the module into <prefix>/<libdir>/tenferro/plugins.
cmake --install "$work/extension-build" --prefix "$work/ext-prefix" >/dev/null
[ -f "$work/ext-prefix/$libdir/tenferro/plugins/tenferro-ext-example.so" ] ||
    fail "the extension template did not install into <libdir>/tenferro/plugins"
plugin_dir "$work/plugins-cmake" "$eng" "$ext"
check_templates "$work/plugins-cmake" "$(config_for "$work/plugins-cmake")" \
    "$work/extension-build/check_fused" "CMake-built templates"

# The helper refuses a malformed call at configure time, naming the problem.
bad_call() { # N CALL EXPECTED-MESSAGE
    mkdir "$work/bad-$1"
    printf 'cmake_minimum_required(VERSION 3.25)\nproject(bad LANGUAGES C)\n%s\n%s\n' \
        'find_package(tenferro 0.1 REQUIRED)' "$2" > "$work/bad-$1/CMakeLists.txt"
    : > "$work/bad-$1/x.c"
    if out=$(cmake -S "$work/bad-$1" -B "$work/bad-$1/build" -DCMAKE_PREFIX_PATH="$p" \
             -DCMAKE_C_COMPILER="$cc" 2>&1); then
        fail "the helper accepted: $2"
    fi
    echo "$out" | grep -q "$3" || fail "no '$3' for '$2': $out"
}
bad_call 1 'tenferro_add_engine_plugin(NAME "a b" SOURCES x.c)' "NAME must be one or more of"
bad_call 2 'tenferro_add_extension_module(NAME m)' "tenferro-ext-m has no SOURCES"
bad_call 3 'tenferro_add_engine_plugin(SHARED NAME m SOURCES x.c)' "unknown arguments: SHARED"

# Through pkg-config alone, as each template's README shows.
mkdir "$work/pc"
flags="-std=c11 -O2 -fPIC -fvisibility=hidden -shared -Wl,--no-undefined"
# shellcheck disable=SC2086 # word splitting of the flags is intended
"$cc" $flags -o "$work/pc/tenferro-engine-example.so" "$templates/engine/example_engine.c" \
    $(pkg-config --cflags tenferro-plugin) -lm || fail "the engine template did not build with pkg-config"
# shellcheck disable=SC2086
"$cc" $flags -o "$work/pc/tenferro-ext-example.so" "$templates/extension/fused_module.c" \
    $(pkg-config --cflags tenferro-plugin) -lm || fail "the extension template did not build with pkg-config"
"$cc" -std=c11 -o "$work/pc/check_fused" "$templates/extension/check_fused.c" \
    $(pkg-config --cflags --libs tenferro) -lm || fail "check_fused did not build with pkg-config"
check_plugin "$work/pc/tenferro-engine-example.so" tf_engine_plugin_v1
check_plugin "$work/pc/tenferro-ext-example.so" tf_extension_module_v1
plugin_dir "$work/plugins-pc" "$work/pc/tenferro-engine-example.so" "$work/pc/tenferro-ext-example.so"
check_templates "$work/plugins-pc" "$(config_for "$work/plugins-pc")" "$work/pc/check_fused" \
    "pkg-config-built templates"
echo "test_install: ok ($p)"
