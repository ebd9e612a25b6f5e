#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Issue 13 item 6: the command's stdout goes through a pipe of the supervisor
# (splice, no copy through user space) instead of the caller's fd. Bulk output
# throughput of `head -c SIZE /dev/zero` inside moat versus the same command
# direct, into a file (tmpfs, so that the disk's writeback does not decide),
# appended to a file (O_APPEND: splice refuses it, read + write) and into a
# pipe read by `cat`; and `moat run -- /bin/true` for the start-up (with
# BENCH_MOAT_BEFORE=PATH, that binary side by side: before/after).
# Interleaved, root and unprivileged. Target: moat >= 0.9x direct (ratio of
# throughputs = direct time / moat time).
set -euo pipefail
# shellcheck source=bench/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
bench_setup

SIZE=${BENCH_STDIO_SIZE:-1G}
before=
if [ -n "${BENCH_MOAT_BEFORE:-}" ] && [ -x "$BENCH_MOAT_BEFORE" ]; then
	cp "$BENCH_MOAT_BEFORE" "$BENCH_STAGE/bin/moat-before"
	# the plugins it loads must be its own build's: it runs --net none only
	chmod a+rx "$BENCH_STAGE/bin/moat-before"
	before=$BENCH_STAGE/bin/moat-before
fi

# bench_inverse SUITE WHAT A B TARGET: throughput ratio = median(B)/median(A)
# (A moat, B direct) against ">= TARGET".
bench_inverse() {
	local suite=$1 what=$2 a=$3 b=$4 target=$5 va vb ratio
	va=$(bench_value "$suite" "$a")
	vb=$(bench_value "$suite" "$b")
	if [ -z "$va" ] || [ -z "$vb" ]; then
		bench_target "$suite" "$what" "" ">=" "$target" x
		return 0
	fi
	ratio=$(awk -v a="$va" -v b="$vb" 'BEGIN { printf "%.3f", b / a }')
	bench_target "$suite" "$what" "$ratio" ">=" "$target" x
}

runs=$(bench_runs 10)
for BENCH_USER in $(bench_users); do
	w=$(bench_workdir out)
	if [ "$(id -u)" -eq 0 ]; then
		mount -t tmpfs -o mode=755,size=2g bench "$w" && chown "$BENCH_USER:" "$w"
	fi
	# one file for all (removed first in each case): at most SIZE on the tmpfs
	bench_case "file direct" sh -c "rm -f $w/o; head -c $SIZE /dev/zero >$w/o"
	bench_case "file moat" sh -c "rm -f $w/o; $MOAT run --quiet -- head -c $SIZE /dev/zero >$w/o"
	bench_case "append direct" sh -c "rm -f $w/o; head -c $SIZE /dev/zero >>$w/o"
	bench_case "append moat" sh -c "rm -f $w/o; $MOAT run --quiet -- head -c $SIZE /dev/zero >>$w/o"
	bench_case "pipe direct" sh -c "head -c $SIZE /dev/zero | cat >/dev/null"
	bench_case "pipe moat" sh -c "$MOAT run --quiet -- head -c $SIZE /dev/zero | cat >/dev/null"
	bench_run stdio "$runs" 240
	bench_inverse stdio "stdout to a file: moat / direct throughput" "file moat" "file direct" 0.9
	bench_inverse stdio "stdout appended (>>): moat / direct throughput" "append moat" \
		"append direct" 0.9
	bench_inverse stdio "stdout to a pipe: moat / direct throughput" "pipe moat" "pipe direct" 0.9
	if [ "$(id -u)" -eq 0 ]; then umount -l "$w" || true; fi

	bench_case "true moat" "$MOAT" run --quiet -- /bin/true
	[ -n "$before" ] && bench_case "true moat-before" "$before" run --quiet -- /bin/true
	bench_run stdio "$(bench_runs 200)" 60
	[ -n "$before" ] && bench_ratio stdio "moat run -- /bin/true: after / before" "true moat" \
		"true moat-before" "<=" 1.05
	echo
done
