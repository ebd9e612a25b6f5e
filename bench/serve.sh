#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Issue 15: `moat serve` over its unix socket (bench/serve_client.py):
# create-to-first-output (POST /v1/sandboxes, then an exec of `echo x` until
# its first stdout event) cold (target <= 10 ms) and from the warm pool
# (`--pool`, target <= 2 ms); an exec of /bin/true into a ready sandbox
# through the API; and `moat exec ID -- /bin/true` into a ready session
# through the CLI (target <= 1 ms median, <= 0.25x a bubblewrap start-up,
# interleaved); one server holding 100 idle sandboxes (the time to create
# them, <= 1 s, and its PSS growth per sandbox, <= 1 MiB, read by root).
# Root and unprivileged. Without `moat serve` in the build the
# API cases are skipped with a note (never a pass). SERVE_MOAT=PATH takes
# moat (and the moat-serve-front beside it) from another build.
set -euo pipefail
# shellcheck source=bench/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
bench_setup

# the server's binaries, staged for the unprivileged user
src=${SERVE_MOAT:-$BENCH_TOP/$O/moat}
sdir=$(dirname "$src")
SMOAT=
if [ -x "$sdir/moat-serve-front" ] && "$src" serve --help >/dev/null 2>&1; then
	mkdir -p "$BENCH_STAGE/serve-bin"
	cp "$src" "$BENCH_STAGE/serve-bin/moat"
	cp "$sdir/moat-serve-front" "$sdir/moat-net.so" "$sdir/moat-nft.so" "$BENCH_STAGE/serve-bin/"
	cp "$BENCH_TOP/bench/serve_client.py" "$BENCH_STAGE/serve-bin/"
	chmod -R a+rX "$BENCH_STAGE/serve-bin"
	SMOAT=$BENCH_STAGE/serve-bin/moat
fi
command -v python3 >/dev/null || SMOAT=
n=$(bench_runs 100)
pool=4

# start_server USER ARGS...: SRV_PID (the server itself), SOCK
start_server() {
	local d=$BENCH_STAGE/serve-$BENCH_USER
	rm -rf "$d"
	mkdir -p "$d"
	chown "$BENCH_USER:" "$d"
	chmod 0700 "$d"
	SOCK=$d/api.sock
	# shellcheck disable=SC2016 # expanded by the inner shell
	bench_as_user sh -c 'echo $$ >"$1/pid"; shift; exec "$@"' sh "$d" \
		"$SMOAT" serve --socket "$SOCK" "$@" 2>"$d/err" &
	for _ in $(seq 200); do
		grep -q "listening on" "$d/err" 2>/dev/null && break
		sleep 0.05
	done
	SRV_PID=$(cat "$d/pid" 2>/dev/null || true)
	grep -q "listening on" "$d/err" || {
		echo "  server did not start: $(tail -2 "$d/err")"
		stop_server
		return 1
	}
}

stop_server() {
	[ -n "${SRV_PID:-}" ] || return 0
	kill -TERM "$SRV_PID" 2>/dev/null || true
	for _ in $(seq 100); do kill -0 "$SRV_PID" 2>/dev/null || break; sleep 0.05; done
	kill -KILL "$SRV_PID" 2>/dev/null || true
	SRV_PID=
	wait 2>/dev/null || true
}
trap 'stop_server; bench_cleanup' EXIT

# client MODE N [POOL]: the median, in microseconds ("" on failure)
client() {
	local out
	out=$(bench_as_user python3 "$BENCH_STAGE/serve-bin/serve_client.py" "$SOCK" "$@" 2>&1) || {
		echo "  client $1 failed: $(tail -1 <<<"$out")" >&2
		return 0
	}
	echo "  # $out" >&2
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' serve "$BENCH_USER" "api $1" \
		"$(awk '{ print $3 }' <<<"$out")" "$(awk '{ print $5 }' <<<"$out")" "$2" 0 "" 0 \
		>>"$BENCH_OUT/results.tsv"
	[ "$1" != warm ] || [ "$(awk '{ print $9 }' <<<"$out")" -eq "$2" ] ||
		bench_note serve "only $(awk '{ print $9 }' <<<"$out") of $2 creates were warm"
	awk '{ print $3 }' <<<"$out"
}

ms() { [ -n "$1" ] && awk -v u="$1" 'BEGIN { printf "%.3f", u / 1000 }'; }

# tree_pss PID: the PSS (kB) of PID and every descendant ("" if one cannot
# be read: only root reads another user's, or a non-dumpable, process)
tree_pss() {
	local all=("$1") p c kb kids sum=0
	local -a queue=("$1")
	while [ ${#queue[@]} -gt 0 ]; do
		p=${queue[0]}
		queue=("${queue[@]:1}")
		kids=$(cat "/proc/$p/task/"*/children 2>/dev/null || true)
		for c in $kids; do
			all+=("$c")
			queue+=("$c")
		done
	done
	for p in "${all[@]}"; do
		kb=$(awk '/^Pss:/ { print $2; exit }' "/proc/$p/smaps_rollup" 2>/dev/null || true)
		[ -n "$kb" ] || { echo ""; return 0; }
		sum=$((sum + kb))
	done
	echo "$sum ${#all[@]}"
}

# idle_server N [C]: one server holding N idle sandboxes: the time to create
# them (one request after the other, or C clients at once) and the server's
# PSS growth per sandbox (its process tree: the back, the front, every
# init), read by root
idle_server() {
	local n=$1 conc=${2:-1} fifo out before after created in_us per how
	fifo=$BENCH_STAGE/serve-idle-$BENCH_USER.fifo
	out=$BENCH_STAGE/serve-idle-$BENCH_USER.out
	rm -f "$fifo" "$out"
	mkfifo -m 0666 "$fifo"
	before=$(tree_pss "$SRV_PID")
	bench_as_user python3 "$BENCH_STAGE/serve-bin/serve_client.py" "$SOCK" idle "$n" "$conc" <"$fifo" >"$out" 2>&1 &
	local cpid=$!
	exec 7>"$fifo"
	for _ in $(seq 1200); do
		grep -q '^idle_created' "$out" 2>/dev/null && break
		kill -0 "$cpid" 2>/dev/null || break
		sleep 0.1
	done
	sleep 0.5
	after=$(tree_pss "$SRV_PID")
	(echo >&7) 2>/dev/null || true # the client may have ended already (it failed)
	exec 7>&-
	wait "$cpid" || true
	created=$(grep '^idle_created' "$out" || true)
	rm -f "$fifo"
	echo "  # $created; server tree PSS kB (processes): $before -> $after"
	in_us=$(awk '{ print $4 }' <<<"$created")
	how="one request after the other"
	[ "$conc" -le 1 ] || how="$conc clients at once"
	bench_target serve "one server: $n idle sandboxes created, $how" \
		"$([ -n "$in_us" ] && awk -v u="$in_us" -v n="$n" 'BEGIN { printf "%.3f", u / 1e6 * 100 / n }')" "<=" 1 "s (per 100)"
	per=
	if [ -n "$before" ] && [ -n "$after" ]; then
		per=$(awk -v a="${after% *}" -v b="${before% *}" -v n="$n" 'BEGIN { printf "%.3f", (a - b) / n / 1024 }')
	fi
	[ "$conc" -gt 1 ] || bench_target serve "one server: PSS per idle sandbox ($n held)" "$per" "<=" 1 MiB
}

for BENCH_USER in $(bench_users); do
	echo "serve (as $BENCH_USER, $n rounds)"
	if [ -z "$SMOAT" ]; then
		bench_note serve "moat serve is not in this build (or python3 is missing): the API cases were not measured"
		bench_target serve "API create-to-first-output, cold, median" "" "<=" 10 ms
		bench_target serve "API create-to-first-output, warm pool, median" "" "<=" 2 ms
	else
		cold='' warm='' api_exec=''
		if start_server; then
			cold=$(client cold "$n")
			api_exec=$(client exec "$n")
			if [ "$(id -u)" -eq 0 ]; then
				idle_server "$(bench_runs 100)"
				idle_server "$(bench_runs 100)" 8
			fi
			stop_server
		fi
		if start_server --pool "$pool"; then
			warm=$(client warm "$n" "$pool")
			stop_server
		fi
		bench_target serve "API create-to-first-output, cold, median" "$(ms "$cold")" "<=" 10 ms
		bench_target serve "API create-to-first-output, warm pool, median" "$(ms "$warm")" "<=" 2 ms
		bench_target serve "API exec /bin/true into a ready sandbox, median" "$(ms "$api_exec")" "<=" 1 ms
	fi
	# moat exec (the sessions CLI) into a ready session, side by side with bwrap
	id=$(bench_as_user "$MOAT" create 2>/dev/null) || id=
	if [ -z "$id" ]; then
		bench_note serve "moat create failed as $BENCH_USER"
		continue
	fi
	bench_case "moat exec /bin/true" "$MOAT" exec "$id" -- /bin/true
	bench_case "bwrap start" "${BENCH_BWRAP[@]}" /bin/true
	bench_run serve "$(bench_runs 300)" 120
	bench_as_user "$MOAT" rm --force --quiet "$id" >/dev/null 2>&1 || true
	bench_target serve "moat exec /bin/true into a session, median" \
		"$(ms "$(bench_value serve "moat exec /bin/true")")" "<=" 1 ms
	bench_ratio serve "moat exec into a session vs bwrap start" "moat exec /bin/true" "bwrap start" "<=" 0.25
	if [ -n "${api_exec:-}" ]; then
		printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' serve "$BENCH_USER" "api exec /bin/true" \
			"$api_exec" "$api_exec" "$n" 0 "" 0 >>"$BENCH_OUT/results.tsv"
		bench_ratio serve "API exec into a sandbox vs bwrap start" "api exec /bin/true" "bwrap start" "<=" 0.25
	fi
	echo
done
