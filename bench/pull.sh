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
export LC_ALL=C
umask 022
cd "$(dirname "${BASH_SOURCE[0]}")/.."

RUNS=${RUNS:-3}
IMAGES=${IMAGES:-12}
BASE_MIB=${BASE_MIB:-8}
OWN_MIB=${OWN_MIB:-21}
BIG_MIB=${BIG_MIB:-2048}
CONTENT=${CONTENT:-binary}
BENCH_DIR=${BENCH_DIR:-/var/tmp/cks-iso-bench}
CKS_ISO=${CKS_ISO:-${RELEASE_DIR:-target/release}/cks-iso}
WORLD=${WORLD:-}
GOAL_RATIO=15
GOAL_RSS_KIB=65536

die() { echo "bench/pull.sh: error: $*" >&2; exit 1; }
[[ $RUNS =~ ^[0-9]+$ ]] && ((RUNS >= 3)) || die "RUNS must be an integer >= 3 (got '$RUNS')"
[[ $CONTENT == binary || $CONTENT == noise ]] || die "CONTENT must be binary or noise (got '$CONTENT')"
for c in skopeo docker-registry /usr/bin/time xargs curl; do
	command -v "$c" >/dev/null 2>&1 || die "'$c' is missing; run 'make deps' to install the benchmark's tools"
done
[[ -x $CKS_ISO ]] || die "$CKS_ISO is missing; run 'make build' (or 'make bench', which builds first)"
if [[ -z $WORLD ]]; then
	cargo build --release --locked -p cks-iso-testworld --bin registry-world >&2 ||
		die "cannot build testworld's registry-world"
	WORLD=${RELEASE_DIR:-target/release}/registry-world
fi
CKS_ISO=$(realpath "$CKS_ISO")
WORLD=$(realpath "$WORLD")

mkdir -p "$BENCH_DIR"
WORK=$(mktemp -d "$BENCH_DIR/pull.XXXXXX")
WORLD_PID=
cleanup() {
	# Closing its stdin stops the world, which stops its registry; kill only if it hangs.
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
need_kib=$(((per_arch_mib * 2 + BIG_MIB) * 1024 * 3 + per_arch_mib * 1024 * 4))
avail_kib=$(df -Pk "$WORK" | awk 'NR == 2 { print $4 }')
((avail_kib >= need_kib)) || die "$WORK has $((avail_kib / 1024)) MiB free; the benchmark needs ~$((need_kib / 1024)) MiB (set BENCH_DIR elsewhere)"

echo "bench/pull.sh: working in $WORK (removed on exit)"
echo "  cks-iso: $CKS_ISO ($("$CKS_ISO" --version 2>&1 | head -n1))"
echo "  skopeo:  $(skopeo --version)"
echo "  host:    $(nproc) CPUs, $(awk '/MemTotal/ { printf "%d MiB RAM", $2 / 1024 }' /proc/meminfo), $(uname -r)"
echo "  set:     $IMAGES images x 2 arches, ${BASE_MIB} MiB shared + 2 x ${OWN_MIB} MiB own per arch = ${per_arch_mib} MiB compressed per arch, $CONTENT layers; big layer ${BIG_MIB} MiB"

# --- the registry ------------------------------------------------------------------------------
mkfifo "$WORK/world.in"
"$WORLD" --bench "$IMAGES" "$BASE_MIB" "$OWN_MIB" "$BIG_MIB" "$CONTENT" <"$WORK/world.in" >"$WORK/world.txt" 2>"$WORK/world.err" &
WORLD_PID=$!
exec 7>"$WORK/world.in" # holds the world's stdin open; closing it stops the world
t0=$(date +%s.%N)
until grep -q '^READY$' "$WORK/world.txt"; do
	kill -0 "$WORLD_PID" 2>/dev/null || die "registry-world failed: $(cat "$WORK/world.err")"
	sleep 0.5
done
echo "  pushed in $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f s", b - a }')"
# Let the registry's freshly written gigabytes reach the disk now, not during the first round.
sync
HOST=$(sed -n 's/^REGISTRY=//p' "$WORK/world.txt")
mapfile -t REFS < <(sed -n 's/^BENCH=//p' "$WORK/world.txt")
BIG=$(sed -n 's/^BIG=//p' "$WORK/world.txt")

# --- runners: each prints "<seconds> <peak RSS KiB>" ---------------------------------------------
now() { date +%s.%N; }
run_cks() { # arch
	local arch=$1 out=$WORK/out cache=$WORK/cache start end
	rm -rf "$out" "$cache"
	start=$(now)
	/usr/bin/time -f '%M' -o "$WORK/rss" "$CKS_ISO" -q pull "${REFS[@]}" --arch "$arch" --out "$out" \
		--cache-dir "$cache" --insecure-registry "$HOST" >"$WORK/cks.out" || die "cks-iso pull failed"
	end=$(now)
	[[ $(wc -l <"$WORK/cks.out") -eq ${#REFS[@]} ]] || die "cks-iso printed $(wc -l <"$WORK/cks.out") lines"
	echo "$(awk -v a="$start" -v b="$end" 'BEGIN { print b - a }') $(cat "$WORK/rss")"
	rm -rf "$out" "$cache"
}
skopeo_one() { # arch ref index -> appends its peak RSS to $WORK/rss.d/<index>
	/usr/bin/time -f '%M' -o "$WORK/rss.d/$3" skopeo copy -q --override-os linux --override-arch "$1" \
		--src-tls-verify=false "docker://$2" "docker-archive:$WORK/out/$3.tar:$2" >/dev/null
}
export -f skopeo_one
run_skopeo() { # arch parallelism
	local arch=$1 par=$2 start end
	rm -rf "$WORK/out" "$WORK/rss.d"
	mkdir -p "$WORK/out" "$WORK/rss.d"
	start=$(now)
	for i in "${!REFS[@]}"; do printf '%s %s %s\n' "$arch" "${REFS[$i]}" "$i"; done |
		WORK=$WORK xargs -P "$par" -L 1 bash -c 'skopeo_one "$@"' _ || die "skopeo copy failed"
	end=$(now)
	echo "$(awk -v a="$start" -v b="$end" 'BEGIN { print b - a }') $(cat "$WORK"/rss.d/* | sort -n | tail -n1)"
	rm -rf "$WORK/out" "$WORK/rss.d"
}
run_registry() { # arch: every blob once, 4 at a time, into /dev/null
	local arch=$1 start end
	rm -rf "$WORK/rss.d"
	mkdir -p "$WORK/rss.d"
	start=$(now)
	sed -n "s/^BLOB_$arch=//p" "$WORK/world.txt" | awk '{ print NR, $0 }' |
		xargs -P 4 -L 1 sh -c '/usr/bin/time -f %M -o "$0/rss.d/$1" curl -fsS -o /dev/null "$2"' "$WORK" ||
		die "curl could not fetch every blob"
	end=$(now)
	echo "$(awk -v a="$start" -v b="$end" 'BEGIN { print b - a }') $(cat "$WORK"/rss.d/* | sort -n | tail -n1)"
	rm -rf "$WORK/rss.d"
}
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# --- rounds ------------------------------------------------------------------------------------
declare -A T RSS
TOOLS="cks-iso skopeo-seq skopeo-par4 registry"
for arch in amd64 arm64; do
	for tool in $TOOLS; do T[$arch.$tool]=""; RSS[$arch.$tool]=0; done
	for round in $(seq 1 "$RUNS"); do
		for tool in $TOOLS; do
			case $tool in
			cks-iso) r=$(run_cks "$arch") ;;
			skopeo-seq) r=$(run_skopeo "$arch" 1) ;;
			skopeo-par4) r=$(run_skopeo "$arch" 4) ;;
			registry) r=$(run_registry "$arch") ;;
			esac
			read -r secs rss <<<"$r"
			T[$arch.$tool]+="$secs "
			((rss > RSS[$arch.$tool])) && RSS[$arch.$tool]=$rss
			printf '  %-6s round %d %-12s %7.2f s  %6d KiB\n' "$arch" "$round" "$tool" "$secs" "$rss"
		done
	done
done

echo
printf '%-6s %-12s %10s %12s %14s\n' arch tool "median s" "peak RSS" "x cks-iso"
for arch in amd64 arm64; do
	base=$(tr ' ' '\n' <<<"${T[$arch.cks-iso]}" | grep . | median)
	for tool in $TOOLS; do
		m=$(tr ' ' '\n' <<<"${T[$arch.$tool]}" | grep . | median)
		printf '%-6s %-12s %10.2f %8.1f MiB %13.1fx\n' "$arch" "$tool" "$m" \
			"$(awk -v k="${RSS[$arch.$tool]}" 'BEGIN { print k / 1024 }')" "$(awk -v a="$m" -v b="$base" 'BEGIN { print a / b }')"
	done
	ratio=$(awk -v a="$(tr ' ' '\n' <<<"${T[$arch.skopeo-par4]}" | grep . | median)" -v b="$base" 'BEGIN { print a / b }')
	awk -v r="$ratio" -v g="$GOAL_RATIO" -v k="${RSS[$arch.cks-iso]}" -v gk="$GOAL_RSS_KIB" -v a="$arch" 'BEGIN {
		printf "%s: skopeo 4-at-a-time / cks-iso = %.1fx (goal >= %dx: %s); cks-iso peak RSS %.1f MiB (goal <= %d MiB: %s)\n",
			a, r, g, (r >= g ? "met" : "NOT met"), k / 1024, gk / 1024, (k <= gk ? "met" : "NOT met") }'
	floor=$(tr ' ' '\n' <<<"${T[$arch.registry]}" | grep . | median)
	awk -v f="$floor" -v b="$base" -v a="$arch" 'BEGIN {
		printf "%s: cks-iso takes %.1fx the time the registry needs just to serve the bytes (%.2f s)\n", a, b / f, f }'
done

if [[ -n $BIG ]]; then
	rm -rf "$WORK/out" "$WORK/cache"
	start=$(now)
	/usr/bin/time -f '%M' -o "$WORK/rss" "$CKS_ISO" -q pull "$BIG" --arch amd64 --out "$WORK/out" \
		--cache-dir "$WORK/cache" --insecure-registry "$HOST" >/dev/null || die "cks-iso pull of the big image failed"
	end=$(now)
	awk -v k="$(cat "$WORK/rss")" -v gk="$GOAL_RSS_KIB" -v m="$BIG_MIB" -v a="$start" -v b="$end" 'BEGIN {
		printf "big layer (%d MiB): cks-iso pull %.1f s, peak RSS %.1f MiB (goal <= %d MiB: %s)\n",
			m, b - a, k / 1024, gk / 1024, (k <= gk ? "met" : "NOT met") }'
fi
