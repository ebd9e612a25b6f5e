#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Issue 14: a sandbox with a lifecycle. (1) exec of /bin/true into a ready
# sandbox (moat_sandbox_exec + moat_proc_wait, through libmoat) and, side by
# side in the same process, one start of bubblewrap (BENCH_BWRAP, the same
# isolation moat gives by default) per round: targets median <= 1 ms and
# <= 0.25x bubblewrap's start-up. (2) the memory of idle sandboxes held by
# one process: PSS of the holder's growth plus every init, per sandbox:
# target <= 0.5 MiB (issue 14), <= 1 MiB (issue 15), and the time to create
# all of them (issue 15: 100 in <= 1 s). Root and unprivileged (the
# unprivileged inits' PSS read by root while the probe waits).
set -euo pipefail
# shellcheck source=bench/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
bench_setup

PROBE_SRC="$BENCH_TOP/$O/testbin/lifecycle_probe"
[ -x "$PROBE_SRC" ] || { echo "lifecycle: $PROBE_SRC not built (make all)" >&2; exit 1; }
cp "$PROBE_SRC" "$BENCH_STAGE/bin/"
chmod a+rx "$BENCH_STAGE/bin/lifecycle_probe"
PROBE=$BENCH_STAGE/bin/lifecycle_probe
rounds=$(bench_runs 400)
idle_n=$(bench_runs 100)

for BENCH_USER in $(bench_users); do
	echo "lifecycle (as $BENCH_USER, $rounds rounds)"
	out=$(bench_as_user "$PROBE" bench "$rounds" "${BENCH_BWRAP[@]}" /bin/true) || {
		bench_note lifecycle "exec bench failed"
		continue
	}
	echo "$out" | grep '_us ' | sed 's/^/  # /'
	exec_med=$(awk '$1 == "exec_us" { print $3 }' <<<"$out")
	exec_p90=$(awk '$1 == "exec_us" { print $5 }' <<<"$out")
	peer_med=$(awk '$1 == "peer_us" { print $3 }' <<<"$out")
	peer_p90=$(awk '$1 == "peer_us" { print $5 }' <<<"$out")
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' lifecycle "$BENCH_USER" "exec into a sandbox" \
		"$exec_med" "$exec_p90" "$rounds" 0 0 0 >>"$BENCH_OUT/results.tsv"
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' lifecycle "$BENCH_USER" "bwrap start" \
		"$peer_med" "$peer_p90" "$rounds" 0 0 0 >>"$BENCH_OUT/results.tsv"
	printf '  %-28s %10s %10s\n' "exec into a sandbox" "$(_bench_fmt "$exec_med")" "$(_bench_fmt "$exec_p90")"
	printf '  %-28s %10s %10s\n' "bwrap start" "$(_bench_fmt "$peer_med")" "$(_bench_fmt "$peer_p90")"
	bench_target lifecycle "exec /bin/true into a ready sandbox, median" \
		"$(awk -v u="$exec_med" 'BEGIN { printf "%.3f", u / 1000 }')" "<=" 1 ms
	bench_ratio lifecycle "exec into a sandbox vs bwrap start" "exec into a sandbox" "bwrap start" "<=" 0.25
	# the idle sandboxes: created one after the other, then held. As the
	# unprivileged user the inits are not dumpable (their smaps_rollup is not
	# the user's): the probe prints their pids and waits while root reads
	# their PSS (root may read any process's), then destroys them.
	fifo=$BENCH_STAGE/idle-$BENCH_USER.fifo
	rm -f "$fifo" "$BENCH_STAGE/idle-$BENCH_USER.out"
	mkfifo -m 0666 "$fifo"
	LC_IDLE_WAIT=1 bench_as_user "$PROBE" idle "$idle_n" <"$fifo" >"$BENCH_STAGE/idle-$BENCH_USER.out" 2>&1 &
	ipid=$!
	exec 7>"$fifo"
	for _ in $(seq 600); do
		grep -q '^idle sandboxes' "$BENCH_STAGE/idle-$BENCH_USER.out" 2>/dev/null && break
		kill -0 "$ipid" 2>/dev/null || break
		sleep 0.1
	done
	sleep 0.2
	out=$(cat "$BENCH_STAGE/idle-$BENCH_USER.out")
	root_kb=
	pids=$(sed -n 's/^idle_pids //p' <<<"$out")
	if [ -n "$pids" ] && [ "$(id -u)" -eq 0 ]; then
		root_kb=0
		for pid in $pids; do
			kb=$(awk '/^Pss:/ { print $2; exit }' "/proc/$pid/smaps_rollup" 2>/dev/null || true)
			[ -n "$kb" ] || { root_kb=; break; }
			root_kb=$((root_kb + kb))
		done
	fi
	(echo >&7) 2>/dev/null || true # the probe may have ended already (no wait as root)
	exec 7>&-
	wait "$ipid" || {
		bench_note lifecycle "idle bench failed: $(tail -2 <<<"$out")"
		continue
	}
	out=$(cat "$BENCH_STAGE/idle-$BENCH_USER.out")
	rm -f "$fifo"
	created=$(grep '^idle created' <<<"$out" || true)
	line=$(grep '^idle sandboxes' <<<"$out" || true)
	echo "  $created"
	echo "  $line"
	in_us=$(sed -n 's/.* in_us \([0-9][0-9]*\).*/\1/p' <<<"$created")
	bench_target lifecycle "all $idle_n idle sandboxes created, one after the other" \
		"$([ -n "$in_us" ] && awk -v u="$in_us" -v n="$idle_n" 'BEGIN { printf "%.3f", u / 1e6 * 100 / n }')" "<=" 1 "s (per 100)"
	per=$(sed -n 's/.*per_sandbox_kb \([0-9][0-9]*\).*/\1/p' <<<"$line")
	if [ -z "$per" ] && [ -n "$root_kb" ]; then
		# the holder's own growth (it reads its own smaps) plus the inits, read by root
		sup=$(sed -n 's/.*supervisor_kb \([0-9][0-9]*\).*/\1/p' <<<"$line")
		per=$(((sup + root_kb) / idle_n))
		echo "  inits_kb $root_kb (read by root) supervisor_kb $sup per_sandbox_kb $per"
	fi
	if [ -z "$per" ]; then
		bench_note lifecycle "PSS of the inits not readable as $BENCH_USER (not dumpable) and not run as root"
		continue
	fi
	bench_target lifecycle "PSS per idle sandbox ($idle_n held by one process)" \
		"$([ -n "$per" ] && awk -v k="$per" 'BEGIN { printf "%.3f", k / 1024 }')" "<=" 0.5 MiB
	bench_target lifecycle "PSS per idle sandbox, issue 15 ($idle_n held)" \
		"$([ -n "$per" ] && awk -v k="$per" 'BEGIN { printf "%.3f", k / 1024 }')" "<=" 1 MiB
done
