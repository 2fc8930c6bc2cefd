#!/usr/bin/env bash
# `make bench` (pull part): time `cks-iso pull` against `skopeo copy docker://… docker-archive:`
# on a generated image set in a local docker-registry, per target architecture.
#
# testworld's `registry-world --bench` starts Debian's docker-registry on a loopback port and
# streams into it IMAGES multi-arch images (a BASE_MIB layer shared by all, two OWN_MIB layers of
# their own, per arch; sizes are compressed sizes, as the registry stores them), plus one amd64
# image with a single BIG_MIB layer. Layers are real gzip tars of CONTENT:
#   binary  (default) data that gzip compresses ~2.8x, as real image layers do (Go and ELF
#           binaries: /usr/lib compresses 2.65x with gzip -1, 2.93x with gzip -6). skopeo's
#           docker-archive: decompresses every layer; cks-iso keeps them as served (contract §5).
#   noise   incompressible data in stored deflate blocks: nothing for skopeo to inflate, so this
#           shows the transfer alone. (The big layer is always noise: it is there for memory.)
# Then, per arch, RUNS rounds of:
#   cks-iso     one `cks-iso pull` of every image, with a fresh (cold) blob cache
#   skopeo-seq  one `skopeo copy` per image, one after the other
#   skopeo-par4 the same, 4 at a time (xargs -P4)
#   registry    every blob of the arch once, 4 at a time, with curl into /dev/null: what serving
#               the bytes costs with no client work at all, the floor no client can beat
# each writing fresh archives that are removed afterwards. Reported: median wall time, ratios, peak
# RSS (GNU time; for skopeo and curl the largest of their processes). Last, the peak RSS of
# pulling the BIG_MIB-layer image, which shows memory does not grow with layer size.
#
# Goals (informational; exit status is 0 unless a tool fails):
#   skopeo-par4 median / cks-iso median >= 15;  cks-iso peak RSS <= 64 MiB, also for the big layer
#
# Environment:
#   RUNS=3  IMAGES=12  BASE_MIB=8  OWN_MIB=21  BIG_MIB=2048  CONTENT=binary|noise
#   BENCH_DIR=/var/tmp/cks-iso-bench   CKS_ISO=target/release/cks-iso
#   WORLD=path/to/registry-world   (default: built here with cargo)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
BENCH=pull
RUNS=${RUNS:-3}
IMAGES=${IMAGES:-12}
BASE_MIB=${BASE_MIB:-8}
OWN_MIB=${OWN_MIB:-21}
BIG_MIB=${BIG_MIB:-2048}
CONTENT=${CONTENT:-binary}
GOAL_RATIO=15
GOAL_RSS_KIB=65536
# shellcheck source=bench/lib.sh
source bench/lib.sh

[[ $CONTENT == binary || $CONTENT == noise ]] || die "CONTENT must be binary or noise (got '$CONTENT')"
bench_setup 3 skopeo docker-registry curl
per_arch_mib=$((BASE_MIB + IMAGES * 2 * OWN_MIB))
need_kib=$(((per_arch_mib * 2 + BIG_MIB) * 1024 * 3 + per_arch_mib * 1024 * 4))
avail_kib=$(df -Pk "$WORK" | awk 'NR == 2 { print $4 }')
((avail_kib >= need_kib)) || die "$WORK has $((avail_kib / 1024)) MiB free; the benchmark needs ~$((need_kib / 1024)) MiB (set BENCH_DIR elsewhere)"
echo "  set:     $IMAGES images x 2 arches, ${BASE_MIB} MiB shared + 2 x ${OWN_MIB} MiB own per arch = ${per_arch_mib} MiB compressed per arch, $CONTENT layers; big layer ${BIG_MIB} MiB"

# --- the registry ------------------------------------------------------------------------------
bench_world -- --bench "$IMAGES" "$BASE_MIB" "$OWN_MIB" "$BIG_MIB" "$CONTENT"
HOST=$(world_value REGISTRY)
mapfile -t REFS < <(world_value BENCH)
BIG=$(world_value BIG)

# --- runners: each prints "<seconds> <peak RSS KiB>" ---------------------------------------------
run_cks() { # arch
	local arch=$1 out=$WORK/out cache=$WORK/cache secs
	rm -rf "$out" "$cache"
	secs=$(bench_timed "$WORK/rss" "$WORK/cks.out" "$CKS_ISO" -q pull "${REFS[@]}" --arch "$arch" --out "$out" \
		--cache-dir "$cache" --insecure-registry "$HOST") || die "cks-iso pull failed"
	[[ $(wc -l <"$WORK/cks.out") -eq ${#REFS[@]} ]] || die "cks-iso printed $(wc -l <"$WORK/cks.out") lines"
	echo "$secs $(cat "$WORK/rss")"
	rm -rf "$out" "$cache"
}
skopeo_one() { # arch ref index -> its peak RSS into $WORK/rss.d/<index>
	/usr/bin/time -f '%M' -o "$WORK/rss.d/$3" skopeo copy -q --override-os linux --override-arch "$1" \
		--src-tls-verify=false "docker://$2" "docker-archive:$WORK/out/$3.tar:$2" >/dev/null
}
export -f skopeo_one
run_skopeo() { # arch parallelism
	local arch=$1 par=$2 secs
	rm -rf "$WORK/out" "$WORK/rss.d"
	mkdir -p "$WORK/out" "$WORK/rss.d"
	secs=$(for i in "${!REFS[@]}"; do printf '%s %s %s\n' "$arch" "${REFS[$i]}" "$i"; done |
		WORK=$WORK bench_timed /dev/null /dev/null xargs -P "$par" -L 1 bash -c 'skopeo_one "$@"' _) || die "skopeo copy failed"
	echo "$secs $(cat "$WORK"/rss.d/* | sort -n | tail -n1)"
	rm -rf "$WORK/out" "$WORK/rss.d"
}
run_registry() { # arch: every blob once, 4 at a time, into /dev/null
	local arch=$1 secs
	rm -rf "$WORK/rss.d"
	mkdir -p "$WORK/rss.d"
	secs=$(world_value "BLOB_$arch" | awk '{ print NR, $0 }' |
		bench_timed /dev/null /dev/null xargs -P 4 -L 1 sh -c '/usr/bin/time -f %M -o "$0/rss.d/$1" curl -fsS -o /dev/null "$2"' "$WORK") ||
		die "curl could not fetch every blob"
	echo "$secs $(cat "$WORK"/rss.d/* | sort -n | tail -n1)"
	rm -rf "$WORK/rss.d"
}
run_tool() {
	case $1 in
	cks-iso) run_cks "$ARCH" ;;
	skopeo-seq) run_skopeo "$ARCH" 1 ;;
	skopeo-par4) run_skopeo "$ARCH" 4 ;;
	registry) run_registry "$ARCH" ;;
	esac
}

# --- rounds ------------------------------------------------------------------------------------
TOOLS=(cks-iso skopeo-seq skopeo-par4 registry)
for ARCH in amd64 arm64; do
	bench_rounds "$ARCH" "${TOOLS[@]}"
done
for ARCH in amd64 arm64; do
	bench_table "$ARCH" cks-iso "${TOOLS[@]}"
	awk -v s="$(bench_median "$ARCH.skopeo-par4")" -v c="$(bench_median "$ARCH.cks-iso")" -v g="$GOAL_RATIO" \
		-v k="${RSS[$ARCH.cks-iso]}" -v gk="$GOAL_RSS_KIB" -v a="$ARCH" -v f="$(bench_median "$ARCH.registry")" 'BEGIN {
		printf "%s: skopeo 4-at-a-time / cks-iso = %.1fx (goal >= %dx: %s); cks-iso peak RSS %.1f MiB (goal <= %d MiB: %s)\n",
			a, s / c, g, (s / c >= g ? "met" : "NOT met"), k / 1024, gk / 1024, (k <= gk ? "met" : "NOT met")
		printf "%s: cks-iso takes %.1fx the time the registry needs just to serve the bytes (%.2f s)\n", a, c / f, f }'
done

if [[ -n $BIG ]]; then
	rm -rf "$WORK/out" "$WORK/cache"
	secs=$(bench_timed "$WORK/rss" "$WORK/cks.out" "$CKS_ISO" -q pull "$BIG" --arch amd64 --out "$WORK/out" \
		--cache-dir "$WORK/cache" --insecure-registry "$HOST") || die "cks-iso pull of the big image failed"
	awk -v k="$(cat "$WORK/rss")" -v gk="$GOAL_RSS_KIB" -v m="$BIG_MIB" -v s="$secs" -v l="$(bench_load 1)" 'BEGIN {
		printf "big layer (%d MiB): cks-iso pull %.1f s (load %s), peak RSS %.1f MiB (goal <= %d MiB: %s)\n",
			m, s, l, k / 1024, gk / 1024, (k <= gk ? "met" : "NOT met") }'
fi
