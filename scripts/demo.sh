#!/usr/bin/env bash
# `make demo`: what a new user runs first. Today it authors an ISO from a generated tree shaped like
# a real CKS binaries ISO and checks it with real readers, after resolving a build's versions,
# URLs and images against the local upstream world; `cks-iso build` (issue 5) will replace
# the generated tree with a full build against the local upstream world.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=target/release/cks-iso
out=${DEMO_OUT:-demo-out}
mkdir -p "$out"
work=$(mktemp -d)            # 0700, as upstream's staging dir: the ISO root must still be 0755
trap 'rm -rf "$work"' EXIT

echo "==> cks-iso resolve in the local upstream world (git http-backend + stand-in, no kubeadm)"
# cks-iso-world serves the world, points CKS_ISO_CONFIG at mirrors into it, runs the command.
target/release/cks-iso-world "$bin" resolve --kubernetes 1.33.1 --arch arm64
echo

echo "==> generating a CKS-shaped tree in $work"
mkdir -p "$work"/{k8s,cni,cri-tools,docker}
for b in kubeadm kubelet kubectl; do
	printf '\177ELF\002\001\001demo %s\n' "$b" >"$work/k8s/$b"
	chmod 0775 "$work/k8s/$b"
done
head -c 200000 /dev/urandom >"$work/cni/cni-plugins-amd64.tgz"
head -c 100000 /dev/urandom >"$work/cri-tools/crictl-linux-amd64.tar.gz"
for img in kube-apiserver:v1.33.1 kube-proxy:v1.33.1 pause:3.10 \
	"cilium:v1.16.6@sha256:$(printf 'demo' | sha256sum | cut -c1-64)"; do
	head -c 50000 /dev/urandom >"$work/docker/$img.tar"
done
printf 'kubernetes v1.33.1\narch amd64\n' >"$work/versions.txt"
for y in network dashboard autoscaler provider; do
	printf 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n' "$y" >"$work/$y.yaml"
done

iso="$out/setup-demo-x86_64.iso"
echo "==> cks-iso iso $work -o $iso"
"$bin" iso "$work" -o "$iso"

echo "==> checking it with real readers"
isoinfo -d -i "$iso" | grep -E 'Volume id|Rock Ridge|Joliet'
isoinfo -R -l -i "$iso" | grep -E '^(Directory|[-dl]r)' | grep -v ' \[ *[0-9]* 02\]  *$' | head -30
7z t "$iso" | grep -E 'Everything is Ok|ERROR'
echo
echo "ISO: $(realpath "$iso")"
