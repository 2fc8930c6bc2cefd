#!/usr/bin/env bash
# Packs the static binaries `make dist` built into release archives, one per target, with a
# CycloneDX SBOM beside each and SHA256SUMS over them all:
#
#   $DIST/cks-iso-<version>-<target>.tar.gz   cks-iso-<version>-<target>/{cks-iso, README.md,
#                                             LICENSE, THIRD-PARTY-NOTICES, CHANGELOG.md, STYLE.md,
#                                             docs/**, man/man1/*.1,
#                                             completions/{cks-iso.bash,_cks-iso,cks-iso.fish}}
#   $DIST/cks-iso-<version>-<target>.cdx.json the crates compiled into that target's binary
#   $DIST/SHA256SUMS                          `sha256sum -c` reads it
#
# Reproducible: every member is dated SOURCE_DATE_EPOCH, owned 0:0 with no names, mode 0755 or
# 0644 whatever the umask or checkout left, in byte order, and gzip stores no name or date; the
# SBOM's timestamp is SOURCE_DATE_EPOCH, it has no random serial number and no absolute path.
# README.md and docs/ go in whole, with the files their links name ($DOC_FILES), so every link of
# the shipped README resolves in the unpacked archive (scripts/check-doc-links.py). Run by
# `make dist` (the Makefile builds the binaries and the man pages first); usage:
#   TARGET_DIR=target DIST=target/dist SOURCE_DATE_EPOCH=N scripts/dist.sh TARGET...
set -euo pipefail
cd "$(dirname "$0")/.."
: "${TARGET_DIR:?}" "${DIST:?}" "${SOURCE_DATE_EPOCH:?}"
[ $# -gt 0 ] || { echo "scripts/dist.sh: no target given" >&2; exit 2; }
umask 022
# The files beside the binary; README.md and docs/ link each of them.
DOC_FILES="README.md LICENSE THIRD-PARTY-NOTICES CHANGELOG.md STYLE.md"
version=$(sed -n '/^\[workspace.package\]/,/^\[/s/^version = "\(.*\)"$/\1/p' Cargo.toml)
[ -n "$version" ] || { echo "scripts/dist.sh: no [workspace.package] version in Cargo.toml" >&2; exit 1; }
assets=$DIST/assets
[ -s "$assets/man/cks-iso.1.gz" ] || {
    echo "scripts/dist.sh: $assets/man/cks-iso.1.gz: expected the man pages, found none" >&2
    echo "hint: run \`make dist\`, which generates them first" >&2
    exit 1
}
rm -rf "$DIST/stage" "$DIST"/cks-iso-*.tar.gz "$DIST"/cks-iso-*.cdx.json "$DIST/SHA256SUMS"

for target in "$@"; do
    bin=$TARGET_DIR/$target/release/cks-iso
    [ -x "$bin" ] || {
        echo "scripts/dist.sh: $bin: expected the $target binary, found none" >&2
        echo "hint: \`make dist\` builds it (cargo build --release --target $target)" >&2
        exit 1
    }
    name=cks-iso-$version-$target
    stage=$DIST/stage/$name
    mkdir -p "$stage/man/man1" "$stage/completions"
    install -m 0755 "$bin" "$stage/cks-iso"
    install -m 0644 $DOC_FILES "$stage/"
    for doc in $(git ls-files docs); do install -D -m 0644 "$doc" "$stage/$doc"; done
    for page in "$assets"/man/*.1.gz; do
        base=${page##*/}
        gzip -dc "$page" > "$stage/man/man1/${base%.gz}"
        chmod 0644 "$stage/man/man1/${base%.gz}"
    done
    install -m 0644 "$assets/completions/cks-iso" "$stage/completions/cks-iso.bash"
    install -m 0644 "$assets/completions/_cks-iso" "$assets/completions/cks-iso.fish" "$stage/completions/"
    tar --create --format=gnu --sort=name --owner=0 --group=0 --numeric-owner \
        --mtime="@$SOURCE_DATE_EPOCH" --mode='u=rwX,go=rX' -C "$DIST/stage" "$name" |
        gzip -9n > "$DIST/$name.tar.gz"

    # The SBOM of what is compiled into this target's binary: cargo-cyclonedx reads Cargo.lock and
    # cargo's resolution for the target (no dev-dependencies, no test world); dist-sbom.py keeps
    # the crates `cargo tree` says the binary has (see there why).
    sbom=$DIST/$name.cdx.json
    rm -f cks-iso.cdx.json
    # It writes one beside every workspace member's Cargo.toml; only the root package's is kept.
    ${CARGO:-cargo} cyclonedx --quiet --all --format json --spec-version 1.5 --target "$target" \
        --no-build-deps --override-filename cks-iso-dist.cdx
    mv cks-iso-dist.cdx.json "$sbom.raw"
    find crates testworld -name 'cks-iso-dist.cdx.json' -delete
    ${CARGO:-cargo} tree --locked -q -p cks-iso -e normal --target "$target" --prefix none -f '{p}' |
        sed 's/ (.*//; s/ v/ /' | grep -v '^cks-iso [0-9]' | sort -u > "$sbom.crates"
    python3 scripts/dist-sbom.py "$sbom.raw" "$PWD" "$sbom.crates" > "$sbom"
    rm -f "$sbom.raw" "$sbom.crates"
done
rm -rf "$DIST/stage"
(cd "$DIST" && sha256sum cks-iso-*.tar.gz cks-iso-*.cdx.json > SHA256SUMS)
ls -l "$DIST"/cks-iso-* "$DIST/SHA256SUMS"
