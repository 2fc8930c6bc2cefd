#!/usr/bin/env bash
# `make bench` (push part): time `cks-iso push` against `skopeo copy --all` 4 at a time, the same
# images from the same source registry to the same kind of target, and report the ratio and
# both peak RSS.
#
# testworld's `registry-world --bench` starts Debian's docker-registry on a loopback port (the
# source) and fills it with IMAGES multi-arch images (a BASE_MIB layer shared by all, two OWN_MIB
# layers of their own per arch, binary-like content as in bench/pull.sh). The target is a second
# docker-registry this script starts on a free port, emptied before every timed run so that each
# run uploads everything. Per round:
#   cks-iso-cold  one `cks-iso push --image …` of every image with a fresh (cold) blob cache: the
#                 index, every platform, their blobs fetched from the source, then pushed
#   cks-iso-warm  the same from a cache that already holds them (a push after `build` or `pull`):
#                 the upload alone, plus the tag look-ups at the source
#   skopeo-par4   `skopeo copy --all docker://SOURCE/… docker://TARGET/…` per image, 4 at a time
#                 (`--all`: every platform and the index as they are, the digests kept, as push
#                 keeps them)
# Every pushed index digest is checked against the source's once, after the rounds.
# Reported: median wall time, peak RSS (GNU time; for skopeo the largest of its processes) and
# skopeo's time over cks-iso's.
#
# Environment:
#   RUNS=1  IMAGES=8  BASE_MIB=8  OWN_MIB=21
#   BENCH_DIR=/var/tmp/cks-iso-bench   CKS_ISO=target/release/cks-iso
#   WORLD=path/to/registry-world   (default: built here with cargo)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
BENCH=push
RUNS=${RUNS:-1}
IMAGES=${IMAGES:-8}
BASE_MIB=${BASE_MIB:-8}
OWN_MIB=${OWN_MIB:-21}
# shellcheck source=bench/lib.sh
source bench/lib.sh

bench_setup 1 skopeo docker-registry curl
per_arch_mib=$((BASE_MIB + IMAGES * 2 * OWN_MIB))
echo "  set:     $IMAGES images x 2 arches, ${BASE_MIB} MiB shared + 2 x ${OWN_MIB} MiB own per arch = ${per_arch_mib} MiB compressed per arch"

# --- the source and the target -----------------------------------------------------------------
bench_world -- --bench "$IMAGES" "$BASE_MIB" "$OWN_MIB" 0 binary
SOURCE=$(world_value REGISTRY)
mapfile -t REFS < <(world_value BENCH)
TARGET_PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
TARGET=127.0.0.1:$TARGET_PORT
TARGET_PID=
target_stop() {
	[[ -n $TARGET_PID ]] || return 0
	kill "$TARGET_PID" 2>/dev/null || true
	wait "$TARGET_PID" 2>/dev/null || true
	TARGET_PID=
}
target_fresh() { # an empty target registry on TARGET
	target_stop
	rm -rf "$WORK/target"
	mkdir -p "$WORK/target"
	cat >"$WORK/target.yml" <<-EOF
		version: 0.1
		log:
		  level: error
		  accesslog:
		    disabled: true
		storage:
		  filesystem:
		    rootdirectory: $WORK/target
		http:
		  addr: $TARGET
		  secret: cks-iso-bench
	EOF
	docker-registry serve "$WORK/target.yml" >"$WORK/target.log" 2>&1 &
	TARGET_PID=$!
	for _ in $(seq 1 100); do
		curl -fsS -o /dev/null "http://$TARGET/v2/" 2>/dev/null && return 0
		sleep 0.1
	done
	die "the target docker-registry did not start: $(cat "$WORK/target.log")"
}
trap 'target_stop; bench_cleanup' EXIT

# --- runners: each prints "<seconds> <peak RSS KiB>" ---------------------------------------------
IMAGE_ARGS=()
for ref in "${REFS[@]}"; do IMAGE_ARGS+=(--image "$ref"); done
run_cks() { # cold|warm
	local cache=$WORK/cache secs
	[[ $1 == cold ]] && rm -rf "$cache"
	target_fresh
	secs=$(bench_timed "$WORK/rss" "$WORK/cks.out" "$CKS_ISO" -q push "${IMAGE_ARGS[@]}" --arch amd64 \
		--arch arm64 --signatures off --to "$TARGET/cks" --map flat --insecure-registry "$SOURCE" \
		--insecure-registry "$TARGET" --cache-dir "$cache") || die "cks-iso push failed"
	[[ $(wc -l <"$WORK/cks.out") -eq ${#REFS[@]} ]] || die "cks-iso printed $(wc -l <"$WORK/cks.out") lines"
	echo "$secs $(cat "$WORK/rss")"
}
skopeo_one() { # source-ref target-ref index -> its peak RSS into $WORK/rss.d/<index>
	/usr/bin/time -f '%M' -o "$WORK/rss.d/$3" skopeo copy -q --all --src-tls-verify=false \
		--dest-tls-verify=false "docker://$1" "docker://$2" >/dev/null
}
export -f skopeo_one
run_skopeo() {
	local secs ref
	target_fresh
	rm -rf "$WORK/rss.d"
	mkdir -p "$WORK/rss.d"
	secs=$(for i in "${!REFS[@]}"; do
		ref=${REFS[$i]}
		printf '%s %s %s\n' "$ref" "$TARGET/cks/${ref##*/}" "$i"
	done | WORK=$WORK bench_timed /dev/null /dev/null xargs -P 4 -L 1 bash -c 'skopeo_one "$@"' _) ||
		die "skopeo copy failed"
	echo "$secs $(cat "$WORK"/rss.d/* | sort -n | tail -n1)"
}
run_tool() {
	case $1 in
	cks-iso-cold) run_cks cold ;;
	cks-iso-warm) run_cks warm ;;
	skopeo-par4) run_skopeo ;;
	esac
}

# --- rounds ------------------------------------------------------------------------------------
TOOLS=(cks-iso-cold cks-iso-warm skopeo-par4)
bench_warmup cks-iso-cold
bench_rounds push "${TOOLS[@]}"
# The last run left the target holding skopeo's copies or cks-iso's: check one push's digests.
run_cks warm >/dev/null
while read -r source pushed; do
	want=$(skopeo inspect --raw --tls-verify=false "docker://$source" | sha256sum | cut -d' ' -f1)
	got=${pushed##*@}
	[[ $got == "sha256:$want" ]] || die "$pushed: pushed as $got, the source serves sha256:$want"
done <"$WORK/cks.out"
bench_table push cks-iso-cold "${TOOLS[@]}"
awk -v s="$(bench_median push.skopeo-par4)" -v c="$(bench_median push.cks-iso-cold)" \
	-v w="$(bench_median push.cks-iso-warm)" -v mib="$per_arch_mib" 'BEGIN {
	printf "push: skopeo copy --all 4 at a time / cks-iso push = %.2fx cold cache, %.2fx warm cache (%d MiB per arch, both arches)\n",
		s / c, s / w, mib }'
