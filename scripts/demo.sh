#!/usr/bin/env bash
# `make demo`: what a new user runs first. Builds cks-iso, starts the local upstream world
# (testworld: git http-backend with autoscaler tags, the github.com / dl.k8s.io /
# raw.githubusercontent.com stand-in, and a docker-registry holding every image for amd64 and
# arm64), builds real CKS ISOs for both arches through the mirror settings, verifies them, prints
# where they are and what they hold, and stops the world. Nothing here reaches the internet.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${DEMO_OUT:-demo-out}
k8s=${DEMO_KUBERNETES:-1.33.1}

echo "==> building cks-iso and the local upstream world (release)"
cargo build --release --locked --workspace
bin=$(realpath "${RELEASE_DIR:-target/release}"/cks-iso)
world=$(realpath "${RELEASE_DIR:-target/release}"/cks-iso-world)
mkdir -p "$out"

echo
echo "==> cks-iso build --kubernetes $k8s --arch amd64 --arch arm64, inside the local world"
# cks-iso-world starts the world, points CKS_ISO_CONFIG at a configuration mapping github.com,
# dl.k8s.io, raw.githubusercontent.com, the autoscaler git repository and the registries
# registry.k8s.io, docker.io, quay.io and ghcr.io to it, exports the CNI, dashboard and Headlamp
# manifest URLs as CKS_WORLD_NETWORK / CKS_WORLD_DASHBOARD / CKS_WORLD_HEADLAMP, runs the
# command, then stops everything.
CKS_WORLD_KUBERNETES=$k8s CKS_ISO=$bin OUT=$out K8S=$k8s "$world" sh -c \
	'"$CKS_ISO" build --kubernetes "$K8S" --arch amd64 --arch arm64 \
		--network "$CKS_WORLD_NETWORK" --dashboard "$CKS_WORLD_DASHBOARD" \
		--headlamp "$CKS_WORLD_HEADLAMP" --output "$OUT"'

isos=("$out/setup-v$k8s-x86_64.iso" "$out/setup-v$k8s-aarch64.iso")
echo
echo "==> cks-iso verify ${isos[*]}"
"$bin" verify "${isos[@]}"

echo
for iso in "${isos[@]}"; do
	echo "==> $(realpath "$iso") ($(du -h "$iso" | cut -f1))"
	if command -v bsdtar >/dev/null; then
		bsdtar -xOf "$iso" versions.txt
	else
		isoinfo -R -x /versions.txt -i "$iso"
	fi | { grep -v -e '^file' -e '^image' -e '^#' || true; } | sed 's/^/    /'
	echo "    images: $(bsdtar -tf "$iso" | grep -c 'docker/.*\.tar$' || true)"
done
echo
echo "ISOs:"
for iso in "${isos[@]}"; do echo "  $(realpath "$iso")"; done
