#!/usr/bin/env bash
# bench/signatures.sh (`make bench`): what checking signatures costs a cold `cks-iso build` on a
# far link. testworld's cks-iso-world runs with CKS_WORLD_SHAPE, so the registry, the upstream
# stand-in (origin and CDN) and Rekor are each reached through a shaping proxy: every request
# waits SHAPE_MS more and every connection is capped at SHAPE_MBIT, the WAN shape of bench/wan.sh.
# The world signs registry.k8s.io's images (cosign `.sig` tags) and the Kubernetes binaries
# (`.sig`/`.cert` beside each, entries in its Rekor), as the real upstreams do. After one untimed
# build, RUNS interleaved rounds of:
#   verify  `build --arch amd64 --signatures verify` (the default) with an empty cache: every
#           signature tag, its layers and every binary's pair and Rekor entry are fetched too
#   off     the same with `--signatures off`
# Reported: medians, the ratio verify / off (goal <= 1.15), and what the verify build judged (the
# summary line of its versions.txt), so a build that checked nothing cannot pass.
#
# Environment:
#   RUNS=3  OWN_LAYER_MIB=8  SHAPE_MS=50  SHAPE_MBIT=200
#   CKS_ISO=target/release/cks-iso  WORLD= (default: built here with cargo)
#   BENCH_DIR=/var/tmp/cks-iso-bench-signatures  (removed on exit)
set -euo pipefail
export LC_ALL=C
cd "$(dirname "${BASH_SOURCE[0]}")/.."

die() { echo "bench/signatures.sh: error: $*" >&2; exit 1; }

if [[ ${1:-} != --inside ]]; then
	RUNS=${RUNS:-3}
	[[ $RUNS =~ ^[0-9]+$ ]] && ((RUNS >= 3)) || die "RUNS must be an integer >= 3"
	CKS_ISO=${CKS_ISO:-${RELEASE_DIR:-target/release}/cks-iso}
	[[ -x $CKS_ISO ]] || die "$CKS_ISO is missing; run 'make build' (or 'make bench', which builds first)"
	if [[ -z ${WORLD:-} ]]; then
		cargo build --release --locked -p cks-iso-testworld --bin cks-iso-world >&2 ||
			die "cannot build testworld's cks-iso-world"
		WORLD=${RELEASE_DIR:-target/release}/cks-iso-world
	fi
	[[ -x $WORLD ]] || die "WORLD=$WORLD is not executable"
	command -v /usr/bin/time >/dev/null || die "'/usr/bin/time' is missing; run 'make deps'"
	export RUNS CKS_ISO=$(realpath "$CKS_ISO")
	export BENCH_DIR=${BENCH_DIR:-/var/tmp/cks-iso-bench-signatures}
	export CKS_WORLD_OWN_LAYER_KIB=$((${OWN_LAYER_MIB:-8} * 1024))
	export CKS_WORLD_KUBERNETES=${CKS_WORLD_KUBERNETES:-1.33.1}
	export CKS_WORLD_SHAPE="${SHAPE_MS:-50},${SHAPE_MBIT:-200}"
	exec "$WORLD" "$(realpath "$0")" --inside
fi

mkdir -p "$BENCH_DIR"
W=$(mktemp -d "$BENCH_DIR/run.XXXXXX")
cleanup() { rm -rf -- "$W"; rmdir -- "$BENCH_DIR" 2>/dev/null || true; }
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
export SOURCE_DATE_EPOCH=1700000000
declare -A TIMES
CHECKED=

one() { # one MODE: verify or off, cold
	local mode=$1 tf=$W/time secs kib
	rm -rf "$W/cache" "$W/out" && mkdir -p "$W/out" && sync
	/usr/bin/time -f '%e %M' -o "$tf" "$CKS_ISO" build --kubernetes "$CKS_WORLD_KUBERNETES" \
		--arch amd64 --signatures "$mode" --network "$CKS_WORLD_NETWORK" \
		--dashboard "$CKS_WORLD_DASHBOARD" --headlamp "$CKS_WORLD_HEADLAMP" --output "$W/out" \
		--cache-dir "$W/cache" >"$W/log" 2>&1 || { tail -n 20 "$W/log" >&2; die "$mode build failed"; }
	read -r secs kib <"$tf"
	TIMES[$mode]+="$secs "
	if [[ $mode == verify ]]; then
		CHECKED=$(bsdtar -xOf "$W"/out/*.iso versions.txt | sed -n 's/^# signatures verify: //p')
		[[ $CHECKED =~ ^[1-9][0-9]*\ of ]] || die "the verify build verified no image signature: '$CHECKED'"
	fi
	printf '  %-8s %7.2f s %8d KiB\n' "$mode" "$secs" "$kib"
}

echo "bench/signatures.sh: $RUNS rounds, shape $CKS_WORLD_SHAPE (ms,mbit), own layers ${CKS_WORLD_OWN_LAYER_KIB} KiB; $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "warm-up (untimed)"
one verify
TIMES=()
for ((r = 1; r <= RUNS; r++)); do
	echo "round $r"
	one verify
	one off
done

median() { tr ' ' '\n' | grep . | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
v=$(median <<<"${TIMES[verify]}") o=$(median <<<"${TIMES[off]}")
r=$(awk -v a="$v" -v b="$o" 'BEGIN { printf "%.2f", a / b }')
echo
printf 'verify median %.2f s, off median %.2f s\nverify builds judged: %s\n' "$v" "$o" "$CHECKED"
echo "goal: verify / off = $r (goal <= 1.15: $(awk -v r="$r" 'BEGIN { print (r <= 1.15) ? "met" : "missed" }'))"
