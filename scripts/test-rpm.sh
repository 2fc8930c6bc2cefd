#!/usr/bin/env bash
# Judges `make rpm`'s packages with rpm itself and rpmlint: the metadata an EL packager expects
# (rpm -qpi), the files where EL's shells and man look (rpm -qpl), no library requirement (a
# static binary serves EL8's glibc 2.28 and EL9 alike), rpmlint with only the warnings
# rpm/rpmlintrc (and rpm/rpmlintrc.<arch>) explains, and `rpm --install --root` into an empty
# directory, where the binary runs (chrooted: nothing but the package is there).
# Usage: DIST=… scripts/test-rpm.sh TARGET…
set -euo pipefail
cd "$(dirname "$0")/.."
: "${DIST:?}"
version=$(sed -n '/^\[workspace.package\]/,/^\[/s/^version = "\(.*\)"$/\1/p' Cargo.toml)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "make test-dist (rpm): $*" >&2; exit 1; }
ok() { echo "ok: $*"; }

for target in "$@"; do
    arch=${target%%-*}
    rpm=$DIST/cks-iso-$version-1.$arch.rpm
    [ -s "$rpm" ] || fail "$rpm: expected the $arch package, found none"
    info=$(rpm -qpi "$rpm")
    for field in "Name        : cks-iso" "Version     : $version" "Release     : 1" \
        "Architecture: $arch" "License     : Apache-2.0" "Build Host  : reproducible" \
        "Summary     : Builds the Apache CloudStack Kubernetes Service (CKS) binaries ISO"; do
        grep -qF "$field" <<< "$info" || fail "$rpm: rpm -qpi: expected \"$field\", found:
$info"
    done
    ok "$rpm: rpm -qpi names cks-iso $version-1 $arch, Apache-2.0"
    files=$(rpm -qpl "$rpm")
    for file in /usr/bin/cks-iso /usr/share/man/man1/cks-iso.1.gz /usr/share/man/man1/cks-iso-build.1.gz \
        /usr/share/bash-completion/completions/cks-iso /usr/share/zsh/site-functions/_cks-iso \
        /usr/share/fish/vendor_completions.d/cks-iso.fish /usr/share/licenses/cks-iso/LICENSE \
        /usr/share/licenses/cks-iso/THIRD-PARTY-NOTICES /usr/share/doc/cks-iso/README.md \
        /usr/share/doc/cks-iso/docs/guide/install.md /usr/share/doc/cks-iso/docs/guide/building.md; do
        grep -qx "$file" <<< "$files" || fail "$rpm: rpm -qpl: expected $file, found:
$files"
    done
    ok "$rpm: rpm -qpl has the binary, $(grep -c '\.1\.gz$' <<< "$files") man pages, 3 completions, licences"
    requires=$(rpm -qpR "$rpm" | grep -v '^rpmlib(' || true)
    [ -z "$requires" ] || fail "$rpm: expected no requirement but rpmlib's (a static binary), found: $requires"
    bundled=$(rpm -qp --provides "$rpm" | grep -c '^bundled(crate(' || true)
    [ "$bundled" -gt 100 ] || fail "$rpm: expected a bundled(crate(…)) provide per crate, found $bundled"
    ok "$rpm: requires nothing; provides $bundled bundled(crate(…))"
    # rpm/rpmlintrc, plus rpm/rpmlintrc.$arch's filters for what only that architecture has.
    cat rpm/rpmlintrc $(ls rpm/rpmlintrc."$arch" 2>/dev/null) > "$work/rpmlintrc.$arch"
    lint=$(rpmlint -r "$work/rpmlintrc.$arch" "$rpm" 2>&1) || fail "$rpm: rpmlint failed:
$lint"
    ok "$rpm: rpmlint: $(tail -1 <<< "$lint")"
done

# Installed into an empty root, the x86_64 package's binary runs there and only there.
rpm=$DIST/cks-iso-$version-1.x86_64.rpm
root=$work/root
mkdir -p "$root"
rpm --root "$root" --initdb
rpm --root "$root" --install --nodeps --ignorearch "$rpm" || fail "rpm --install --root $root $rpm failed"
installed=$(rpm --root "$root" -q cks-iso)
[ "$installed" = "cks-iso-$version-1.x86_64" ] || fail "rpm --root $root -q cks-iso: expected cks-iso-$version-1.x86_64, found $installed"
[ ! -e "$root/lib64" ] && [ ! -e "$root/usr/lib64" ] || fail "$root: expected no library directory, found one"
out=$(chroot "$root" /usr/bin/cks-iso --version) || fail "chroot $root /usr/bin/cks-iso --version failed"
[[ $out == "cks-iso $version"* ]] || fail "chroot $root /usr/bin/cks-iso --version: expected cks-iso $version…, found $out"
mkdir -p "$root/in" && echo hello > "$root/in/a.txt"
chroot "$root" /usr/bin/cks-iso iso /in -o /out.iso --source-date-epoch 0 >/dev/null 2>&1 ||
    fail "chroot $root cks-iso iso /in: expected an ISO, it failed"
[ "$(isoinfo -R -i "$root/out.iso" -x /a.txt)" = hello ] || fail "$root/out.iso: expected a.txt to read hello"
ok "rpm --install --root into an empty root: $installed; its binary runs there alone: $out, and writes an ISO"
# The README's links (into docs/, to the licences under /usr/share/licenses) resolve as installed.
links=$(.venv-sbom/bin/python scripts/check-doc-links.py "$root/usr/share/doc/cks-iso" --docs-from .) ||
    fail "$rpm: expected every link of the installed README.md and docs/ to resolve (the lines above say which do not)"
ok "$rpm: installed docs: $links"
