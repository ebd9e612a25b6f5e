#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# 100 sandboxes running at once (`moat run -- sleep`, started in parallel):
# the time until every one runs its command, and the memory (PSS and RSS
# from /proc/PID/smaps_rollup) of moat's own processes per sandbox: the
# supervisor, the init inside and, with --net allow, the proxy: everything
# in the tree of each started process except the command itself. The same for
# bubblewrap for comparison. Issue 9 target: <= 2 MiB per sandbox.
set -euo pipefail
# shellcheck source=bench/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
bench_setup

N=${BENCH_SANDBOXES:-100}

# mem_case LABEL CMD...: starts N copies of `CMD sleep TAG` as $BENCH_USER from
# one launcher shell, waits until N sleeps with that TAG run (at most 60 s),
# sums PSS/RSS of every process in each copy's tree but the sleep, then ends
# the copies (SIGTERM to each started pid, the supervisors we started).
mem_case() {
	local label=$1 tag launcher t0 t1 started=0 deadline i
	shift
	tag="40.$((RANDOM % 9000 + 1000))"
	local -a cmd=("$@" sleep "$tag")
	printf '%s\t%s\t%s\n' memory "$label" "$(_bench_quote "${cmd[@]}") (x$N in parallel)" \
		>>"$BENCH_OUT/commands.tsv"
	local err
	if ! err=$(bench_as_user timeout 30 "$@" /bin/true 2>&1 >/dev/null); then
		err=$(grep -v '^$' <<<"$err" | tail -1 | cut -c1-160)
		printf '  %-22s missing: %s\n' "$label" "${err:-exit status not 0}"
		printf '%s\t%s\t%s\tmissing\t%s\n' memory "$BENCH_USER" "$label" \
			"${err:-exit status not 0}" >>"$BENCH_OUT/notes.tsv"
		return 0
	fi
	t0=$(date +%s%N)
	# shellcheck disable=SC2016 # expanded by the launcher shell
	bench_as_user bash -c 'n=$1; shift; for ((i = 0; i < n; i++)); do "$@" </dev/null >/dev/null 2>&1 & done; wait' \
		launcher "$N" "${cmd[@]}" &
	launcher=$!
	deadline=$((SECONDS + 60))
	while [ $SECONDS -lt $deadline ]; do
		started=$(pgrep -c -f "^sleep $tag\$" || true)
		[ "$started" -ge "$N" ] && break
		sleep 0.02
	done
	t1=$(date +%s%N)
	sleep 0.5
	# The launcher shell (its pid, or its runuser child's) is the parent of
	# every copy: walk the process table from there.
	local snap
	snap=$(ps -e -o pid=,ppid=,comm=)
	local -a tops=()
	mapfile -t tops < <(awk -v l="$launcher" '
		{ pid[NR] = $1; ppid[NR] = $2; comm[NR] = $3 }
		END {
			# the launcher bash: l itself, or a descendant bash (runuser)
			root[l] = 1
			for (k = 0; k < 3; k++)
				for (i = 1; i <= NR; i++)
					if ((ppid[i] in root) && (comm[i] == "bash" || comm[i] == "runuser"))
						root[pid[i]] = 1
			for (i = 1; i <= NR; i++)
				if ((ppid[i] in root) && comm[i] != "bash" && comm[i] != "runuser")
					print pid[i]
		}' <<<"$snap")
	local -a members=()
	mapfile -t members < <(awk -v tops="${tops[*]}" '
		BEGIN { n = split(tops, t, " "); for (i = 1; i <= n; i++) in_tree[t[i]] = 1 }
		{ pid[NR] = $1; ppid[NR] = $2; comm[NR] = $3 }
		END {
			for (k = 0; k < 6; k++)
				for (i = 1; i <= NR; i++)
					if (ppid[i] in in_tree) in_tree[pid[i]] = 1
			for (i = 1; i <= NR; i++)
				if ((pid[i] in in_tree) && comm[i] != "sleep") print pid[i]
		}' <<<"$snap")
	local pss=0 rss=0 p v
	for p in "${members[@]}"; do
		v=$(awk '/^Pss:/ { p = $2 } /^Rss:/ { r = $2 } END { print p + 0, r + 0 }' \
			"/proc/$p/smaps_rollup" 2>/dev/null || echo "0 0")
		pss=$((pss + ${v% *}))
		rss=$((rss + ${v#* }))
	done
	for p in "${tops[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
	wait "$launcher" 2>/dev/null || true
	if [ "$started" -lt "$N" ]; then
		printf '  %-22s missing: only %s of %s sandboxes ran within 60 s\n' "$label" "$started" "$N"
		printf '%s\t%s\t%s\tmissing\tonly %s of %s sandboxes ran within 60 s\n' memory \
			"$BENCH_USER" "$label" "$started" "$N" >>"$BENCH_OUT/notes.tsv"
		return 0
	fi
	local ms per_pss per_rss nproc=${#members[@]}
	ms=$(((t1 - t0) / 1000000))
	per_pss=$(awk -v k="$pss" -v n="$N" 'BEGIN { printf "%.2f", k / n / 1024 }')
	per_rss=$(awk -v k="$rss" -v n="$N" 'BEGIN { printf "%.2f", k / n / 1024 }')
	printf '  %-22s %6s ms to start %s, %3s own processes: PSS %s MiB, RSS %s MiB per sandbox\n' \
		"$label" "$ms" "$N" "$nproc" "$per_pss" "$per_rss"
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$BENCH_USER" "$label" "$N" "$ms" "$nproc" "$per_pss" \
		"$per_rss" >>"$BENCH_OUT/memory.tsv"
	MEM_PSS=$per_pss
}

for BENCH_USER in $(bench_users); do
	echo "memory (as $BENCH_USER, $N sandboxes at once)"
	MEM_PSS=
	mem_case moat "$MOAT" run --quiet --
	bench_target memory "moat supervisor+init PSS per sandbox" "$MEM_PSS" "<=" 2 MiB
	MEM_PSS=
	mem_case "moat --net allow" "$MOAT" run --quiet --net allow --
	bench_target memory "moat --net allow (with proxy) PSS per sandbox" "$MEM_PSS" "<=" 2 MiB
	mem_case bwrap "${BENCH_BWRAP[@]}"
	echo
done
