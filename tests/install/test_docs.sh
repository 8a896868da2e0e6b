#!/bin/sh
# test_docs.sh BUILD_DIR DATAROOTDIR INCLUDEDIR
#
# The documentation of an installed tree (issue 20, items 5 and 9): installs
# BUILD_DIR into a temporary prefix, then checks that
#   - <datarootdir>/doc/tenferro holds the guides (docs/), the project README,
#     the SDK's README and both templates;
#   - every relative link of every installed Markdown file resolves to a file
#     or folder inside the prefix (the headers' links point at the installed
#     headers; links to the source tree were turned into text);
#   - the installed headers name no source-tree path, and each guide they
#     name (docs/<page>.md) is installed;
#   - `tenferro check-engine --help` and the installed SDK (sdk/: its README
#     and the templates) name no source-tree path.
set -eu
build=$1 datarootdir=$2 includedir=$3
work=$(mktemp -d /tmp/tf-docs-XXXXXX)
trap 'rm -rf "$work"' EXIT
fail() { echo "test_docs: $*" >&2; exit 1; }

cmake --install "$build" --prefix "$work/p" >/dev/null
p=$(cd "$work/p" && pwd -P)
doc=$p/$datarootdir/doc/tenferro
for f in README.md docs/README.md docs/plugin-authors.md docs/engine-abi.md docs/extensions.md \
         docs/cli.md sdk/README.md sdk/templates/engine/example_engine.c \
         sdk/templates/engine/CMakeLists.txt sdk/templates/engine/README.md \
         sdk/templates/extension/README.md; do
    [ -f "$doc/$f" ] || fail "missing $doc/$f"
done

# Every relative link of every installed Markdown file.
bad=0
links=0
for md in $(find "$p" -name '*.md'); do
    dir=$(dirname "$md")
    for target in $(grep -o '](\([^) ]*\))' "$md" | sed 's/^](//; s/)$//' | sort -u); do
        case $target in
        [a-zA-Z]*:*|\#*|'') continue ;; # a URL or an anchor of the page
        esac
        path=${target%%#*}
        links=$((links + 1))
        resolved=$(realpath -m "$dir/$path")
        case $resolved in
        "$p"|"$p"/*) ;;
        *) echo "test_docs: ${md#$p/}: link $target leaves the installed tree" >&2; bad=1; continue ;;
        esac
        [ -e "$resolved" ] || { echo "test_docs: ${md#$p/}: link $target resolves to nothing" >&2; bad=1; }
    done
done
[ "$bad" = 0 ] || fail "broken links in the installed documentation"
[ "$links" -gt 50 ] || fail "only $links relative links found: the check itself is broken"

# Source-tree paths: what an installed tree does not have.
src_paths='core/src|core/include|tests/|tools/|plugins/(cpu|vulkan|extensions)|cmake/Tenferro|bench/|tenferro-c/'
if grep -nE "$src_paths" "$p/$includedir"/tenferro/*.h; then
    fail "installed headers name source-tree paths (above)"
fi
for page in $(grep -ohE 'docs/[a-z0-9-]+\.md' "$p/$includedir"/tenferro/*.h | sort -u); do
    [ -f "$doc/$page" ] || fail "a header names $page, which is not installed in $doc"
done
help=$("$p/bin/tenferro" check-engine --help)
if echo "$help" | grep -nE "docs/|$src_paths"; then
    fail "check-engine --help names source-tree paths (above)"
fi
if grep -rnE "$src_paths" "$doc/sdk"; then
    fail "the installed SDK (its README, the templates) names source-tree paths (above)"
fi
echo "test_docs: $links relative links resolve in the installed documentation"
