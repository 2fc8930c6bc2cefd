#!/usr/bin/env bash
# Rebuild reproducibility: a second checkout of the same commit, at another path and with its own
# target dir, builds the static binaries and packs the archives again; each binary, archive and
# SBOM must be byte-identical to this checkout's. What makes them so: --remap-path-prefix (the
# checkout and ~/.cargo, so panic locations and OUT_DIR paths name neither), SOURCE_DATE_EPOCH
# (the commit's), sorted members and fixed owners in the archives (scripts/dist.sh).
#
# Run by `make test-repro` (which `make test-dist` runs) after `make dist`; usage:
#   TARGET_DIR=target DIST=target/dist SOURCE_DATE_EPOCH=N [REPRO_DIR=DIR] scripts/test-repro.sh TARGET...
# REPRO_DIR: where the second checkout goes; kept when given, so that a later run reuses its
# build of the dependencies (a `git worktree` of this repository, moved to this HEAD). Without it,
# a temporary worktree is made and removed.
set -euo pipefail
cd "$(dirname "$0")/.."
: "${TARGET_DIR:?}" "${DIST:?}" "${SOURCE_DATE_EPOCH:?}"
[ $# -gt 0 ] || { echo "scripts/test-repro.sh: no target given" >&2; exit 2; }
fail() { echo "make test-repro: $*" >&2; exit 1; }
ok() { echo "ok: $*"; }

version=$(sed -n '/^\[workspace.package\]/,/^\[/s/^version = "\(.*\)"$/\1/p' Cargo.toml)
commit=$(git rev-parse HEAD)
dirty=$(git status --porcelain --untracked-files=no)
[ -z "$dirty" ] || fail "this checkout has uncommitted changes, the second checkout would not:
$dirty
hint: commit (or stash) them first; the check compares two builds of one commit"

if [ -n "${REPRO_DIR:-}" ]; then
    other=$(realpath -m "$REPRO_DIR")
    if [ -e "$other/.git" ]; then
        # Only when it moves: a checkout writes HEAD's reflog, which cks-iso's build script
        # watches, and the crate would be compiled again for nothing.
        [ "$(git -C "$other" rev-parse HEAD)" = "$commit" ] || git -C "$other" checkout -q --detach "$commit"
    else
        git worktree add -q --detach "$other" "$commit"
    fi
else
    other=$(mktemp -d "${TMPDIR:-/tmp}/cks-iso-repro.XXXXXX")/checkout
    git worktree add -q --detach "$other" "$commit"
    trap 'git worktree remove --force "$other"; rm -rf "${other%/checkout}"' EXIT
fi
[ "$(realpath "$other")" != "$(realpath .)" ] || fail "REPRO_DIR=$REPRO_DIR: expected another directory than this checkout"
[ "$(git -C "$other" rev-parse HEAD)" = "$commit" ] || fail "$other: expected a checkout of $commit"

# The second build: its own target dir inside it, the same epoch, none of this make's variables.
# The SBOM validators' virtualenv is shared (it is not an input of what dist writes).
echo "make test-repro: building ${*} again in $other"
start=$(date +%s)
env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL -u CARGO_TARGET_DIR CARGO_TARGET_DIR="$other/target" \
    make -C "$other" --no-print-directory dist DIST_TARGETS="$*" SOURCE_DATE_EPOCH="$SOURCE_DATE_EPOCH" \
    SBOM_VENV="$PWD/.venv-sbom" ||
    fail "make dist in $other failed (its output is above)"
echo "make test-repro: the second build took $(( $(date +%s) - start )) s"

for target in "$@"; do
    name=cks-iso-$version-$target
    for pair in "$TARGET_DIR/$target/release/cks-iso|$other/target/$target/release/cks-iso" \
        "$DIST/$name.tar.gz|$other/target/dist/$name.tar.gz" "$DIST/$name.cdx.json|$other/target/dist/$name.cdx.json"; do
        ours=${pair%|*} theirs=${pair#*|}
        [ -s "$theirs" ] || fail "$theirs: expected the second build's file, found none"
        a=$(sha256sum < "$ours" | cut -d' ' -f1) b=$(sha256sum < "$theirs" | cut -d' ' -f1)
        [ "$a" = "$b" ] || fail "$ours and $theirs: expected the same bytes, found sha256 $a and $b \
($(cmp "$ours" "$theirs" | head -1); $(cmp -l "$ours" "$theirs" 2>/dev/null | wc -l) bytes differ)
hint: \`diffoscope $ours $theirs\` (Debian's diffoscope) shows where; an absolute path is the usual cause"
        ok "${ours##*/} ($target): sha256 $a in both checkouts"
    done
done
echo "make test-repro: $# target(s) rebuilt byte-identically in $other"
