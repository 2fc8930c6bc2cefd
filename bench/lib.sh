# shellcheck shell=bash
# bench/lib.sh: what bench/pull.sh, bench/push.sh, bench/wan.sh and bench/tls.sh share, sourced by each after it
# set BENCH (its name), RUNS and its defaults. One loop runs every round and measures it the same
# way, so the three scripts' figures are comparable:
#
#   bench_setup MIN_RUNS TOOL...   checks RUNS and the tools, resolves CKS_ISO, CKS_ISO_BASE and
#                                  WORLD (building registry-world when unset), makes WORK (removed
#                                  on exit, with the world stopped first)
#   bench_world [VAR=VALUE...] -- ARG...  starts `registry-world ARG...` and waits for READY;
#                                  world_value KEY reads one of its KEY=VALUE lines
#   bench_timed RSSFILE OUT CMD... runs CMD under GNU time, its output into OUT: its wall
#                                  seconds on stdout, its peak RSS in KiB into RSSFILE
#   bench_warmup TOOL              one untimed `run_tool TOOL`: a registry serves each blob far
#                                  slower the first time, which no tool should pay alone
#   bench_rounds KEY TOOL...       RUNS interleaved rounds, each starting one tool further on:
#                                  each runs `run_tool TOOL` (defined by the script; prints
#                                  "<seconds> <peak RSS KiB> [connections]"), records it under
#                                  KEY.TOOL with the load average it started at, and prints one
#                                  line per run
#   bench_table KEY BASE TOOL...   medians per tool, peak RSS, connections, load, and the ratio to
#                                  BASE; bench_median KEY.TOOL (and bench_median_of) for the goals
#
# The machine these run on is shared: the load average (1 minute, as `uptime` shows it) stands
# beside every figure, and only ratios within one run mean anything.

export LC_ALL=C
umask 022

die() { echo "bench/$BENCH.sh: error: $*" >&2; exit 1; }

declare -A T RSS CONN LOAD

bench_setup() { # MIN_RUNS TOOL...
	local min=$1 c
	shift
	[[ $RUNS =~ ^[0-9]+$ ]] && ((RUNS >= min)) || die "RUNS must be an integer >= $min (got '$RUNS')"
	for c in /usr/bin/time xargs "$@"; do
		command -v "$c" >/dev/null 2>&1 || die "'$c' is missing; run 'make deps' to install the benchmark's tools"
	done
	CKS_ISO=${CKS_ISO:-${RELEASE_DIR:-target/release}/cks-iso}
	CKS_ISO_BASE=${CKS_ISO_BASE:-}
	[[ -x $CKS_ISO ]] || die "$CKS_ISO is missing; run 'make build' (or 'make bench', which builds first)"
	[[ -z $CKS_ISO_BASE || -x $CKS_ISO_BASE ]] || die "CKS_ISO_BASE=$CKS_ISO_BASE is not an executable"
	if [[ -z ${WORLD:-} ]]; then
		cargo build --release --locked -p cks-iso-testworld --bin registry-world >&2 ||
			die "cannot build testworld's registry-world"
		WORLD=${RELEASE_DIR:-target/release}/registry-world
	fi
	CKS_ISO=$(realpath "$CKS_ISO")
	[[ -n $CKS_ISO_BASE ]] && CKS_ISO_BASE=$(realpath "$CKS_ISO_BASE")
	WORLD=$(realpath "$WORLD")
	BENCH_DIR=${BENCH_DIR:-/var/tmp/cks-iso-bench}
	mkdir -p "$BENCH_DIR"
	WORK=$(mktemp -d "$BENCH_DIR/$BENCH.XXXXXX")
	WORLD_PID=
	trap bench_cleanup EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM
	echo "bench/$BENCH.sh: working in $WORK (removed on exit)"
	echo "  cks-iso: $CKS_ISO ($("$CKS_ISO" --version 2>&1 | head -n1))"
	[[ -n $CKS_ISO_BASE ]] && echo "  base:    $CKS_ISO_BASE ($("$CKS_ISO_BASE" --version 2>&1 | head -n1))"
	echo "  skopeo:  $(skopeo --version)"
	echo "  host:    $(nproc) CPUs, $(awk '/MemTotal/ { printf "%d MiB RAM", $2 / 1024 }' /proc/meminfo), $(uname -r), load average $(bench_load 3)"
}

bench_cleanup() {
	# Closing its stdin stops the world, which stops its registries; kill only if it hangs.
	exec 7>&- 2>/dev/null || true
	if [[ -n $WORLD_PID ]]; then
		for _ in $(seq 1 50); do kill -0 "$WORLD_PID" 2>/dev/null || break; sleep 0.1; done
		kill "$WORLD_PID" 2>/dev/null || true
		wait "$WORLD_PID" 2>/dev/null || true
	fi
	rm -rf -- "$WORK"
	rmdir -- "$BENCH_DIR" 2>/dev/null || true
}

bench_load() { # N: the first N load averages (1, 5, 15 minutes)
	cut -d' ' -f"1-$1" /proc/loadavg
}

bench_world() { # [VAR=VALUE...] -- ARG...
	local env=()
	while [[ $1 != -- ]]; do env+=("$1"); shift; done
	shift
	mkfifo "$WORK/world.in"
	env "${env[@]}" "$WORLD" "$@" <"$WORK/world.in" >"$WORK/world.txt" 2>"$WORK/world.err" &
	WORLD_PID=$!
	exec 7>"$WORK/world.in" # holds the world's stdin open; closing it stops the world
	local t0
	t0=$(bench_now)
	until grep -q '^READY$' "$WORK/world.txt"; do
		kill -0 "$WORLD_PID" 2>/dev/null || die "registry-world failed: $(cat "$WORK/world.err")"
		sleep 0.5
	done
	echo "  pushed in $(bench_since "$t0") s"
	# Let the registry's freshly written bytes reach the disk now, not during the first round.
	sync
}

world_value() { # KEY [...]: the values of the world's KEY= lines, one a line
	local key
	for key in "$@"; do sed -n "s/^$key=//p" "$WORK/world.txt"; done
}

bench_now() { date +%s.%N; }
bench_since() { awk -v a="$1" -v b="$(bench_now)" 'BEGIN { printf "%.3f", b - a }'; }

bench_timed() { # RSSFILE OUT CMD...
	local rss=$1 out=$2 t0
	shift 2
	t0=$(bench_now)
	/usr/bin/time -f '%M' -o "$rss" "$@" >"$out" || return 1
	bench_since "$t0"
}

bench_warmup() { # TOOL
	local r
	r=$(run_tool "$1") || die "the warm-up ($1) failed"
	echo "  warm-up: $1 $(cut -d' ' -f1 <<<"$r") s (untimed), load $(bench_load 1)"
}

bench_rounds() { # KEY TOOL...
	local key=$1 round tool r secs rss conns load
	shift
	for tool in "$@"; do
		T[$key.$tool]=""; RSS[$key.$tool]=0; CONN[$key.$tool]=""; LOAD[$key.$tool]=""
	done
	local tools=("$@") n=$# i
	for round in $(seq 1 "$RUNS"); do
		# Each round starts one tool further on, so no tool always runs right after the same one
		# (or first, after the untimed warm-up).
		for i in $(seq 0 $((n - 1))); do
			tool=${tools[$(((i + round - 1) % n))]}
			load=$(bench_load 1)
			r=$(run_tool "$tool") || die "$tool failed in round $round"
			read -r secs rss conns <<<"$r"
			T[$key.$tool]+="$secs "
			LOAD[$key.$tool]+="$load "
			[[ -n $conns ]] && CONN[$key.$tool]+="$conns "
			((rss > RSS[$key.$tool])) && RSS[$key.$tool]=$rss
			printf '  %-6s round %d %-12s %7.2f s  %7d KiB  %5s connections  load %s\n' "$key" "$round" \
				"$tool" "$secs" "$rss" "${conns:--}" "$load"
		done
	done
}

bench_median_of() { # "v1 v2 ...": their median
	tr ' ' '\n' <<<"$1" | grep . | sort -g |
		awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

bench_median() { bench_median_of "${T[$1]}"; } # KEY.TOOL: its median seconds

bench_table() { # KEY BASE TOOL...
	local key=$1 name=$2 base tool m conns
	base=$(bench_median "$key.$2")
	shift 2
	echo
	printf '%-6s %-12s %10s %12s %12s %9s %11s\n' "" tool "median s" "peak RSS" connections load "x $name"
	for tool in "$@"; do
		m=$(bench_median "$key.$tool")
		conns=-
		[[ -n ${CONN[$key.$tool]} ]] && conns=$(bench_median_of "${CONN[$key.$tool]}")
		printf '%-6s %-12s %10.2f %8.1f MiB %12s %9.1f %10.2fx\n' "$key" "$tool" "$m" \
			"$(awk -v k="${RSS[$key.$tool]}" 'BEGIN { print k / 1024 }')" "$conns" \
			"$(bench_median_of "${LOAD[$key.$tool]}")" "$(awk -v a="$m" -v b="$base" 'BEGIN { print a / b }')"
	done
}
