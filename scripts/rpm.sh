#!/usr/bin/env bash
# Builds the RPMs (x86_64, aarch64) from `make dist`'s archives: rpm/cks-iso.spec.in with the
# version, the archive and one `Provides: bundled(crate(NAME)) = VERSION` per crate of that
# target's SBOM (what an EL packager expects of a binary with vendored libraries), then
# `rpmbuild -bb --target ARCH`. Reproducible (dates from SOURCE_DATE_EPOCH, a fixed build host).
# Run by `make rpm`; usage: DIST=target/dist SOURCE_DATE_EPOCH=N scripts/rpm.sh TARGET...
set -euo pipefail
cd "$(dirname "$0")/.."
: "${DIST:?}" "${SOURCE_DATE_EPOCH:?}"
version=$(sed -n '/^\[workspace.package\]/,/^\[/s/^version = "\(.*\)"$/\1/p' Cargo.toml)
top=$(realpath -m "$DIST/rpmbuild")
rm -rf "$top" "$DIST"/cks-iso-*.rpm
mkdir -p "$top/SOURCES" "$top/SPECS"
date=$(LC_ALL=C date -u -d "@$SOURCE_DATE_EPOCH" '+%a %b %d %Y')
for target in "$@"; do
    arch=${target%%-*}
    archive=cks-iso-$version-$target.tar.gz
    [ -s "$DIST/$archive" ] || {
        echo "scripts/rpm.sh: $DIST/$archive: expected the $target archive, found none" >&2
        echo "hint: run \`make dist\` first (\`make rpm\` does)" >&2
        exit 1
    }
    cp "$DIST/$archive" "$top/SOURCES/"
    bundled=$(python3 -c '
import json, sys
for c in sorted(json.load(open(sys.argv[1]))["components"], key=lambda c: (c["name"], c["version"])):
    if not c["name"].startswith("cks-iso"):
        print("Provides:       bundled(crate(%s)) = %s" % (c["name"], c["version"]))
' "$DIST/cks-iso-$version-$target.cdx.json")
    spec=$top/SPECS/cks-iso-$arch.spec
    python3 - "$spec" "$version" "$archive" "$date" <<PY
import sys
spec, version, archive, date = sys.argv[1:]
text = open("rpm/cks-iso.spec.in").read()
text = text.replace("@BUNDLED@", """$bundled""").replace("@VERSION@", version)
text = text.replace("@ARCHIVE@", archive).replace("@DATE@", date)
open(spec, "w").write(text)
PY
    rpmbuild -bb --quiet --target "$arch-linux" --define "_topdir $top" "$spec"
    mv "$top/RPMS/$arch/cks-iso-$version-1.$arch.rpm" "$DIST/"
done
rm -rf "$top"
ls -l "$DIST"/cks-iso-*.rpm
