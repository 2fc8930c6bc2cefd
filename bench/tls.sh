#!/usr/bin/env bash
# `make bench` (TLS part): what real registries speak. `cks-iso pull` against a docker-registry
# serving TLS from a generated CA, through a path with a real round trip, once with the registry
# offering HTTP/2 (as registry.k8s.io, ghcr.io, quay.io and Docker Hub do) and once with HTTP/2
# turned off on the server, against `skopeo copy` 4 at a time on the HTTP/2 registry (skopeo
# itself stays on HTTP/1.1). Issue 33: HTTP/2 put a whole pull on one connection, 3.6x slower.
#
# The round trip: this machine's kernel has no `netem` qdisc, so testworld's relay
# (testworld/src/relay.rs) holds every byte RTT_MS/2 in each direction, a new connection one round
# trip more, with at most a TCP window (4 MiB) in flight per direction of a connection. It does
# not model slow start or loss. Every tool goes through the same relays; each relay counts the
# TCP connections it accepts, reported per run.
#
# testworld's `registry-world --bench` generates the image set as for bench/wan.sh (IMAGES
# multi-arch images: a BASE_MIB layer shared by all and two OWN_MIB layers of their own) plus one
# image with a BIG_MIB layer (fetched in ranged parts), then RUNS interleaved rounds for ARCH of:
#   cks-iso-h2    `cks-iso pull` of every image from the HTTP/2 registry, defaults, cold cache
#   cks-iso-h1    the same from the HTTP/1.1-only registry (same storage, same path)
#   base-h2       the HTTP/2 pull with the binary CKS_ISO_BASE (e.g. one built from main), if set
#   skopeo-par4   `skopeo copy docker://… docker-archive:` per image, 4 at a time, HTTP/2 registry
# Reported: medians, peak RSS, connections, and the goals: cks-iso-h2 within 1.2x of cks-iso-h1,
# skopeo-par4 / cks-iso-h2 >= 10, peak RSS <= 64 MiB.
#
# Environment:
#   RUNS=3  IMAGES=6  BASE_MIB=8  OWN_MIB=21  BIG_MIB=128  ARCH=amd64  RTT_MS=50
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
BIG_MIB=${BIG_MIB:-128}
ARCH=${ARCH:-amd64}
RTT_MS=${RTT_MS:-50}
BENCH_DIR=${BENCH_DIR:-/var/tmp/cks-iso-bench}
CKS_ISO=${CKS_ISO:-${RELEASE_DIR:-target/release}/cks-iso}
CKS_ISO_BASE=${CKS_ISO_BASE:-}
WORLD=${WORLD:-}
GOAL_RATIO=10
GOAL_H2=1.2
GOAL_RSS_MIB=64

die() { echo "bench/tls.sh: error: $*" >&2; exit 1; }
[[ $RUNS =~ ^[0-9]+$ ]] && ((RUNS >= 1)) || die "RUNS must be an integer >= 1 (got '$RUNS')"
[[ $RTT_MS =~ ^[0-9]+$ ]] && ((RTT_MS % 2 == 0)) || die "RTT_MS must be an even integer (got '$RTT_MS')"
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
WORK=$(mktemp -d "$BENCH_DIR/tls.XXXXXX")
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

per_arch_mib=$((BASE_MIB + IMAGES * 2 * OWN_MIB + BIG_MIB))
echo "bench/tls.sh: working in $WORK (removed on exit)"
echo "  cks-iso: $CKS_ISO ($("$CKS_ISO" --version 2>&1 | head -n1))"
[[ -n $CKS_ISO_BASE ]] && echo "  base:    $CKS_ISO_BASE ($("$CKS_ISO_BASE" --version 2>&1 | head -n1))"
echo "  skopeo:  $(skopeo --version)"
echo "  host:    $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg), $(uname -r)"
echo "  set:     $((IMAGES + 1)) images, ${per_arch_mib} MiB compressed for $ARCH; TLS, ${RTT_MS} ms round trip"

mkfifo "$WORK/world.in"
CKS_WORLD_TLS=$((RTT_MS / 2)) CKS_WORLD_COUNTS="$WORK/counts" \
	"$WORLD" --bench "$IMAGES" "$BASE_MIB" "$OWN_MIB" "$BIG_MIB" binary \
	<"$WORK/world.in" >"$WORK/world.txt" 2>"$WORK/world.err" &
WORLD_PID=$!
exec 7>"$WORK/world.in"
until grep -q '^READY$' "$WORK/world.txt"; do
	kill -0 "$WORLD_PID" 2>/dev/null || die "registry-world failed: $(cat "$WORK/world.err")"
	sleep 0.5
done
sync
DIRECT=$(sed -n 's/^REGISTRY=//p' "$WORK/world.txt")
H2=$(sed -n 's/^H2=//p' "$WORK/world.txt")
H1=$(sed -n 's/^H1=//p' "$WORK/world.txt")
CA=$(sed -n 's/^TLS_CA=//p' "$WORK/world.txt")
[[ -n $H2 && -n $H1 && -f $CA ]] || die "registry-world started no TLS registries"
mkdir -p "$WORK/certs"
cp "$CA" "$WORK/certs/ca.crt" # skopeo's --src-cert-dir takes CAs as *.crt
# What each registry negotiates, as a real TLS client sees it.
for host in "$H2" "$H1"; do
	alpn=$(openssl s_client -connect "$host" -alpn h2,http/1.1 -CAfile "$CA" </dev/null 2>/dev/null |
		sed -n 's/^ALPN protocol: //p')
	echo "  $host answers ALPN h2,http/1.1 with: ${alpn:-none}"
done
# The references name the registry; through a relay they name the relay's host instead.
mapfile -t PATHS < <(sed -n 's/^BENCH=//p; s/^BIG=//p' "$WORK/world.txt" | sed "s|^$DIRECT/||")

now() { date +%s.%N; }
count() { # H2|H1: connections the relay accepted so far
	sleep 0.25
	awk -v k="$1" '$1 == k { print $2 }' "$WORK/counts"
}
run_cks() { # binary host name
	local out=$WORK/out cache=$WORK/cache start end c0 c1 refs=()
	for p in "${PATHS[@]}"; do refs+=("$2/$p"); done
	rm -rf "$out" "$cache"
	c0=$(count "$3")
	start=$(now)
	/usr/bin/time -f '%M' -o "$WORK/rss" "$1" -q pull "${refs[@]}" --arch "$ARCH" --out "$out" \
		--cache-dir "$cache" --ca-file "$CA" >"$WORK/cks.out" || die "$1 pull from $2 failed"
	end=$(now)
	c1=$(count "$3")
	[[ $(wc -l <"$WORK/cks.out") -eq ${#refs[@]} ]] || die "cks-iso printed $(wc -l <"$WORK/cks.out") lines"
	echo "$(awk -v a="$start" -v b="$end" 'BEGIN { print b - a }') $(cat "$WORK/rss") $((c1 - c0))"
	rm -rf "$out" "$cache"
}
skopeo_one() { # arch ref index
	/usr/bin/time -f '%M' -o "$WORK/rss.d/$3" skopeo copy -q --override-os linux --override-arch "$1" \
		--src-cert-dir "$WORK/certs" "docker://$2" "docker-archive:$WORK/out/$3.tar:$2" >/dev/null
}
export -f skopeo_one
run_skopeo() {
	local start end c0 c1
	rm -rf "$WORK/out" "$WORK/rss.d"
	mkdir -p "$WORK/out" "$WORK/rss.d"
	c0=$(count H2)
	start=$(now)
	for i in "${!PATHS[@]}"; do printf '%s %s %s\n' "$ARCH" "$H2/${PATHS[$i]}" "$i"; done |
		WORK=$WORK xargs -P 4 -L 1 bash -c 'skopeo_one "$@"' _ || die "skopeo copy failed"
	end=$(now)
	c1=$(count H2)
	echo "$(awk -v a="$start" -v b="$end" 'BEGIN { print b - a }') $(cat "$WORK"/rss.d/* | sort -n | tail -n1) $((c1 - c0))"
	rm -rf "$WORK/out" "$WORK/rss.d"
}
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

declare -A T RSS CONN
TOOLS="cks-iso-h2 cks-iso-h1 skopeo-par4"
[[ -n $CKS_ISO_BASE ]] && TOOLS="cks-iso-h2 cks-iso-h1 base-h2 skopeo-par4"
for tool in $TOOLS; do T[$tool]=""; RSS[$tool]=0; CONN[$tool]=""; done
for round in $(seq 1 "$RUNS"); do
	for tool in $TOOLS; do
		case $tool in
		cks-iso-h2) r=$(run_cks "$CKS_ISO" "$H2" H2) ;;
		cks-iso-h1) r=$(run_cks "$CKS_ISO" "$H1" H1) ;;
		base-h2) r=$(run_cks "$CKS_ISO_BASE" "$H2" H2) ;;
		skopeo-par4) r=$(run_skopeo) ;;
		esac
		read -r secs rss conns <<<"$r"
		T[$tool]+="$secs "
		CONN[$tool]+="$conns "
		((rss > RSS[$tool])) && RSS[$tool]=$rss
		printf '  round %d %-12s %7.2f s  %6d KiB  %4d connections\n' "$round" "$tool" "$secs" "$rss" "$conns"
	done
done

med() { tr ' ' '\n' <<<"$1" | grep . | median; }
echo
printf '%-12s %10s %12s %12s %14s\n' tool "median s" "peak RSS" connections "x cks-iso-h2"
base=$(med "${T[cks-iso-h2]}")
for tool in $TOOLS; do
	m=$(med "${T[$tool]}")
	printf '%-12s %10.2f %8.1f MiB %12s %13.2fx\n' "$tool" "$m" \
		"$(awk -v k="${RSS[$tool]}" 'BEGIN { print k / 1024 }')" "$(med "${CONN[$tool]}")" \
		"$(awk -v a="$m" -v b="$base" 'BEGIN { print a / b }')"
done
awk -v h2="$base" -v h1="$(med "${T[cks-iso-h1]}")" -v sk="$(med "${T[skopeo-par4]}")" \
	-v rss="${RSS[cks-iso-h2]}" -v g="$GOAL_RATIO" -v gh="$GOAL_H2" -v gr="$GOAL_RSS_MIB" \
	-v mib="$per_arch_mib" -v runs="$RUNS" 'BEGIN {
	printf "TLS, %d ms round trip, %d round(s): HTTP/2 / HTTP/1.1 = %.2fx (goal <= %.1fx: %s); skopeo 4-at-a-time / cks-iso = %.1fx (goal >= %dx: %s); peak RSS %.1f MiB (goal <= %d MiB: %s); cks-iso moved %d MiB in %.2f s (%.0f Mbit/s)\n",
		'"$RTT_MS"', runs, h2 / h1, gh, (h2 / h1 <= gh ? "met" : "NOT met"), sk / h2, g, (sk / h2 >= g ? "met" : "NOT met"),
		rss / 1024, gr, (rss / 1024 <= gr ? "met" : "NOT met"), mib, h2, mib * 8.388608 / h2 }'
