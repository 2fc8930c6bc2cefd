#!/usr/bin/env bash
# Judges `make image` with the real tools: skopeo reads the OCI archive and the layout (both
# platforms, the non-root user, the entrypoint, the annotations); a private containerd (its own
# socket, root and state under /tmp, as the tests' support/containerd.rs starts it) imports the
# archive and `ctr run` executes cks-iso in it; the arm64 image's binary runs under qemu-aarch64;
# a second build gives the same digests. Usage: TARGET_DIR=… DIST=… IMAGE_CA_BUNDLE=… scripts/test-image.sh
set -euo pipefail
cd "$(dirname "$0")/.."
: "${TARGET_DIR:?}" "${DIST:?}" "${SOURCE_DATE_EPOCH:?}" "${IMAGE_CA_BUNDLE:?}"
version=$(sed -n '/^\[workspace.package\]/,/^\[/s/^version = "\(.*\)"$/\1/p' Cargo.toml)
archive=$DIST/cks-iso-$version.oci.tar
layout=$DIST/cks-iso-$version.oci
work=$(mktemp -d /tmp/cks-img.XXXXXX)
ctrd=
cleanup() { [ -z "$ctrd" ] || { kill "$ctrd"; wait "$ctrd" || true; }; rm -rf "$work"; }
trap cleanup EXIT
fail() { echo "make test-dist (image): $*" >&2; exit 1; }
ok() { echo "ok: $*"; }

index=$(skopeo inspect --raw "oci-archive:$archive")
platforms=$(python3 -c 'import json,sys; m=json.loads(sys.argv[1])["manifests"]; print(" ".join(sorted(p["platform"]["os"]+"/"+p["platform"]["architecture"]+("/"+p["platform"]["variant"] if "variant" in p["platform"] else "") for p in m)))' "$index")
[ "$platforms" = "linux/amd64 linux/arm64/v8" ] || fail "$archive: expected linux/amd64 and linux/arm64/v8 in its index, found: $platforms"
for arch in amd64 arm64; do
    for ref in "oci-archive:$archive" "oci:$layout"; do
        config=$(skopeo inspect --override-os linux --override-arch $arch --config "$ref")
        python3 - "$ref" "$arch" "$version" "$SOURCE_DATE_EPOCH" "$config" <<'PY' || exit 1
import datetime, json, sys
ref, arch, version, epoch, config = sys.argv[1:]
c = json.loads(config)
created = datetime.datetime.fromtimestamp(int(epoch), datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
want = {
    "architecture": arch, "os": "linux", "created": created,
    "User": "65532:65532", "Entrypoint": ["/usr/local/bin/cks-iso"],
    "version label": version, "licenses label": "Apache-2.0", "created label": created,
}
labels = c["config"].get("Labels", {})
got = {
    "architecture": c["architecture"], "os": c["os"], "created": c["created"],
    "User": c["config"].get("User"), "Entrypoint": c["config"].get("Entrypoint"),
    "version label": labels.get("org.opencontainers.image.version"),
    "licenses label": labels.get("org.opencontainers.image.licenses"),
    "created label": labels.get("org.opencontainers.image.created"),
}
bad = {k: (want[k], got[k]) for k in want if want[k] != got[k]}
if bad:
    sys.exit(f"make test-dist (image): skopeo inspect --config {ref} ({arch}): expected/found {bad}")
PY
    done
done
ok "skopeo reads the archive and the layout: linux/amd64 and linux/arm64/v8, user 65532, entrypoint cks-iso, OCI labels"

# The arm64 image's binary, taken out of its layer, runs under qemu-aarch64.
arm_manifest=$(python3 -c 'import json,sys; print([m["digest"] for m in json.loads(sys.argv[1])["manifests"] if m["platform"]["architecture"]=="arm64"][0])' "$index")
layer=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["layers"][0]["digest"])' "$layout/blobs/sha256/${arm_manifest#sha256:}")
tar -xzf "$layout/blobs/sha256/${layer#sha256:}" -C "$work" usr/local/bin/cks-iso
out=$(qemu-aarch64 "$work/usr/local/bin/cks-iso" --version)
[[ $out == "cks-iso $version"* ]] || fail "the arm64 image's cks-iso under qemu-aarch64: expected cks-iso $version…, found $out"
file -b "$work/usr/local/bin/cks-iso" | grep -q 'ARM aarch64' || fail "the arm64 image's binary: expected an aarch64 executable"
ok "the arm64 image's binary runs under qemu-aarch64: $out"

# A private containerd imports the archive and runs the amd64 image.
mkdir -p "$work/ctrd"
socket=$work/ctrd/c.sock
cat > "$work/ctrd/config.toml" <<TOML
version = 2
root = "$work/ctrd/root"
state = "$work/ctrd/state"
disabled_plugins = ["io.containerd.grpc.v1.cri", "io.containerd.internal.v1.opt",
  "io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.zfs"]
[grpc]
  address = "$socket"
[ttrpc]
  address = "$socket.ttrpc"
[debug]
  address = ""
[metrics]
  address = ""
TOML
containerd --config "$work/ctrd/config.toml" >/dev/null 2>"$work/ctrd/log" &
ctrd=$!
ctr_() { ctr --address "$socket" -n cks-iso-test "$@"; }
for _ in $(seq 150); do ctr_ version >/dev/null 2>&1 && break; sleep 0.2; done
ctr_ version >/dev/null 2>&1 || fail "containerd did not come up in 30 s; its log: $(tail -20 "$work/ctrd/log")"
ctr_ images import --all-platforms "$archive" >/dev/null || fail "ctr images import $archive failed"
name=localhost/cks-iso:$version
listed=$(ctr_ images ls -q)
grep -qx "$name" <<< "$listed" || fail "ctr images ls: expected $name, found: $listed"
imported=$(ctr_ images ls | awk -v n="$name" '$1 == n {print $3}')
[ "$imported" = "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["manifests"][0]["digest"])' "$layout/index.json")" ] ||
    fail "ctr images ls: expected $name at the index digest, found $imported"
snap=$(ctr_ snapshots --snapshotter overlayfs ls >/dev/null 2>&1 && echo overlayfs || echo native)
run=$(ctr_ run --rm --snapshotter "$snap" "$name" cks-iso-version /usr/local/bin/cks-iso --version 2>&1) ||
    fail "ctr run $name cks-iso --version failed: $run"
[[ $run == "cks-iso $version"* ]] || fail "ctr run $name cks-iso --version: expected cks-iso $version…, found $run"
ok "containerd imports $name ($imported) and ctr run executes it ($snap snapshotter): $run"

# Reproducible: a second build writes the same archive.
${CARGO:-cargo} run --locked -q -p cks-iso-image -- --out "$work/again" --ca-bundle "$IMAGE_CA_BUNDLE" \
    --version "$version" --revision "$(git rev-parse HEAD)" \
    --amd64 "$TARGET_DIR/x86_64-unknown-linux-musl/release/cks-iso" \
    --arm64 "$TARGET_DIR/aarch64-unknown-linux-musl/release/cks-iso" > "$work/again.digest"
cmp "$archive" "$work/again/cks-iso-$version.oci.tar" ||
    fail "a second image build: expected the same archive bytes, they differ"
ok "a second build gives the same archive (index $(cat "$work/again.digest"))"
