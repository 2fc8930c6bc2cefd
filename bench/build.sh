#!/usr/bin/env bash
# bench/build.sh: `cks-iso build` of the local world (testworld's cks-iso-world, every image with
# an incompressible own layer of OWN_LAYER_MIB) against the upstream way and the floor, in one run:
#   cks-iso cold   `build --arch amd64` with an empty blob cache
#   cks-iso warm   the same with the cache of the cold build
#   cks-iso cold+sign  `build --arch amd64 --sign-key KEY` with an empty blob cache, KEY a PKCS #8
#                  P-256 key `openssl genpkey` made for the run (run right after the plain cold
#                  build in every round: signing's cost is their ratio)
#   cks-iso 2arch  `build --arch amd64 --arch arm64`, cold: both ISOs in one run
#   cks-iso arm64  `build --arch arm64`, cold (with amd64 cold: the two arches one after the other)
#   upstream       the upstream script's way re-enacted: a private containerd (root, state and
#                  socket under the bench dir, started and stopped here), per image
#                  `ctr -n k8s.io images pull --platform linux/amd64 --plain-http`,
#                  `ctr -n k8s.io images export --platform linux/amd64`, `ctr -n k8s.io images rm
#                  --sync`, curl of every downloaded file from the world's upstream stand-in, then
#                  `genisoimage -J -R -l -V CDROM` of the tree and `sync` of its ISO. The images
#                  and files are the ones the cks-iso ISO's versions.txt lists (the same set), the
#                  images pulled straight from the world's registry (its host:port, plain HTTP).
#   floor          `cp` of the finished cks-iso ISO to a new file plus `sync` of it: the durable
#                  write no build avoids.
# After one untimed build (the registry's first serving of each blob is far slower than any later
# one), RUNS rounds run every case once each, interleaved; the machine is shared and noisy, so
# only ratios of medians within one run mean anything. Printed: medians, peak RSS of cks-iso (GNU
# time), the ratios and whether each goal is met: cold >= 20x faster than upstream, cold <= 1.5x
# the floor, warm <= 1.2x the floor, two arches in one run <= 1.8x one arch, a signed cold build
# <= 1.05x a plain one, peak RSS <= 64 MiB.
# Every cks-iso amd64 ISO's sha256 is printed at the end: identical inputs give one digest.
#
# Sizes: the world has 27 images (23 in an amd64 ISO). The default OWN_LAYER_MIB=26 is the
# full-size set: >= 600 MB of unique compressed blobs per arch, a 600 MiB amd64 ISO; a default run
# takes about 4 minutes on a loaded 2-core machine (the upstream way ~30 s a round, the rest a few
# seconds each). A smaller OWN_LAYER_MIB shortens it (16: a 369 MiB ISO).
#
# Environment:
#   RUNS=3              rounds (>= 3)
#   OWN_LAYER_MIB=26    incompressible MiB in each image's own layer
#   UPSTREAM=1          0 skips the upstream way (which needs root for containerd); the rest stays
#   CKS_ISO=target/release/cks-iso             the binary to benchmark
#   CKS_ISO_BASE=       another cks-iso binary (e.g. built from main) timed as cks-iso-base
#   WORLD=              testworld's cks-iso-world (default: built here with cargo)
#   BENCH_DIR=/var/tmp/cks-iso-bench-build     where caches, containerd and ISOs go (removed on exit)
set -euo pipefail
export LC_ALL=C
cd "$(dirname "${BASH_SOURCE[0]}")/.."

die() { echo "bench/build.sh: error: $*" >&2; exit 1; }

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
	[[ -z ${CKS_ISO_BASE:-} || -x $CKS_ISO_BASE ]] || die "CKS_ISO_BASE=$CKS_ISO_BASE is not executable"
	export UPSTREAM=${UPSTREAM:-1}
	for c in /usr/bin/time bsdtar curl genisoimage openssl; do
		command -v "$c" >/dev/null || die "'$c' is missing; run 'make deps'"
	done
	if [[ $UPSTREAM == 1 ]]; then
		for c in containerd ctr; do command -v "$c" >/dev/null || die "'$c' is missing; run 'make deps'"; done
		[[ $(id -u) == 0 ]] || die "the upstream way needs root (containerd); UPSTREAM=0 skips it"
	fi
	export RUNS CKS_ISO=$(realpath "$CKS_ISO") CKS_ISO_BASE=${CKS_ISO_BASE:+$(realpath "$CKS_ISO_BASE")}
	export BENCH_DIR=${BENCH_DIR:-/var/tmp/cks-iso-bench-build}
	export CKS_WORLD_OWN_LAYER_KIB=$((${OWN_LAYER_MIB:-26} * 1024))
	export CKS_WORLD_KUBERNETES=${CKS_WORLD_KUBERNETES:-1.33.1}
	exec "$WORLD" "$(realpath "$0")" --inside
fi

mkdir -p "$BENCH_DIR"
W=$(mktemp -d "$BENCH_DIR/run.XXXXXX")
CTRD_PID=
cleanup() {
	if [[ -n $CTRD_PID ]]; then
		kill "$CTRD_PID" 2>/dev/null || true
		wait "$CTRD_PID" 2>/dev/null || true
	fi
	# containerd's snapshots may still be mounted if it was killed hard
	if [[ -d $W/containerd ]]; then
		{ grep -o " $W/containerd[^ ]*" /proc/self/mounts || true; } | sort -r |
			while read -r m; do umount -l "$m" || true; done
	fi
	rm -rf -- "$W"
	rmdir -- "$BENCH_DIR" 2>/dev/null || true
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
export SOURCE_DATE_EPOCH=1700000000
declare -A BIN=([cks-iso]=$CKS_ISO)
TOOLS=(cks-iso)
if [[ -n $CKS_ISO_BASE ]]; then BIN[cks-iso-base]=$CKS_ISO_BASE; TOOLS+=(cks-iso-base); fi
declare -A TIMES RSS
SUMS=()

one() { # one TOOL MODE: MODE is cold, warm (amd64), signed (cold, amd64, --sign-key), arm64 (cold)
	#       or 2arch (cold, amd64 + arm64)
	local tool=$1 mode=$2 tf=$W/time secs kib arches=(--arch amd64) sign=()
	case $mode in
	arm64) arches=(--arch arm64) ;;
	2arch) arches=(--arch amd64 --arch arm64) ;;
	signed) sign=(--sign-key "$W/iso.key") ;;
	esac
	[[ $mode != warm ]] && rm -rf "$W/cache-$tool"
	rm -rf "$W/out" && mkdir -p "$W/out" && sync
	/usr/bin/time -f '%e %M' -o "$tf" "${BIN[$tool]}" build --kubernetes "$CKS_WORLD_KUBERNETES" \
		"${arches[@]}" --network "$CKS_WORLD_NETWORK" --dashboard "$CKS_WORLD_DASHBOARD" \
		--headlamp "$CKS_WORLD_HEADLAMP" --output "$W/out" --cache-dir "$W/cache-$tool" "${sign[@]}" \
		>"$W/log" 2>&1 || { tail -n 20 "$W/log" >&2; die "$tool $mode build failed"; }
	if [[ $mode == signed ]]; then
		ls "$W"/out/*.iso.sigstore.json "$W"/out/*.iso.sig >/dev/null 2>&1 ||
			die "$tool $mode build wrote no .sigstore.json and .sig beside its ISO"
	fi
	read -r secs kib <"$tf"
	TIMES[$tool-$mode]+="$secs "
	RSS[$tool-$mode]+="$kib "
	[[ $mode == cold || $mode == warm || $mode == signed ]] && SUMS+=("$(sha256sum "$W"/out/*.iso | cut -c1-16)")
	printf '  %-14s %-8s %7.2f s %8d KiB\n' "$tool" "$mode" "$secs" "$kib"
}

# --- the upstream way -----------------------------------------------------------------------------
ctrd() { ctr --address "$W/containerd/sock" -n k8s.io "$@"; }
start_containerd() {
	mkdir -p "$W/containerd"
	cat >"$W/containerd/config.toml" <<EOF
version = 2
root = "$W/containerd/root"
state = "$W/containerd/state"
disabled_plugins = ["io.containerd.grpc.v1.cri"]
[grpc]
  address = "$W/containerd/sock"
[ttrpc]
  address = "$W/containerd/sock.ttrpc"
[debug]
  address = "$W/containerd/debug.sock"
EOF
	containerd --config "$W/containerd/config.toml" >"$W/containerd/log" 2>&1 &
	CTRD_PID=$!
	for _ in $(seq 1 100); do
		ctr --address "$W/containerd/sock" version >/dev/null 2>&1 && return 0
		kill -0 "$CTRD_PID" 2>/dev/null || break
		sleep 0.1
	done
	tail -n 20 "$W/containerd/log" >&2
	die "the private containerd did not start"
}

# The set, from the versions.txt of the warm-up's ISO: files downloaded from a URL (fetched from
# the world's upstream stand-in through the same mirror rules cks-iso uses), files cks-iso writes
# itself (copied, as the upstream script writes them too) and images (pulled from the registry).
read_set() {
	local iso=$1 kind path url ref
	mkdir -p "$W/iso-tree" && bsdtar -xf "$iso" -C "$W/iso-tree"
	REG=$(sed -n 's/^insecure-registries: \["\(.*\)"\]$/\1/p' "$CKS_ISO_CONFIG")
	mapfile -t MIRRORS < <(sed -n 's/^  \(https:[^ ]*\): \(http:[^ ]*\)$/\1 \2/p' "$CKS_ISO_CONFIG")
	DL_PATHS=() DL_URLS=() LOCAL_FILES=() IMG_REFS=() IMG_PATHS=()
	while read -r kind path _ url; do
		case $kind in
		file)
			if [[ $url == https://* ]]; then
				local m from to best=
				for m in "${MIRRORS[@]}"; do
					from=${m%% *} to=${m#* }
					[[ $url == "$from"/* && ${#from} -gt ${#best} ]] && best=$from && bestto=$to
				done
				[[ -n $best ]] || die "no mirror for $url"
				DL_PATHS+=("$path") DL_URLS+=("$bestto${url#"$best"}")
			else
				LOCAL_FILES+=("$path")
			fi
			;;
		image)
			ref=$path path=$url
			IMG_REFS+=("$REG/$ref") IMG_PATHS+=("$path")
			;;
		esac
	done <"$W/iso-tree/versions.txt"
	((${#IMG_REFS[@]} > 0)) || die "no images in the ISO's versions.txt"
}

upstream() { # the whole upstream way into $W/up, its ISO $W/up.iso, synced
	local tree=$W/up i start end
	rm -rf "$tree" "$W/up.iso" && mkdir -p "$tree/docker" && sync
	start=$(date +%s.%N)
	for i in "${!DL_PATHS[@]}"; do
		mkdir -p "$tree/$(dirname "${DL_PATHS[i]}")"
		curl -fsSL -o "$tree/${DL_PATHS[i]}" "${DL_URLS[i]}" || die "curl ${DL_URLS[i]} failed"
	done
	for i in "${LOCAL_FILES[@]}" versions.txt; do cp "$W/iso-tree/$i" "$tree/$i"; done
	for i in "${!IMG_REFS[@]}"; do
		ctrd images pull --platform linux/amd64 --plain-http "${IMG_REFS[i]}" >/dev/null ||
			die "ctr pull ${IMG_REFS[i]} failed"
		ctrd images export --platform linux/amd64 "$tree/${IMG_PATHS[i]}" "${IMG_REFS[i]}" ||
			die "ctr export ${IMG_REFS[i]} failed"
		ctrd images rm --sync "${IMG_REFS[i]}" >/dev/null || die "ctr rm ${IMG_REFS[i]} failed"
	done
	genisoimage -quiet -J -R -l -V CDROM -o "$W/up.iso" "$tree" 2>"$W/geniso.log" ||
		{ cat "$W/geniso.log" >&2; die "genisoimage failed"; }
	sync -- "$W/up.iso"
	end=$(date +%s.%N)
	secs=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.2f", b - a }')
	TIMES[upstream]+="$secs "
	printf '  %-14s %-8s %7.2f s  (%s MiB ISO)\n' upstream ctr+gen "$secs" "$(($(stat -c %s "$W/up.iso") >> 20))"
	rm -rf "$tree" "$W/up.iso"
}

echo "bench/build.sh: $RUNS rounds, images with ${CKS_WORLD_OWN_LAYER_KIB} KiB own layers; $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
# The key the signed builds sign with, made for this run (removed with $W on exit).
openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$W/iso.key" 2>/dev/null ||
	die "openssl cannot make a P-256 key"
# The registry's first serving of each blob is far slower than any later one: one untimed build.
echo "warm-up (untimed)"
one cks-iso 2arch
iso=$(ls "$W"/out/*x86_64*.iso)
echo "  $(ls "$W"/out/*.iso | wc -l) ISOs, amd64 $(($(stat -c %s "$iso") >> 20)) MiB"
if [[ $UPSTREAM == 1 ]]; then
	read_set "$iso"
	echo "  upstream set: ${#IMG_REFS[@]} images from $REG, ${#DL_PATHS[@]} downloads, ${#LOCAL_FILES[@]} written files"
	start_containerd
	echo "  containerd $(containerd --version | awk '{ print $3 }') (pid $CTRD_PID) under $W/containerd"
fi
TIMES=() RSS=() SUMS=()
for ((r = 1; r <= RUNS; r++)); do
	echo "round $r"
	for tool in "${TOOLS[@]}"; do
		one "$tool" cold
		# Signed right after plain (both cold); warm then reads the cache the signed build filled,
		# which holds the same blobs.
		if [[ $tool == cks-iso ]]; then one cks-iso signed; fi
		one "$tool" warm
	done
	iso=$(ls "$W"/out/*.iso)
	rm -f "$W/floor.iso" && sync
	/usr/bin/time -f '%e' -o "$W/time" sh -c 'cp "$1" "$2" && sync -- "$2"' sh "$iso" "$W/floor.iso"
	TIMES[floor]+="$(cat "$W/time") "
	printf '  %-14s %-8s %7.2f s  (%s MiB)\n' floor cp+sync "$(cat "$W/time")" "$(($(stat -c %s "$iso") >> 20))"
	rm -f "$W/floor.iso"
	one cks-iso 2arch
	one cks-iso arm64
	[[ $UPSTREAM == 1 ]] && upstream
done

median() { tr ' ' '\n' | grep . | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
maxof() { tr ' ' '\n' | grep . | sort -g | tail -n1; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
verdict() { awk -v v="$1" -v g="$3" -v op="$2" 'BEGIN { print ((op == "<=") ? (v <= g) : (v >= g)) ? "met" : "missed" }'; }
floor=$(median <<<"${TIMES[floor]}")
echo
printf '%-22s %9s %9s %13s\n' what "median s" "x floor" "peak RSS KiB"
for tool in "${TOOLS[@]}"; do
	for mode in cold warm; do
		m=$(median <<<"${TIMES[$tool-$mode]}")
		printf '%-22s %9.2f %9.2f %13d\n' "$tool $mode" "$m" "$(ratio "$m" "$floor")" "$(maxof <<<"${RSS[$tool-$mode]}")"
	done
done
for mode in arm64 2arch; do
	m=$(median <<<"${TIMES[cks-iso-$mode]}")
	printf '%-22s %9.2f %9.2f %13d\n' "cks-iso $mode (cold)" "$m" "$(ratio "$m" "$floor")" "$(maxof <<<"${RSS[cks-iso-$mode]}")"
done
m=$(median <<<"${TIMES[cks-iso-signed]}")
printf '%-22s %9.2f %9.2f %13d\n' "cks-iso cold+sign" "$m" "$(ratio "$m" "$floor")" "$(maxof <<<"${RSS[cks-iso-signed]}")"
[[ $UPSTREAM == 1 ]] && printf '%-22s %9.2f %9.2f\n' "upstream way" "$(median <<<"${TIMES[upstream]}")" \
	"$(ratio "$(median <<<"${TIMES[upstream]}")" "$floor")"
printf '%-22s %9.2f\n' "floor cp+sync" "$floor"
if [[ -n $CKS_ISO_BASE ]]; then
	for mode in cold warm; do
		a=$(median <<<"${TIMES[cks-iso-$mode]}") b=$(median <<<"${TIMES[cks-iso-base-$mode]}")
		echo "before/after $mode: cks-iso/cks-iso-base = $(ratio "$a" "$b")"
	done
fi
cold=$(median <<<"${TIMES[cks-iso-cold]}") warm=$(median <<<"${TIMES[cks-iso-warm]}")
two=$(median <<<"${TIMES[cks-iso-2arch]}") signed=$(median <<<"${TIMES[cks-iso-signed]}")
rss=$(tr ' ' '\n' <<<"${RSS[cks-iso-cold]} ${RSS[cks-iso-warm]} ${RSS[cks-iso-2arch]} ${RSS[cks-iso-arm64]} ${RSS[cks-iso-signed]}" | maxof)
echo
echo "goals:"
if [[ $UPSTREAM == 1 ]]; then
	up=$(median <<<"${TIMES[upstream]}")
	r=$(ratio "$up" "$cold")
	echo "  upstream / cold      = $r (goal >= 20: $(verdict "$r" ">=" 20))"
fi
r=$(ratio "$cold" "$floor"); echo "  cold / floor         = $r (goal <= 1.5: $(verdict "$r" "<=" 1.5))"
r=$(ratio "$warm" "$floor"); echo "  warm / floor         = $r (goal <= 1.2: $(verdict "$r" "<=" 1.2))"
r=$(ratio "$two" "$cold"); echo "  two arches / amd64   = $r (goal <= 1.8: $(verdict "$r" "<=" 1.8); amd64 then arm64 cold: $(ratio "$(awk -v a="$cold" -v b="$(median <<<"${TIMES[cks-iso-arm64]}")" 'BEGIN { print a + b }')" "$cold"))"
r=$(ratio "$signed" "$cold"); echo "  signed cold / cold   = $r (goal <= 1.05: $(verdict "$r" "<=" 1.05))"
echo "  peak RSS             = $((rss / 1024)) MiB (goal <= 64: $(verdict "$rss" "<=" 65536))"
echo "ISO sha256 prefixes over all amd64 builds: $(printf '%s\n' "${SUMS[@]}" | sort | uniq -c | tr -s ' \n' ' ')"
