#!/usr/bin/env bash
# The README's install section against what `make dist`, `make rpm` and `make image` wrote: it
# lists every form (from source, Debian package, static binary, RPM, container image) with one
# command each, docs/guide/install.md lists the same rows, every file a command names exists in $DIST
# for both architectures (`$(uname -m)` is x86_64 or aarch64), and the static binary's command,
# run as written (into a scratch directory instead of /usr/local/bin, without sudo), installs a
# binary that runs. Run last by `make test-dist`; usage: DIST=target/dist scripts/test-install-docs.sh
set -euo pipefail
cd "$(dirname "$0")/.."
: "${DIST:?}"
version=$(sed -n '/^\[workspace.package\]/,/^\[/s/^version = "\(.*\)"$/\1/p' Cargo.toml)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "make test-dist (README install): $*" >&2; exit 1; }
ok() { echo "ok: $*"; }

# The rows of the "| form | install |" table of a page's install section, link targets left out
# (the same page is linked from README.md and from docs/ by different relative paths).
rows() { sed -n '/^| form | install |$/,/^$/p' "$1" | grep '^| ' | tail -n +2 | sed 's/](\([^)]*\))/]()/g'; }
readme=$(rows README.md)
[ -n "$readme" ] || fail "README.md: expected the install table (| form | install |), found none"
[ "$readme" = "$(rows docs/guide/install.md)" ] || fail "docs/guide/install.md: expected the README's install rows, they differ:
$(diff <(echo "$readme") <(rows docs/guide/install.md) || true)"
for form in "from source" "Debian package" "static binary" "RPM" "container image"; do
    grep -q "^| $form" <<< "$readme" || fail "README.md: expected an install row for \"$form\", found:
$readme"
done
ok "README.md's install table has a row for each of the 5 forms, as docs/guide/install.md does"

# Every release file a command names, for each architecture.
names=$(sed 's/\$(uname -m)/@ARCH@/g' <<< "$readme" | grep -o 'cks-iso-[0-9][^ `/]*\.\(tar\.gz\|rpm\|oci\.tar\)' | sort -u)
[ "$(wc -l <<< "$names")" -ge 3 ] || fail "README.md: expected the archive, RPM and image file names, found: $names"
for arch in x86_64 aarch64; do
    for name in $names; do
        file=${name//@ARCH@/$arch}
        [[ $file == *"-$version"[-.]* ]] || fail "README.md names $file: expected version $version in it"
        [ -s "$DIST/$file" ] || fail "README.md names $file: expected it in $DIST, found none"
    done
done
ok "every file the install commands name is in $DIST for x86_64 and aarch64: $(tr '\n' ' ' <<< "$names")"

# The static binary's command, as written, on this host.
cmd=$(grep '^| static binary' <<< "$readme" | grep -o '`tar -xzf[^`]*`' | tr -d '`')
[ -n "$cmd" ] || fail "README.md: expected a \`tar -xzf …\` command in the static binary row"
cp "$DIST"/cks-iso-"$version"-"$(uname -m)"-unknown-linux-musl.tar.gz "$work/"
mkdir "$work/bin"
(cd "$work" && eval "$(sed "s|sudo ||; s|/usr/local/bin/|$work/bin/|" <<< "$cmd")") ||
    fail "the README's static binary command ($cmd) failed"
out=$("$work/bin/cks-iso" --version) || fail "$work/bin/cks-iso --version failed after the README's command"
ok "the README's static binary command installs a binary that runs: $out"
