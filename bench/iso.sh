#!/usr/bin/env bash
# `make bench`: time cks-iso against xorriso and genisoimage on the same ~1 GB CKS-shaped tree.
#
# The tree is generated deterministically from SEED (AES-256-CTR keystream from openssl), so every
# run of this script on every machine benchmarks the same bytes; its digest is printed to prove it.
# Runs are interleaved round-robin over the three tools (the order rotates each round so no tool is
# always first or last), after one untimed warm-up run of each so every tool reads a warm page cache.
# Each run writes a fresh output that is removed (and the removal synced) before the next one.
#
# Goals (informational; exit status is 0 unless a tool fails or cks-iso's output is unreadable):
#   cks-iso median time / (genisoimage + sync) median time <= 1.0
#   cks-iso peak RSS <= 16 MiB
#
# Environment:
#   RUNS=5            timed runs per tool (>= 3)
#   BENCH_DIR=/var/tmp/cks-iso-bench  where the tree and outputs go (a fresh temp dir inside it)
#   SEED=1            seed of the generated tree
#   BIG_MIB=320       size of each of the 3 image archives under docker/
#   SMALL_COUNT=300   number of small yaml-ish files (1-64 KiB)
#   CKS_ISO=target/release/cks-iso   the binary to benchmark
#   PEER_FSYNC=0      1: also fsync the peers' outputs inside their timed run (cks-iso always
#                     fsyncs its output before the atomic rename; the peers do not)
#   CKS_ISO_BASE=     another cks-iso binary (e.g. one built from main) timed in the same rounds as
#                     cks-iso-base, for a before/after ratio within one run
#
# Besides xorriso and genisoimage as they are, genisoimage+sync (genisoimage, then `sync` of its
# ISO) is always timed: cks-iso flushes its ISO, so that is the like-for-like pairing.
set -euo pipefail
export LC_ALL=C
umask 022

cd "$(dirname "${BASH_SOURCE[0]}")/.."

RUNS=${RUNS:-5}
BENCH_DIR=${BENCH_DIR:-/var/tmp/cks-iso-bench}
SEED=${SEED:-1}
BIG_MIB=${BIG_MIB:-320}
SMALL_COUNT=${SMALL_COUNT:-300}
CKS_ISO=${CKS_ISO:-${RELEASE_DIR:-target/release}/cks-iso}
PEER_FSYNC=${PEER_FSYNC:-0}
VOLID=CDROM
EPOCH=1700000000
CKS_ISO_BASE=${CKS_ISO_BASE:-}
TOOLS=(cks-iso xorriso genisoimage genisoimage+sync)
GOAL_RATIO=1.0
GOAL_RSS_KIB=16384

die() { echo "bench/iso.sh: error: $*" >&2; exit 1; }

[[ $RUNS =~ ^[0-9]+$ ]] && ((RUNS >= 3)) || die "RUNS must be an integer >= 3 (got '$RUNS')"
[[ $BIG_MIB =~ ^[0-9]+$ && $SMALL_COUNT =~ ^[0-9]+$ ]] || die "BIG_MIB and SMALL_COUNT must be integers"

# --- tools -------------------------------------------------------------------------------------
for c in xorriso genisoimage isoinfo /usr/bin/time; do
	command -v "$c" >/dev/null 2>&1 || die "'$c' is missing; run 'make deps' to install the benchmark's tools"
done
command -v openssl >/dev/null 2>&1 || die "'openssl' is missing (it generates the test tree); install it: apt-get install openssl"
[[ -x $CKS_ISO ]] || die "$CKS_ISO is missing; run 'make build' (or 'make bench', which builds first)"
CKS_ISO=$(realpath "$CKS_ISO")
if [[ -n $CKS_ISO_BASE ]]; then
	[[ -x $CKS_ISO_BASE ]] || die "CKS_ISO_BASE=$CKS_ISO_BASE is not an executable"
	CKS_ISO_BASE=$(realpath "$CKS_ISO_BASE")
	TOOLS+=(cks-iso-base)
fi

# --- work dir and cleanup ----------------------------------------------------------------------
mkdir -p "$BENCH_DIR"
WORK=$(mktemp -d "$BENCH_DIR/run.XXXXXX")
cleanup() {
	rm -rf -- "$WORK"
	rmdir -- "$BENCH_DIR" 2>/dev/null || true
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
TREE=$WORK/tree
OUT=$WORK/out
LOGS=$WORK/logs
mkdir -p "$TREE" "$OUT" "$LOGS"

need_kib=$(((3 * BIG_MIB * 1024 + SMALL_COUNT * 64) * 5 / 2))
avail_kib=$(df -Pk "$WORK" | awk 'NR == 2 { print $4 }')
((avail_kib >= need_kib)) || die "$WORK has $((avail_kib / 1024)) MiB free; the benchmark needs ~$((need_kib / 1024)) MiB (set BENCH_DIR elsewhere)"

echo "bench/iso.sh: working in $WORK (removed on exit)"
echo "  cks-iso:     $CKS_ISO ($("$CKS_ISO" --version 2>&1 | head -n1))"
echo "  xorriso:     $(xorriso -version 2>/dev/null | head -n1)"
echo "  genisoimage: $(genisoimage --version 2>&1 | head -n1)"
echo "  host:        $(nproc) CPUs, $(awk '/MemTotal/ { printf "%d MiB RAM", $2 / 1024 }' /proc/meminfo), $(uname -r)"

# --- deterministic tree ------------------------------------------------------------------------
# keystream LABEL BYTES: BYTES pseudo-random bytes from (SEED, LABEL). Reading exactly BYTES zeros
# (instead of truncating an endless stream) keeps pipefail from seeing a SIGPIPE.
keystream() {
	local key
	key=$(printf 'cks-iso-bench:%s:%s' "$SEED" "$1" | sha256sum | cut -c1-64)
	head -c "$2" /dev/zero |
		openssl enc -aes-256-ctr -nosalt -K "$key" -iv 00000000000000000000000000000000
}

echo "generating a CKS-shaped tree (seed $SEED): 3 x $BIG_MIB MiB image archives + $SMALL_COUNT small files"
gen_start=$(date +%s.%N)
mkdir -p "$TREE/docker"
for img in kube-apiserver kube-controller-manager kube-scheduler; do
	keystream "big:$img" $((BIG_MIB * 1024 * 1024)) >"$TREE/docker/$img:v1.33.1.tar"
done

small_dirs=(. conf manifests manifests/addons cni cri-tools charts/cloudstack-csi/templates)
for d in "${small_dirs[@]}"; do mkdir -p "$TREE/$d"; done
root_names=(network.yaml dashboard.yaml provider.yaml autoscaler.yaml)
# Sizes 1..64 KiB, two keystream bytes per file (read as big-endian so any host agrees).
mapfile -t sizes < <(keystream sizes $((2 * SMALL_COUNT)) | od -An -v -tu1 -w2 |
	awk '{ print 1024 + ($1 * 256 + $2) % (65536 - 1024 + 1) }')
for ((i = 0; i < SMALL_COUNT; i++)); do
	size=${sizes[i]}
	if ((i < ${#root_names[@]})); then
		path=$TREE/${root_names[i]}
	else
		d=${small_dirs[i % ${#small_dirs[@]}]}
		path=$(printf '%s/%s/bench-%04d.yaml' "$TREE" "$d" "$i")
	fi
	{
		printf '# cks-iso bench fixture (seed %s, file %d)\n' "$SEED" "$i"
		printf 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: bench-%04d\n  namespace: kube-system\ndata:\n' "$i"
		keystream "small:$i" $((size * 3 / 4)) | base64 -w 60 | awk '{ printf "  key%05d: \"%s\"\n", NR, $0 }'
	} >"$path"
	truncate -s "$size" "$path"
done
printf 'v1.33.1\n' >"$TREE/version"
chmod 0700 "$TREE"
sync # write the tree back now (untimed) rather than during the first runs
gen_end=$(date +%s.%N)

tree_files=$(find "$TREE" -type f | wc -l)
tree_dirs=$(find "$TREE" -mindepth 1 -type d | wc -l)
tree_bytes=$(find "$TREE" -type f -printf '%s\n' | awk '{ s += $1 } END { printf "%d", s }')
tree_digest=$(cd "$TREE" && find . -type f -print0 | sort -z | xargs -0 sha256sum | sha256sum | cut -c1-16)
printf '  %d files in %d dirs, %d bytes (%.1f MiB), root mode %s, content digest %s (%.1f s)\n' \
	"$tree_files" "$tree_dirs" "$tree_bytes" "$(echo "$tree_bytes" | awk '{ print $1 / 1048576 }')" \
	"$(stat -c %a "$TREE")" "$tree_digest" "$(echo "$gen_start $gen_end" | awk '{ print $2 - $1 }')"

# --- runs --------------------------------------------------------------------------------------
# tool_cmd TOOL OUTPUT: sets CMD to the command line that makes OUTPUT from the tree.
tool_cmd() {
	case $1 in
	cks-iso) CMD=("$CKS_ISO" iso "$TREE" -o "$2" --volume-id "$VOLID" --source-date-epoch "$EPOCH") ;;
	cks-iso-base) CMD=("$CKS_ISO_BASE" iso "$TREE" -o "$2" --volume-id "$VOLID" --source-date-epoch "$EPOCH") ;;
	xorriso) CMD=(xorriso -as mkisofs -J -R -l -V "$VOLID" -o "$2" "$TREE") ;;
	genisoimage) CMD=(genisoimage -J -R -l -V "$VOLID" -o "$2" "$TREE") ;;
	genisoimage+sync) CMD=(sh -c 'genisoimage -J -R -l -V "$1" -o "$0" "$2" && sync -- "$0"' "$2" "$VOLID" "$TREE") ;;
	esac
	if [[ $1 != cks-iso* && $1 != *+sync && $PEER_FSYNC == 1 ]]; then
		CMD=(sh -c '"$@" && sync -- "$0"' "$2" "${CMD[@]}")
	fi
}

declare -A TIMES RSS ISO_BYTES
# run_one TOOL LABEL: one run to a fresh output; records time and RSS unless LABEL is "warmup".
run_one() {
	local tool=$1 label=$2 out log tf secs kib
	out=$OUT/$tool-$label.iso
	log=$LOGS/$tool-$label.log
	tf=$LOGS/$tool-$label.time
	tool_cmd "$tool" "$out"
	if ! /usr/bin/time -f '%e %M' -o "$tf" -- "${CMD[@]}" >"$log" 2>&1; then
		echo "bench/iso.sh: error: $tool failed ($label): ${CMD[*]}" >&2
		tail -n 20 "$log" >&2
		cat "$tf" >&2
		exit 1
	fi
	read -r secs kib <"$tf"
	[[ -s $out ]] || die "$tool ($label) exited 0 but wrote no $out"
	if [[ $tool == cks-iso* ]]; then
		isoinfo -d -i "$out" | grep -qx "Volume id: $VOLID" ||
			die "cks-iso output ($label) is not readable by isoinfo -d as Volume id: $VOLID"
	fi
	ISO_BYTES[$tool]=$(stat -c %s "$out")
	rm -f -- "$out"
	sync # drop this run's dirty pages (untimed) so they do not bleed into the next tool's run
	if [[ $label != warmup ]]; then
		TIMES[$tool]+="$secs "
		RSS[$tool]+="$kib "
	fi
	printf '  %-8s %-12s %6.2f s  %7d KiB\n' "$label" "$tool" "$secs" "$kib"
}

echo "warm-up (untimed): one run of each tool"
for tool in "${TOOLS[@]}"; do run_one "$tool" warmup; done
echo "timed: $RUNS interleaved rounds, order rotating each round$([[ $PEER_FSYNC == 1 ]] && echo ", peers fsync their output" || true)"
for ((r = 1; r <= RUNS; r++)); do
	for ((k = 0; k < ${#TOOLS[@]}; k++)); do
		run_one "${TOOLS[(r - 1 + k) % ${#TOOLS[@]}]}" "run$r"
	done
done

# --- report ------------------------------------------------------------------------------------
median() { tr ' ' '\n' | grep . | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
maxof() { tr ' ' '\n' | grep . | sort -g | tail -n1; }

declare -A MED
for tool in "${TOOLS[@]}"; do MED[$tool]=$(median <<<"${TIMES[$tool]}"); done
cks=${MED[cks-iso]}

echo
printf 'ISO benchmark: %d files, %.1f MiB, %d timed runs per tool (median; peak RSS = max over runs)\n' \
	"$tree_files" "$(awk -v b="$tree_bytes" 'BEGIN { print b / 1048576 }')" "$RUNS"
printf '%-12s %9s %9s %12s %9s %9s %11s  %s\n' tool "median s" "MB/s" "peak RSS KiB" "RSS MiB" "ISO MiB" "cks/peer" "runs (s)"
for tool in "${TOOLS[@]}"; do
	rss=$(maxof <<<"${RSS[$tool]}")
	if [[ $tool == cks-iso ]]; then ratio=-; else ratio=$(awk -v a="$cks" -v b="${MED[$tool]}" 'BEGIN { printf "%.2f", a / b }'); fi
	printf '%-12s %9.2f %9.1f %12d %9.1f %9.1f %11s  %s\n' "$tool" "${MED[$tool]}" \
		"$(awk -v b="$tree_bytes" -v s="${MED[$tool]}" 'BEGIN { print b / 1e6 / s }')" \
		"$rss" "$(awk -v k="$rss" 'BEGIN { print k / 1024 }')" \
		"$(awk -v b="${ISO_BYTES[$tool]}" 'BEGIN { print b / 1048576 }')" "$ratio" "${TIMES[$tool]% }"
done
echo "(MB/s = tree bytes / 10^6 / median s; cks/peer = cks-iso median / peer median)"

echo
ratio=$(awk -v a="$cks" -v b="${MED[genisoimage+sync]}" 'BEGIN { printf "%.2f", a / b }')
verdict=$(awk -v r="$ratio" -v g="$GOAL_RATIO" 'BEGIN { print (r <= g) ? "PASS" : "MISS" }')
unsynced=$(awk -v a="$cks" -v b="${MED[genisoimage]}" 'BEGIN { printf "%.2f", a / b }')
echo "goal: cks-iso/(genisoimage+sync) median time <= $GOAL_RATIO: $ratio  $verdict  (against unsynced genisoimage: $unsynced)"
if [[ -n $CKS_ISO_BASE ]]; then
	echo "before/after: cks-iso/cks-iso-base median time: $(awk -v a="$cks" -v b="${MED[cks-iso-base]}" 'BEGIN { printf "%.2f", a / b }')"
fi
rss=$(maxof <<<"${RSS[cks-iso]}")
verdict=$(((rss <= GOAL_RSS_KIB)) && echo PASS || echo MISS)
printf 'goal: cks-iso peak RSS <= 16 MiB (%d KiB): %d KiB (%.1f MiB)  %s\n' "$GOAL_RSS_KIB" "$rss" \
	"$(awk -v k="$rss" 'BEGIN { print k / 1024 }')" "$verdict"
echo "verified: every cks-iso output ($((RUNS + 1)) incl. warm-up) reads as Volume id: $VOLID with isoinfo -d"
if [[ $PEER_FSYNC != 1 ]]; then
	echo "note: cks-iso fsyncs its output before the atomic rename and that is inside its time;"
	echo "      xorriso/genisoimage leave theirs in the page cache. PEER_FSYNC=1 times them with an fsync too."
fi
echo "(goals are informational; exit 0)"
