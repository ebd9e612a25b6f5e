#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# A syscall-heavy job (bench/sysload.c) inside moat with both kernel layers
# (seccomp and Landlock) versus bare, interleaved in one run, as root and as
# an unprivileged user. Issue 3 target: <= 1.05x for plain syscalls (the
# filter's cost on allowed calls); the file and exec loops are reported too
# (exec with and without exec recording, which costs a supervisor round trip
# per execve by design: bench/exec.sh has its target).
set -euo pipefail
# shellcheck source=bench/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
bench_setup

# Sized for roughly half a second to a second each here, so that moat's
# start-up (a few ms) stays under 1 % of the job.
PLAIN=${BENCH_PLAIN:-1000000}
FILES=${BENCH_FILES:-100000}
EXECS=${BENCH_EXECS:-1000}

runs=$(bench_runs 12)
for BENCH_USER in $(bench_users); do
	w=$(bench_tmpfs_workdir syscalls)
	cp "$SYSLOAD" "$w/sysload"
	chown "$BENCH_USER:" "$w/sysload"
	# :rw, a direct bind: the layers' cost, not overlayfs'.
	run=("$MOAT" run --quiet --workspace "$w:rw" --)
	for mode in plain files exec; do
		case $mode in
		plain) n=$PLAIN ;;
		files) n=$FILES ;;
		exec) n=$EXECS ;;
		esac
		bench_case "$mode bare" "$w/sysload" "$mode" "$w" "$n"
		bench_case "$mode moat" "${run[@]}" "$w/sysload" "$mode" "$w" "$n"
		if [ "$mode" = exec ]; then
			bench_case "$mode moat no-record" "$MOAT" run --quiet --no-record-exec \
				--workspace "$w:rw" -- "$w/sysload" "$mode" "$w" "$n"
		fi
	done
	bench_run syscalls "$runs" 150
	bench_ratio syscalls "plain syscalls moat / bare" "plain moat" "plain bare" "<=" 1.05
	bench_ratio syscalls "file open/read/write/close moat / bare" "files moat" "files bare" "<=" 1.05
	bench_ratio syscalls "fork/exec moat (recording) / bare" "exec moat" "exec bare" info -
	bench_ratio syscalls "fork/exec moat --no-record-exec / bare" "exec moat no-record" "exec bare" info -
	echo
done
