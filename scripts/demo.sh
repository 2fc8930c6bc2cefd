#!/usr/bin/env bash
# `make demo`: what a new user runs first. Builds cks-iso, starts the local upstream world
# (testworld: git http-backend with autoscaler tags, the github.com / dl.k8s.io /
# raw.githubusercontent.com stand-in, and a docker-registry holding every image for amd64 and
# arm64), builds real CKS ISOs for both arches through the mirror settings, verifies them, prints
# where they are and what they hold, and stops the world. Nothing here reaches the internet, and
# nothing here touches the user's cache or configuration: the world gives its commands a cache of
# its own (XDG_CACHE_HOME in the world's directory) and its own CKS_ISO_CONFIG, since its
# stand-ins carry the real upstream URLs and tags that a later real build would look up.
# DEMO_BIN_DIR=DIR runs cks-iso and cks-iso-world from DIR instead of building them (the tests).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${DEMO_OUT:-demo-out}
k8s=${DEMO_KUBERNETES:-1.33.1}

if [ -n "${DEMO_BIN_DIR:-}" ]; then
	bins=$DEMO_BIN_DIR
else
	echo "==> building cks-iso and the local upstream world (release)"
	# cks-iso alone first, as `make build` builds it: building the world with it in one cargo run
	# would unify their dependencies' features and make a different cks-iso, which `make build`
	# or `make deb` after the demo would then compile again.
	cargo build --release --locked
	cargo build --release --locked -p cks-iso-testworld --bin cks-iso-world
	bins=${RELEASE_DIR:-target/release}
fi
bin=$(realpath "$bins/cks-iso")
world=$(realpath "$bins/cks-iso-world")
mkdir -p "$out"

echo
echo "==> cks-iso build --kubernetes $k8s --arch amd64 --arch arm64, inside the local world"
# cks-iso-world starts the world, points CKS_ISO_CONFIG at a configuration mapping github.com,
# dl.k8s.io, raw.githubusercontent.com, the autoscaler git repository and the registries
# registry.k8s.io, docker.io, quay.io and ghcr.io to it, exports the CNI, dashboard and Headlamp
# manifest URLs as CKS_WORLD_NETWORK / CKS_WORLD_DASHBOARD / CKS_WORLD_HEADLAMP, runs the
# command, then stops everything. The ISOs are made of the world's stand-ins: the lines that
# would register them with CloudStack are left out of what build prints.
CKS_WORLD_KUBERNETES=$k8s CKS_ISO=$bin OUT=$out K8S=$k8s "$world" sh -c \
	'"$CKS_ISO" build --kubernetes "$K8S" --arch amd64 --arch arm64 \
		--network "$CKS_WORLD_NETWORK" --dashboard "$CKS_WORLD_DASHBOARD" \
		--headlamp "$CKS_WORLD_HEADLAMP" --output "$OUT"' |
	sed -e '/^register each ISO with CloudStack/d' -e '/^  cmk add /d'

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
echo "ISOs (made of the world's stand-ins: generated binaries and images under upstream's names."
echo "They show what cks-iso does; they are not for CloudStack, so nothing here registers them):"
for iso in "${isos[@]}"; do echo "  $(realpath "$iso")"; done

# What to try next, against the same local world (started again: the demo's has stopped).
# tests/it/docs/commands/mod.rs runs these steps, as printed between "and in that shell:" and the
# blank line after them, inside a world; a `# exit N` comment is the status that line must give.
mine=$(realpath -m "$out/mine")
iso=setup-v$k8s-x86_64.iso
cat <<NEXT

Next: try cks-iso yourself, still without the internet. Start a shell inside the local world
(it serves until you leave that shell, with a cache of its own; \`$world --help\` says more):

  PATH=$(dirname "$bin"):\$PATH $world \${SHELL:-bash}

and in that shell:

  cks-iso resolve --kubernetes $k8s --arch arm64
  cks-iso build --kubernetes $k8s --arch amd64 --network "\$CKS_WORLD_NETWORK" \\
      --dashboard "\$CKS_WORLD_DASHBOARD" --headlamp "\$CKS_WORLD_HEADLAMP" \\
      --output $mine --lock-file $mine/cks-iso.lock
  cks-iso verify --signatures --trusted-root "\$CKS_WORLD_TRUSTED_ROOT" $mine/$iso
  cks-iso diff $(realpath "${isos[0]}") $mine/$iso   # exit 1
  cks-iso build --locked $mine/cks-iso.lock --output $mine/again
  cmp $mine/$iso $mine/again/$iso && echo "the locked rebuild is byte-identical"

\`diff\` exits 1 as diff(1) does when its inputs differ, and names what did: the build's date
(\`epoch\`: each new build is dated when it runs, unless SOURCE_DATE_EPOCH is set) and the
signature material under signatures/ (each start of the world makes a new Sigstore). The
locked rebuild takes the lock's date and, in the same start, the same signatures: it is
byte-identical, and \`cmp\` says nothing and exits 0.

Against the real upstream, leave out the world and give upstream's manifests (docs/guide/building.md):

  cks-iso build --kubernetes $k8s --arch amd64 \\
      --network https://raw.githubusercontent.com/projectcalico/calico/v3.29.1/manifests/calico.yaml \\
      --dashboard https://raw.githubusercontent.com/kubernetes/dashboard/v2.7.0/aio/deploy/recommended.yaml \\
      --output out
NEXT
