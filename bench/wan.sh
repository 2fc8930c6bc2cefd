#!/usr/bin/env bash
# `make bench` (WAN part): `cks-iso pull` with its default settings against `skopeo copy` 4 at a
# time, both through testworld's shaping proxy in front of a local docker-registry: every request
# waits SHAPE_MS more and every connection is capped at SHAPE_MBIT (default +50 ms, 200 Mbit/s), the
# way a far registry behind a per-flow capped link looks. Where each connection is capped, only
# more connections fill the link.
#
# testworld's `registry-world --bench` generates the image set as for bench/pull.sh (IMAGES
# multi-arch images: a BASE_MIB layer shared by all and two OWN_MIB layers of their own, binary-like
# content, sizes compressed) and starts the proxy (CKS_WORLD_SHAPE). Then RUNS interleaved rounds
# for ARCH of:
#   cks-iso      one `cks-iso pull` of every image, default settings, a fresh (cold) cache
#   cks-iso-base the same with the binary CKS_ISO_BASE (e.g. one built from main), when set
#   skopeo-par4  one `skopeo copy docker://… docker-archive:` per image, 4 at a time (xargs -P4)
# Reported: medians, the ratio skopeo-par4 / cks-iso (goal >= 10), peak RSS.
#
# Environment:
#   RUNS=3  IMAGES=6  BASE_MIB=8  OWN_MIB=21  ARCH=amd64  SHAPE_MS=50  SHAPE_MBIT=200
#   BENCH_DIR=/var/tmp/cks-iso-bench   CKS_ISO=target/release/cks-iso   CKS_ISO_BASE=
#   WORLD=path/to/registry-world   (default: built here with cargo)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
BENCH=wan
RUNS=${RUNS:-3}
IMAGES=${IMAGES:-6}
BASE_MIB=${BASE_MIB:-8}
OWN_MIB=${OWN_MIB:-21}
ARCH=${ARCH:-amd64}
SHAPE_MS=${SHAPE_MS:-50}
SHAPE_MBIT=${SHAPE_MBIT:-200}
GOAL_RATIO=10
# shellcheck source=bench/lib.sh
source bench/lib.sh

bench_setup 3 skopeo docker-registry
per_arch_mib=$((BASE_MIB + IMAGES * 2 * OWN_MIB))
echo "  set:     $IMAGES images, ${per_arch_mib} MiB compressed for $ARCH; shape +${SHAPE_MS} ms per request, ${SHAPE_MBIT} Mbit/s per connection"
bench_world CKS_WORLD_SHAPE="$SHAPE_MS,$SHAPE_MBIT" -- --bench "$IMAGES" "$BASE_MIB" "$OWN_MIB" 0 binary
DIRECT=$(world_value REGISTRY)
HOST=$(world_value SHAPED)
[[ -n $HOST ]] || die "registry-world started no shaping proxy"
# The references name the registry; through the proxy they name the proxy's host instead.
mapfile -t REFS < <(world_value BENCH | sed "s|^$DIRECT/|$HOST/|")

run_cks() { # binary
	local out=$WORK/out cache=$WORK/cache secs
	rm -rf "$out" "$cache"
	secs=$(bench_timed "$WORK/rss" "$WORK/cks.out" "$1" -q pull "${REFS[@]}" --arch "$ARCH" --out "$out" \
		--cache-dir "$cache" --insecure-registry "$HOST") || die "$1 pull failed"
	[[ $(wc -l <"$WORK/cks.out") -eq ${#REFS[@]} ]] || die "cks-iso printed $(wc -l <"$WORK/cks.out") lines"
	echo "$secs $(cat "$WORK/rss")"
	rm -rf "$out" "$cache"
}
skopeo_one() { # arch ref index
	/usr/bin/time -f '%M' -o "$WORK/rss.d/$3" skopeo copy -q --override-os linux --override-arch "$1" \
		--src-tls-verify=false "docker://$2" "docker-archive:$WORK/out/$3.tar:$2" >/dev/null
}
export -f skopeo_one
run_skopeo() {
	local secs
	rm -rf "$WORK/out" "$WORK/rss.d"
	mkdir -p "$WORK/out" "$WORK/rss.d"
	secs=$(for i in "${!REFS[@]}"; do printf '%s %s %s\n' "$ARCH" "${REFS[$i]}" "$i"; done |
		WORK=$WORK bench_timed /dev/null /dev/null xargs -P 4 -L 1 bash -c 'skopeo_one "$@"' _) || die "skopeo copy failed"
	echo "$secs $(cat "$WORK"/rss.d/* | sort -n | tail -n1)"
	rm -rf "$WORK/out" "$WORK/rss.d"
}
run_tool() {
	case $1 in
	cks-iso) run_cks "$CKS_ISO" ;;
	cks-iso-base) run_cks "$CKS_ISO_BASE" ;;
	skopeo-par4) run_skopeo ;;
	esac
}

TOOLS=(cks-iso skopeo-par4)
[[ -n $CKS_ISO_BASE ]] && TOOLS=(cks-iso cks-iso-base skopeo-par4)
bench_rounds "$ARCH" "${TOOLS[@]}"
bench_table "$ARCH" cks-iso "${TOOLS[@]}"
awk -v a="$(bench_median "$ARCH.skopeo-par4")" -v b="$(bench_median "$ARCH.cks-iso")" -v g="$GOAL_RATIO" \
	-v mib="$per_arch_mib" 'BEGIN {
	printf "WAN shape: skopeo 4-at-a-time / cks-iso = %.1fx (goal >= %dx: %s); cks-iso moved %d MiB in %.2f s (%.0f Mbit/s)\n",
		a / b, g, (a / b >= g ? "met" : "NOT met"), mib, b, mib * 8.388608 / b }'
