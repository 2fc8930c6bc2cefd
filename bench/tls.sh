#!/usr/bin/env bash
# `make bench` (TLS part): what real registries speak. `cks-iso pull` against a docker-registry
# serving TLS from a generated CA, through a path with a real round trip, once with the registry
# offering HTTP/2 (as registry.k8s.io, ghcr.io, quay.io and Docker Hub do) and once with HTTP/2
# turned off on the server, against `skopeo copy` 4 at a time on the HTTP/2 registry (skopeo
# itself stays on HTTP/1.1), and against the path's floor. HTTP/2 once put a whole pull on one
# connection, 3.6x slower than HTTP/1.1 on the same path.
#
# The round trip: this machine's kernel has no `netem` qdisc, so testworld's relay
# (testworld/src/relay.rs) holds every byte RTT_MS/2 in each direction, a new connection one round
# trip more, with at most a TCP window (4 MiB) queued per direction of a connection. It does not
# model slow start or loss, nor a link of its own: the path's capacity is what this machine's CPUs
# carry through the relay, which the `floor` case measures. Every tool goes through the same
# relays; each relay counts the TCP connections it accepts, reported per run.
#
# testworld's `registry-world --bench` generates the image set of bench/pull.sh (IMAGES multi-arch
# images: a BASE_MIB layer shared by all and two OWN_MIB layers of their own, binary-like content)
# plus one image with a BIG_MIB layer (fetched in ranged parts): by default 8 + 12 x 2 x 21 + 128 =
# 640 MiB (671 MB) for amd64, the full benchmark corpus. Then RUNS interleaved rounds for ARCH of:
#   cks-iso-h2    `cks-iso pull` of every image from the HTTP/2 registry, defaults, cold cache
#   cks-iso-h1    the same from the HTTP/1.1-only registry (same storage, same path)
#   base-h2       the HTTP/2 pull with the binary CKS_ISO_BASE (e.g. one built from main), if set
#   base-h1       the HTTP/1.1 pull with CKS_ISO_BASE, if set
#   skopeo-par4   `skopeo copy docker://… docker-archive:` per image, 4 at a time, HTTP/2 registry
#   floor         every blob once over TLS through the same relay with curl into /dev/null, all at
#                 once (the big one in the 8 ranges cks-iso asks for): the time the path needs to
#                 carry the bytes with no client work beyond TLS; no client can beat it
# One untimed `floor` first: the registry serves each blob far slower the first time after the
# push, which once landed on whichever tool ran first (a single round showed HTTP/2 1.29x slower
# than HTTP/1.1 that way). Each round starts one tool further on.
# Reported (bench/lib.sh): medians, peak RSS, connections, the load average beside each figure,
# and the goals: cks-iso-h2 within 1.2x of cks-iso-h1, skopeo-par4 / cks-iso-h2 >= 10, peak RSS
# <= 64 MiB; and skopeo-par4 / floor, the most any client could gain over skopeo on this path.
#
# Environment:
#   RUNS=3  IMAGES=12  BASE_MIB=8  OWN_MIB=21  BIG_MIB=128  ARCH=amd64  RTT_MS=50
#   BENCH_DIR=/var/tmp/cks-iso-bench   CKS_ISO=target/release/cks-iso   CKS_ISO_BASE=
#   WORLD=path/to/registry-world   (default: built here with cargo)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
BENCH=tls
RUNS=${RUNS:-3}
IMAGES=${IMAGES:-12}
BASE_MIB=${BASE_MIB:-8}
OWN_MIB=${OWN_MIB:-21}
BIG_MIB=${BIG_MIB:-128}
ARCH=${ARCH:-amd64}
RTT_MS=${RTT_MS:-50}
GOAL_RATIO=10
GOAL_H2=1.2
GOAL_RSS_MIB=64
# shellcheck source=bench/lib.sh
source bench/lib.sh

[[ $RTT_MS =~ ^[0-9]+$ ]] && ((RTT_MS % 2 == 0)) || die "RTT_MS must be an even integer (got '$RTT_MS')"
bench_setup 1 skopeo docker-registry curl jq openssl
per_arch_mib=$((BASE_MIB + IMAGES * 2 * OWN_MIB + BIG_MIB))
echo "  set:     $((IMAGES + 1)) images, ${per_arch_mib} MiB compressed for $ARCH; TLS, ${RTT_MS} ms round trip"
bench_world CKS_WORLD_TLS=$((RTT_MS / 2)) CKS_WORLD_COUNTS="$WORK/counts" -- \
	--bench "$IMAGES" "$BASE_MIB" "$OWN_MIB" "$BIG_MIB" binary
DIRECT=$(world_value REGISTRY)
H2=$(world_value H2)
H1=$(world_value H1)
CA=$(world_value TLS_CA)
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
mapfile -t PATHS < <(world_value BENCH BIG | sed "s|^$DIRECT/||")
# Every blob of ARCH as a path on the registry, with the curl range arguments cks-iso would use:
# the big layer (from its image's manifest) in 8 parts.
floor_list() {
	world_value "BLOB_$ARCH" | sed "s|^http://$DIRECT||"
	local big index manifest digest size part i
	big=$(world_value BIG | sed "s|^$DIRECT/||")
	index=$(curl -fsS -H 'Accept: application/vnd.oci.image.index.v1+json' "http://$DIRECT/v2/${big%:*}/manifests/${big##*:}")
	manifest=$(jq -r --arg a "$ARCH" '.manifests[] | select(.platform.architecture == $a) | .digest' <<<"$index")
	[[ -n $manifest ]] || return 0
	curl -fsS -H 'Accept: application/vnd.oci.image.manifest.v1+json' "http://$DIRECT/v2/${big%:*}/manifests/$manifest" >"$WORK/big.json"
	echo "/v2/${big%:*}/blobs/$(jq -r .config.digest "$WORK/big.json")"
	digest=$(jq -r '.layers[0].digest' "$WORK/big.json")
	size=$(jq -r '.layers[0].size' "$WORK/big.json")
	part=$(((size + 7) / 8))
	for i in $(seq 0 7); do
		echo "/v2/${big%:*}/blobs/$digest $((i * part))-$(((i + 1) * part < size ? (i + 1) * part - 1 : size - 1))"
	done
}
floor_list >"$WORK/floor.list"
echo "  floor:   $(wc -l <"$WORK/floor.list") GETs of $(sed -n "s/^BLOB_$ARCH=//p" "$WORK/world.txt" | wc -l) blobs and one ranged layer"

count() { # H2|H1: connections the relay accepted so far
	sleep 0.25
	awk -v k="$1" '$1 == k { print $2 }' "$WORK/counts"
}
run_cks() { # binary host name
	local out=$WORK/out cache=$WORK/cache secs c0 c1 refs=()
	for p in "${PATHS[@]}"; do refs+=("$2/$p"); done
	rm -rf "$out" "$cache"
	c0=$(count "$3")
	secs=$(bench_timed "$WORK/rss" "$WORK/cks.out" "$1" -q pull "${refs[@]}" --arch "$ARCH" --out "$out" \
		--cache-dir "$cache" --ca-file "$CA") || die "$1 pull from $2 failed"
	c1=$(count "$3")
	[[ $(wc -l <"$WORK/cks.out") -eq ${#refs[@]} ]] || die "cks-iso printed $(wc -l <"$WORK/cks.out") lines"
	echo "$secs $(cat "$WORK/rss") $((c1 - c0))"
	rm -rf "$out" "$cache"
}
skopeo_one() { # arch ref index
	/usr/bin/time -f '%M' -o "$WORK/rss.d/$3" skopeo copy -q --override-os linux --override-arch "$1" \
		--src-cert-dir "$WORK/certs" "docker://$2" "docker-archive:$WORK/out/$3.tar:$2" >/dev/null
}
curl_one() { # index path [range]
	/usr/bin/time -f '%M' -o "$WORK/rss.d/$1" curl -fsS --http1.1 --cacert "$WORK/certs/ca.crt" \
		${3:+-r "$3"} -o /dev/null "https://$HOST$2"
}
export -f skopeo_one curl_one
run_skopeo() {
	local secs c0 c1
	rm -rf "$WORK/out" "$WORK/rss.d"
	mkdir -p "$WORK/out" "$WORK/rss.d"
	c0=$(count H2)
	secs=$(for i in "${!PATHS[@]}"; do printf '%s %s %s\n' "$ARCH" "$H2/${PATHS[$i]}" "$i"; done |
		WORK=$WORK bench_timed /dev/null /dev/null xargs -P 4 -L 1 bash -c 'skopeo_one "$@"' _) || die "skopeo copy failed"
	c1=$(count H2)
	echo "$secs $(cat "$WORK"/rss.d/* | sort -n | tail -n1) $((c1 - c0))"
	rm -rf "$WORK/out" "$WORK/rss.d"
}
run_floor() {
	local secs c0 c1
	rm -rf "$WORK/rss.d"
	mkdir -p "$WORK/rss.d"
	c0=$(count H2)
	secs=$(awk '{ print NR, $0 }' "$WORK/floor.list" |
		WORK=$WORK HOST=$H2 bench_timed /dev/null /dev/null xargs -P 64 -L 1 bash -c 'curl_one "$@"' _) ||
		die "curl could not fetch every blob"
	c1=$(count H2)
	echo "$secs $(cat "$WORK"/rss.d/* | sort -n | tail -n1) $((c1 - c0))"
	rm -rf "$WORK/rss.d"
}
run_tool() {
	case $1 in
	cks-iso-h2) run_cks "$CKS_ISO" "$H2" H2 ;;
	cks-iso-h1) run_cks "$CKS_ISO" "$H1" H1 ;;
	base-h2) run_cks "$CKS_ISO_BASE" "$H2" H2 ;;
	base-h1) run_cks "$CKS_ISO_BASE" "$H1" H1 ;;
	skopeo-par4) run_skopeo ;;
	floor) run_floor ;;
	esac
}

TOOLS=(cks-iso-h2 cks-iso-h1 skopeo-par4 floor)
[[ -n $CKS_ISO_BASE ]] && TOOLS=(cks-iso-h2 cks-iso-h1 base-h2 base-h1 skopeo-par4 floor)
bench_warmup floor
bench_rounds "$ARCH" "${TOOLS[@]}"
bench_table "$ARCH" cks-iso-h2 "${TOOLS[@]}"
awk -v h2="$(bench_median "$ARCH.cks-iso-h2")" -v h1="$(bench_median "$ARCH.cks-iso-h1")" \
	-v sk="$(bench_median "$ARCH.skopeo-par4")" -v fl="$(bench_median "$ARCH.floor")" \
	-v rss="${RSS[$ARCH.cks-iso-h2]}" -v g="$GOAL_RATIO" -v gh="$GOAL_H2" -v gr="$GOAL_RSS_MIB" \
	-v mib="$per_arch_mib" -v runs="$RUNS" -v rtt="$RTT_MS" 'BEGIN {
	printf "TLS, %d ms round trip, %d round(s): HTTP/2 / HTTP/1.1 = %.2fx (goal <= %.1fx: %s); skopeo 4-at-a-time / cks-iso = %.1fx (goal >= %dx: %s); peak RSS %.1f MiB (goal <= %d MiB: %s)\n",
		rtt, runs, h2 / h1, gh, (h2 / h1 <= gh ? "met" : "NOT met"), sk / h2, g, (sk / h2 >= g ? "met" : "NOT met"),
		rss / 1024, gr, (rss / 1024 <= gr ? "met" : "NOT met")
	printf "path floor: %d MiB in %.2f s (%.0f Mbit/s through the relay on this machine); cks-iso-h2 takes %.2fx the floor; skopeo 4-at-a-time takes %.1fx it, so no client can be more than %.1fx faster than skopeo here%s\n",
		mib, fl, mib * 8.388608 / fl, h2 / fl, sk / fl, sk / fl, (sk / fl < g ? " (the 10x goal is out of reach on this path)" : "") }'
