#!/usr/bin/env bash
# Judges what `make dist` wrote, with the real tools: sha256sum, tar, file, readelf, the CycloneDX
# schema validator, cargo's own dependency resolution, and qemu-aarch64 running the arm64 binary.
# Run by `make test-dist`; usage: TARGET_DIR=target DIST=target/dist scripts/test-dist.sh TARGET...
#
# Each check prints `ok: …` or fails naming the item, what was expected and what was found.
set -euo pipefail
cd "$(dirname "$0")/.."
: "${TARGET_DIR:?}" "${DIST:?}" "${SOURCE_DATE_EPOCH:?}"
version=$(sed -n '/^\[workspace.package\]/,/^\[/s/^version = "\(.*\)"$/\1/p' Cargo.toml)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "make test-dist: $*" >&2; exit 1; }
ok() { echo "ok: $*"; }

(cd "$DIST" && sha256sum --quiet -c SHA256SUMS) || fail "SHA256SUMS: expected every file to match, some did not"
listed=$(cut -d' ' -f3 "$DIST/SHA256SUMS" | sort | tr '\n' ' ')
want=$(for t in "$@"; do echo "cks-iso-$version-$t.tar.gz"; echo "cks-iso-$version-$t.cdx.json"; done | sort | tr '\n' ' ')
[ "$listed" = "$want" ] || fail "SHA256SUMS: expected $want, found $listed"
ok "SHA256SUMS covers the $# archives and SBOMs and matches them"

# The x86_64 binary is the reference the others are compared with.
host=x86_64-unknown-linux-musl
for target in "$@"; do
    name=cks-iso-$version-$target
    archive=$DIST/$name.tar.gz
    # Members: the layout scripts/dist.sh documents, owned 0:0, dated SOURCE_DATE_EPOCH.
    members=$(tar -tzf "$archive" | sort)
    pages=$(cd "$DIST/assets/man" && ls *.1.gz | sed "s|^\(.*\)\.gz$|$name/man/man1/\1|")
    docs=$(git ls-files docs | sed "s|^|$name/|"; git ls-files docs | sed -n 's|/[^/]*$|/|p' | sort -u | sed "s|^|$name/|")
    expected=$(printf '%s\n' "$name/" "$name/cks-iso" "$name/README.md" "$name/LICENSE" \
        "$name/THIRD-PARTY-NOTICES" "$name/CHANGELOG.md" "$name/STYLE.md" $docs "$name/man/" "$name/man/man1/" $pages \
        "$name/completions/" "$name/completions/cks-iso.bash" "$name/completions/_cks-iso" \
        "$name/completions/cks-iso.fish" | sort)
    [ "$members" = "$expected" ] || fail "$archive: members differ from the documented layout:
$(diff <(echo "$expected") <(echo "$members") || true)"
    owners=$(tar -tvzf "$archive" --numeric-owner | awk '{print $2}' | sort -u)
    [ "$owners" = "0/0" ] || fail "$archive: expected every member owned 0/0, found $owners"
    dates=$(tar -tvzf "$archive" --full-time | awk '{print $4"T"$5}' | sort -u)
    want_date=$(date -u -d "@$SOURCE_DATE_EPOCH" +%Y-%m-%dT%H:%M:%S)
    [ "$dates" = "$want_date" ] || fail "$archive: expected every member dated $want_date, found $dates"
    ok "$archive: $(echo "$members" | wc -l) members as documented, 0/0, dated $want_date"

    tar -xzf "$archive" -C "$work"
    # The shipped README's links (into docs/, to LICENSE, …) resolve in the unpacked archive.
    links=$(.venv-sbom/bin/python scripts/check-doc-links.py "$work/$name" --docs-from .) ||
        fail "$archive: expected every link of its README.md and docs/ to resolve in it (the lines above say which do not)"
    ok "$archive: $links"
    bin=$work/$name/cks-iso
    kind=$(file -b "$bin")
    case $target in
        x86_64-*) arch="x86-64" ;;
        aarch64-*) arch="ARM aarch64" ;;
    esac
    [[ $kind == *"$arch"* && $kind =~ (static-pie|statically)\ linked && $kind == *stripped* && $kind != *"not stripped"* ]] ||
        fail "$bin: expected a static, stripped $arch executable, file says: $kind"
    ! readelf -lW "$bin" | grep -q 'Requesting program interpreter' ||
        fail "$bin: expected no program interpreter, readelf -l shows one"
    ! grep -aq 'GLIBC_[0-9]' "$bin" || fail "$bin: expected no glibc symbol version, found GLIBC_"
    ok "$bin: $(stat -c %s "$bin") bytes; file: $kind"

    # The SBOM: valid CycloneDX 1.5, naming exactly the crates cargo compiles into this target's
    # binary (normal dependencies, proc macros included; no dev- or build-only crates).
    sbom=$DIST/$name.cdx.json
    .venv-sbom/bin/python scripts/validate-cdx.py --spec 1.5 "$sbom" >/dev/null ||
        fail "$sbom: expected valid CycloneDX 1.5 (scripts/validate-cdx.py says why above)"
    dangling=$(python3 -c '
import json, sys
bom = json.load(open(sys.argv[1]))
refs = {c["bom-ref"] for c in bom["components"]} | {bom["metadata"]["component"]["bom-ref"]}
used = {d["ref"] for d in bom["dependencies"]} | {r for d in bom["dependencies"] for r in d.get("dependsOn", [])}
print(" ".join(sorted(used - refs)))
missing = [c["name"] for c in bom["components"] if not c.get("purl") or not c.get("licenses")]
print(" ".join(missing))' "$sbom")
    [ -z "$(tr -d '\n ' <<< "$dangling")" ] ||
        fail "$sbom: expected every dependency to name a component and every component a purl and licence, found: $dangling"
    in_sbom=$(python3 -c 'import json,sys; print("\n".join(sorted({c["name"]+" "+c["version"] for c in json.load(open(sys.argv[1]))["components"]})))' "$sbom")
    in_cargo=$(${CARGO:-cargo} tree --locked -q -p cks-iso -e normal --target "$target" --prefix none -f '{p}' |
        sed 's/ (.*//; s/ v/ /; s/ (\*)$//' | grep -v '^cks-iso [0-9]' | sort -u)
    [ "$in_sbom" = "$in_cargo" ] || fail "$sbom: components differ from \`cargo tree -e normal --target $target\`:
$(diff <(echo "$in_cargo") <(echo "$in_sbom") || true)"
    ok "$sbom: valid CycloneDX 1.5; its $(echo "$in_sbom" | wc -l) components are cargo tree's for $target"
done

# Each binary runs, on its own architecture: the arm64 one under qemu-aarch64.
x86=$work/cks-iso-$version-$host/cks-iso
arm=$work/cks-iso-$version-aarch64-unknown-linux-musl/cks-iso
[ -x "$arm" ] || fail "$arm: expected the aarch64 binary among the targets ($*)"
v_x86=$("$x86" --version)
v_arm=$(qemu-aarch64 "$arm" --version)
[[ $v_x86 == "cks-iso $version"* ]] || fail "$x86 --version: expected cks-iso $version…, found $v_x86"
[ "$v_arm" = "$v_x86" ] || fail "qemu-aarch64 $arm --version: expected $v_x86, found $v_arm"
ok "--version on both: $v_arm"

# The same tree and epoch give the same ISO on both architectures; each reads it back the same.
tree=$work/tree
mkdir -p "$tree/docker" "$tree/bin"
head -c 3000000 /dev/urandom > "$tree/bin/kubelet"
chmod 0755 "$tree/bin/kubelet"
printf 'kubernetes 1.33.1\n' > "$tree/versions.txt"
ln -s ../versions.txt "$tree/docker/link"
"$x86" iso "$tree" -o "$work/x86.iso" --source-date-epoch "$SOURCE_DATE_EPOCH" >/dev/null 2>&1 ||
    fail "$x86 iso: expected an ISO of $tree, it failed"
qemu-aarch64 "$arm" iso "$tree" -o "$work/arm.iso" --source-date-epoch "$SOURCE_DATE_EPOCH" >/dev/null 2>&1 ||
    fail "qemu-aarch64 $arm iso: expected an ISO of $tree, it failed"
cmp "$work/x86.iso" "$work/arm.iso" ||
    fail "the aarch64 binary's ISO: expected the bytes of the x86_64 binary's, they differ"
isoinfo -R -i "$work/arm.iso" -x /bin/kubelet | cmp - "$tree/bin/kubelet" ||
    fail "isoinfo -x /bin/kubelet of the aarch64 binary's ISO: expected the staged file's bytes"
ok "cks-iso iso: the aarch64 binary's ISO ($(stat -c %s "$work/arm.iso") bytes) is byte-identical to the x86_64 one's, isoinfo reads it"
# verify judges the whole CKS contract, which a bare tree does not meet: both binaries must read
# the ISO and report the same findings with the same exit code (1, for the missing parts).
set +e
"$x86" verify --json "$work/arm.iso" > "$work/x86.json" 2>/dev/null; rc_x86=$?
qemu-aarch64 "$arm" verify --json "$work/arm.iso" > "$work/arm.json" 2>/dev/null; rc_arm=$?
set -e
[ "$rc_x86" = 1 ] || fail "$x86 verify: expected exit 1 (the bare tree misses the contract's files), found $rc_x86"
grep -q 'versions.txt' "$work/x86.json" || fail "$x86 verify --json: expected findings about versions.txt, found: $(head -c 400 "$work/x86.json")"
[ "$rc_arm" = "$rc_x86" ] && cmp -s "$work/x86.json" "$work/arm.json" ||
    fail "qemu-aarch64 $arm verify --json: expected exit $rc_x86 and the x86_64 report, found exit $rc_arm:
$(diff "$work/x86.json" "$work/arm.json" | head -20)"
ok "cks-iso verify: the aarch64 binary reads the ISO and reports what the x86_64 one does"

# TLS roots: the system's when there are any; the bundled Mozilla roots on a host without a CA
# bundle (SSL_CERT_FILE naming an empty file is what rustls-native-certs then reads, alone).
roots() {
    env "$@" CKS_ISO_LOG=debug "$x86" resolve --kubernetes 1.33.1 --arch amd64 --retries 1 \
        --mirror https://dl.k8s.io=https://127.0.0.1:9 --mirror https://github.com=https://127.0.0.1:9 \
        --mirror https://raw.githubusercontent.com=https://127.0.0.1:9 2>&1 | grep -o 'TLS roots: [^"]*' | head -1 || true
}
: > "$work/empty.pem"
none=$(roots SSL_CERT_FILE="$work/empty.pem" SSL_CERT_DIR="$work")
[[ $none == *"bundled Mozilla roots"* ]] || fail "with no system CA certificate: expected the bundled roots, the log says: ${none:-nothing}"
system=$(roots SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt)
[[ $system =~ the\ system\'s\ [0-9]+\ CA ]] || fail "with the system's CA bundle: expected its roots, the log says: ${system:-nothing}"
ok "TLS roots: \"$none\" without a CA bundle, \"$system\" with one"

# Reproducible: packing again, under another umask, gives the same bytes.
mkdir -p "$work/again"
cp -r "$DIST/assets" "$work/again/"
(umask 077 && DIST=$work/again ./scripts/dist.sh "$@" >/dev/null)
cmp "$DIST/SHA256SUMS" "$work/again/SHA256SUMS" ||
    fail "a second packing: expected the same SHA256SUMS, found $(diff "$DIST/SHA256SUMS" "$work/again/SHA256SUMS")"
ok "a second packing is byte-identical (SHA256SUMS equal)"
echo "make test-dist: all checks passed"
