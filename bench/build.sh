#!/usr/bin/env bash
# bench/build.sh: cold and warm `cks-iso build --arch amd64` of the local world with full-size
# images, against the floor (`cp` of the finished ISO plus `sync` of the copy: the durable write
# no build avoids), and optionally against a second cks-iso binary in the same rounds.
#
# A first version (issue 9): the upstream way re-enacted (a private containerd, ctr pull/export/rm
# per image, genisoimage and sync) is not timed yet. Runs are interleaved round-robin (cold, warm
# per binary, then the floor); the machine is shared and noisy, so compare medians within one run.
# Every ISO's sha256 is printed at the end: identical inputs must give one digest for all binaries.
#
# Environment:
#   RUNS=3              rounds (>= 3)
#   OWN_LAYER_MIB=16    incompressible MiB in each image's own layer (27 images: ~370 MB ISO)
#   CKS_ISO=target/release/cks-iso             the binary to benchmark
#   CKS_ISO_BASE=       another cks-iso binary (e.g. built from main) timed as cks-iso-base
#   WORLD=target/release/cks-iso-world         the local world (cargo build --release --workspace)
#   BENCH_DIR=/var/tmp/cks-iso-bench-build     where caches and ISOs go (removed on exit)
set -euo pipefail
export LC_ALL=C
cd "$(dirname "${BASH_SOURCE[0]}")/.."

die() { echo "bench/build.sh: error: $*" >&2; exit 1; }

if [[ ${1:-} != --inside ]]; then
	RUNS=${RUNS:-3}
	[[ $RUNS =~ ^[0-9]+$ ]] && ((RUNS >= 3)) || die "RUNS must be an integer >= 3"
	WORLD=${WORLD:-target/release/cks-iso-world}
	CKS_ISO=${CKS_ISO:-target/release/cks-iso}
	[[ -x $WORLD && -x $CKS_ISO ]] || die "build first: cargo build --release --locked --workspace"
	[[ -z ${CKS_ISO_BASE:-} || -x $CKS_ISO_BASE ]] || die "CKS_ISO_BASE=$CKS_ISO_BASE is not executable"
	command -v /usr/bin/time >/dev/null || die "/usr/bin/time (GNU time) is missing"
	export RUNS CKS_ISO=$(realpath "$CKS_ISO") CKS_ISO_BASE=${CKS_ISO_BASE:+$(realpath "$CKS_ISO_BASE")}
	export BENCH_DIR=${BENCH_DIR:-/var/tmp/cks-iso-bench-build}
	export CKS_WORLD_OWN_LAYER_KIB=$((${OWN_LAYER_MIB:-16} * 1024))
	export CKS_WORLD_KUBERNETES=${CKS_WORLD_KUBERNETES:-1.33.1}
	exec "$WORLD" "$(realpath "$0")" --inside
fi

mkdir -p "$BENCH_DIR"
W=$(mktemp -d "$BENCH_DIR/run.XXXXXX")
trap 'rm -rf -- "$W"; rmdir -- "$BENCH_DIR" 2>/dev/null || true' EXIT
export SOURCE_DATE_EPOCH=1700000000
declare -A BIN=([cks-iso]=$CKS_ISO)
TOOLS=(cks-iso)
if [[ -n $CKS_ISO_BASE ]]; then BIN[cks-iso-base]=$CKS_ISO_BASE; TOOLS+=(cks-iso-base); fi
declare -A TIMES RSS
SUMS=()

one() { # one TOOL MODE
	local tool=$1 mode=$2 tf=$W/time secs kib
	[[ $mode == cold ]] && rm -rf "$W/cache-$tool"
	rm -rf "$W/out" && mkdir -p "$W/out" && sync
	/usr/bin/time -f '%e %M' -o "$tf" "${BIN[$tool]}" build --kubernetes "$CKS_WORLD_KUBERNETES" \
		--arch amd64 --network "$CKS_WORLD_NETWORK" --dashboard "$CKS_WORLD_DASHBOARD" \
		--headlamp "$CKS_WORLD_HEADLAMP" --output "$W/out" --cache-dir "$W/cache-$tool" \
		>"$W/log" 2>&1 || { tail -n 20 "$W/log" >&2; die "$tool $mode build failed"; }
	read -r secs kib <"$tf"
	TIMES[$tool-$mode]+="$secs "
	RSS[$tool-$mode]+="$kib "
	SUMS+=("$(sha256sum "$W"/out/*.iso | cut -c1-16)")
	printf '  %-14s %-5s %6.2f s %8d KiB\n' "$tool" "$mode" "$secs" "$kib"
}

echo "bench/build.sh: $RUNS rounds, images with ${CKS_WORLD_OWN_LAYER_KIB} KiB own layers"
# The registry's first serving of each blob is far slower than any later one: one untimed build.
echo "warm-up (untimed)"
one cks-iso cold
TIMES=() RSS=() SUMS=()
for ((r = 1; r <= RUNS; r++)); do
	for tool in "${TOOLS[@]}"; do one "$tool" cold; one "$tool" warm; done
	iso=$(ls "$W"/out/*.iso)
	rm -f "$W/floor.iso" && sync
	/usr/bin/time -f '%e' -o "$W/time" sh -c 'cp "$1" "$2" && sync -- "$2"' sh "$iso" "$W/floor.iso"
	TIMES[floor]+="$(cat "$W/time") "
	printf '  %-14s %-5s %6.2f s  (%s MiB)\n' floor cp+sync "$(cat "$W/time")" "$(($(stat -c %s "$iso") >> 20))"
	rm -f "$W/floor.iso"
done

median() { tr ' ' '\n' | grep . | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
maxof() { tr ' ' '\n' | grep . | sort -g | tail -n1; }
floor=$(median <<<"${TIMES[floor]}")
echo
printf '%-20s %9s %9s %13s\n' what "median s" "x floor" "peak RSS KiB"
for tool in "${TOOLS[@]}"; do
	for mode in cold warm; do
		m=$(median <<<"${TIMES[$tool-$mode]}")
		printf '%-20s %9.2f %9.2f %13d\n' "$tool $mode" "$m" "$(awk -v a="$m" -v b="$floor" 'BEGIN { print a / b }')" \
			"$(maxof <<<"${RSS[$tool-$mode]}")"
	done
done
printf '%-20s %9.2f\n' "floor cp+sync" "$floor"
if [[ -n $CKS_ISO_BASE ]]; then
	for mode in cold warm; do
		a=$(median <<<"${TIMES[cks-iso-$mode]}") b=$(median <<<"${TIMES[cks-iso-base-$mode]}")
		echo "before/after $mode: cks-iso/cks-iso-base = $(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.2f", a / b }')"
	done
fi
echo "ISO sha256 prefixes over all builds: $(printf '%s\n' "${SUMS[@]}" | sort | uniq -c | tr -s ' \n' ' ')"
echo "goals (issue 9): cold <= 1.5x floor, warm <= 1.2x floor, peak RSS <= 64 MiB (informational)"
