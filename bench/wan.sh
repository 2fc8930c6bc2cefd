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
export LC_ALL=C
umask 022
cd "$(dirname "${BASH_SOURCE[0]}")/.."

RUNS=${RUNS:-3}
IMAGES=${IMAGES:-6}
BASE_MIB=${BASE_MIB:-8}
OWN_MIB=${OWN_MIB:-21}
ARCH=${ARCH:-amd64}
SHAPE_MS=${SHAPE_MS:-50}
SHAPE_MBIT=${SHAPE_MBIT:-200}
BENCH_DIR=${BENCH_DIR:-/var/tmp/cks-iso-bench}
CKS_ISO=${CKS_ISO:-${RELEASE_DIR:-target/release}/cks-iso}
CKS_ISO_BASE=${CKS_ISO_BASE:-}
WORLD=${WORLD:-}
GOAL_RATIO=10

die() { echo "bench/wan.sh: error: $*" >&2; exit 1; }
[[ $RUNS =~ ^[0-9]+$ ]] && ((RUNS >= 3)) || die "RUNS must be an integer >= 3 (got '$RUNS')"
for c in skopeo docker-registry /usr/bin/time xargs; do
	command -v "$c" >/dev/null 2>&1 || die "'$c' is missing; run 'make deps' to install the benchmark's tools"
done
[[ -x $CKS_ISO ]] || die "$CKS_ISO is missing; run 'make build' (or 'make bench', which builds first)"
[[ -z $CKS_ISO_BASE || -x $CKS_ISO_BASE ]] || die "CKS_ISO_BASE=$CKS_ISO_BASE is not an executable"
if [[ -z $WORLD ]]; then
	cargo build --release --locked -p cks-iso-testworld --bin registry-world >&2 ||
		die "cannot build testworld's registry-world"
	WORLD=${RELEASE_DIR:-target/release}/registry-world
fi
CKS_ISO=$(realpath "$CKS_ISO")
[[ -n $CKS_ISO_BASE ]] && CKS_ISO_BASE=$(realpath "$CKS_ISO_BASE")
WORLD=$(realpath "$WORLD")

mkdir -p "$BENCH_DIR"
WORK=$(mktemp -d "$BENCH_DIR/wan.XXXXXX")
WORLD_PID=
cleanup() {
	exec 7>&- 2>/dev/null || true
	if [[ -n $WORLD_PID ]]; then
		for _ in $(seq 1 50); do kill -0 "$WORLD_PID" 2>/dev/null || break; sleep 0.1; done
		kill "$WORLD_PID" 2>/dev/null || true
		wait "$WORLD_PID" 2>/dev/null || true
	fi
	rm -rf -- "$WORK"
	rmdir -- "$BENCH_DIR" 2>/dev/null || true
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

per_arch_mib=$((BASE_MIB + IMAGES * 2 * OWN_MIB))
echo "bench/wan.sh: working in $WORK (removed on exit)"
echo "  cks-iso: $CKS_ISO ($("$CKS_ISO" --version 2>&1 | head -n1))"
[[ -n $CKS_ISO_BASE ]] && echo "  base:    $CKS_ISO_BASE ($("$CKS_ISO_BASE" --version 2>&1 | head -n1))"
echo "  skopeo:  $(skopeo --version)"
echo "  host:    $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg), $(uname -r)"
echo "  set:     $IMAGES images, ${per_arch_mib} MiB compressed for $ARCH; shape +${SHAPE_MS} ms per request, ${SHAPE_MBIT} Mbit/s per connection"

mkfifo "$WORK/world.in"
CKS_WORLD_SHAPE="$SHAPE_MS,$SHAPE_MBIT" "$WORLD" --bench "$IMAGES" "$BASE_MIB" "$OWN_MIB" 0 binary \
	<"$WORK/world.in" >"$WORK/world.txt" 2>"$WORK/world.err" &
WORLD_PID=$!
exec 7>"$WORK/world.in"
until grep -q '^READY$' "$WORK/world.txt"; do
	kill -0 "$WORLD_PID" 2>/dev/null || die "registry-world failed: $(cat "$WORK/world.err")"
	sleep 0.5
done
sync
DIRECT=$(sed -n 's/^REGISTRY=//p' "$WORK/world.txt")
HOST=$(sed -n 's/^SHAPED=//p' "$WORK/world.txt")
[[ -n $HOST ]] || die "registry-world started no shaping proxy"
# The references name the registry; through the proxy they name the proxy's host instead.
mapfile -t REFS < <(sed -n 's/^BENCH=//p' "$WORK/world.txt" | sed "s|^$DIRECT/|$HOST/|")

now() { date +%s.%N; }
run_cks() { # binary
	local out=$WORK/out cache=$WORK/cache start end
	rm -rf "$out" "$cache"
	start=$(now)
	/usr/bin/time -f '%M' -o "$WORK/rss" "$1" -q pull "${REFS[@]}" --arch "$ARCH" --out "$out" \
		--cache-dir "$cache" --insecure-registry "$HOST" >"$WORK/cks.out" || die "$1 pull failed"
	end=$(now)
	[[ $(wc -l <"$WORK/cks.out") -eq ${#REFS[@]} ]] || die "cks-iso printed $(wc -l <"$WORK/cks.out") lines"
	echo "$(awk -v a="$start" -v b="$end" 'BEGIN { print b - a }') $(cat "$WORK/rss")"
	rm -rf "$out" "$cache"
}
skopeo_one() { # arch ref index
	/usr/bin/time -f '%M' -o "$WORK/rss.d/$3" skopeo copy -q --override-os linux --override-arch "$1" \
		--src-tls-verify=false "docker://$2" "docker-archive:$WORK/out/$3.tar:$2" >/dev/null
}
export -f skopeo_one
run_skopeo() {
	local start end
	rm -rf "$WORK/out" "$WORK/rss.d"
	mkdir -p "$WORK/out" "$WORK/rss.d"
	start=$(now)
	for i in "${!REFS[@]}"; do printf '%s %s %s\n' "$ARCH" "${REFS[$i]}" "$i"; done |
		WORK=$WORK xargs -P 4 -L 1 bash -c 'skopeo_one "$@"' _ || die "skopeo copy failed"
	end=$(now)
	echo "$(awk -v a="$start" -v b="$end" 'BEGIN { print b - a }') $(cat "$WORK"/rss.d/* | sort -n | tail -n1)"
	rm -rf "$WORK/out" "$WORK/rss.d"
}
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

declare -A T RSS
TOOLS="cks-iso skopeo-par4"
[[ -n $CKS_ISO_BASE ]] && TOOLS="cks-iso cks-iso-base skopeo-par4"
for tool in $TOOLS; do T[$tool]=""; RSS[$tool]=0; done
for round in $(seq 1 "$RUNS"); do
	for tool in $TOOLS; do
		case $tool in
		cks-iso) r=$(run_cks "$CKS_ISO") ;;
		cks-iso-base) r=$(run_cks "$CKS_ISO_BASE") ;;
		skopeo-par4) r=$(run_skopeo) ;;
		esac
		read -r secs rss <<<"$r"
		T[$tool]+="$secs "
		((rss > RSS[$tool])) && RSS[$tool]=$rss
		printf '  round %d %-12s %7.2f s  %6d KiB\n' "$round" "$tool" "$secs" "$rss"
	done
done

echo
printf '%-12s %10s %12s %14s\n' tool "median s" "peak RSS" "x cks-iso"
base=$(tr ' ' '\n' <<<"${T[cks-iso]}" | grep . | median)
for tool in $TOOLS; do
	m=$(tr ' ' '\n' <<<"${T[$tool]}" | grep . | median)
	printf '%-12s %10.2f %8.1f MiB %13.2fx\n' "$tool" "$m" \
		"$(awk -v k="${RSS[$tool]}" 'BEGIN { print k / 1024 }')" "$(awk -v a="$m" -v b="$base" 'BEGIN { print a / b }')"
done
ratio=$(awk -v a="$(tr ' ' '\n' <<<"${T[skopeo-par4]}" | grep . | median)" -v b="$base" 'BEGIN { print a / b }')
awk -v r="$ratio" -v g="$GOAL_RATIO" -v mib="$per_arch_mib" -v b="$base" 'BEGIN {
	printf "WAN shape: skopeo 4-at-a-time / cks-iso = %.1fx (goal >= %dx: %s); cks-iso moved %d MiB in %.2f s (%.0f Mbit/s)\n",
		r, g, (r >= g ? "met" : "NOT met"), mib, b, mib * 8.388608 / b }'
