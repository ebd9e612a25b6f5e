#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Issue 7: 1,000 short commands from a shell inside moat with exec recording
# (the default) versus --no-record-exec, and a small C project built with
# `make -j2` in a direct workspace bind (:rw) versus an overlay workspace
# whose changes are thrown away (:overlay --apply never), and the default
# (overlay, safe changes applied at the end). Interleaved, root and unprivileged.
# Targets: recording <= 1.15x no recording; overlay <= 1.1x direct.
set -euo pipefail
# shellcheck source=bench/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
bench_setup

# make_project DIR: ~30 small C files, a main and a Makefile.
make_project() {
	local d=$1 i
	for i in $(seq 30); do
		printf 'int f%d(int x);\nint f%d(int x)\n{\n\tint s = 0;\n\tfor (int i = 0; i < x; i++)\n\t\ts += i * %d;\n\treturn s;\n}\n' \
			"$i" "$i" "$i" >"$d/f$i.c"
	done
	printf 'int main(void)\n{\n\treturn 0;\n}\n' >"$d/main.c"
	# shellcheck disable=SC2016 # make variables
	printf 'SRCS := $(wildcard *.c)\nprog: $(SRCS:.c=.o)\n\t$(CC) -o $@ $^\n%%.o: %%.c\n\t$(CC) -O2 -c $< -o $@\n' >"$d/Makefile"
}

LOOP='for i in $(seq 1000); do /bin/true; done'
runs=$(bench_runs 14)
for BENCH_USER in $(bench_users); do
	bench_case "1000 execs bare" sh -c "$LOOP"
	bench_case "1000 execs moat" "$MOAT" run --quiet -- sh -c "$LOOP"
	bench_case "1000 execs moat no-record" "$MOAT" run --quiet --no-record-exec -- sh -c "$LOOP"
	bench_run exec "$runs" 120
	bench_ratio exec "1000 execs recording / --no-record-exec" "1000 execs moat" \
		"1000 execs moat no-record" "<=" 1.15
	bench_ratio exec "1000 execs moat / bare" "1000 execs moat" "1000 execs bare" info -

	w=$(bench_tmpfs_workdir build)
	make_project "$w"
	chown -R "$BENCH_USER:" "$w"
	bench_case "C build bare" make -C "$w" -B -s -j2
	bench_case "C build direct" "$MOAT" run --quiet --workspace "$w:rw" -- make -B -s -j2
	bench_case "C build overlay" "$MOAT" run --quiet --workspace "$w:overlay" --apply never \
		-- make -B -s -j2
	# The default since the audit work landed: overlay, changes reviewed and
	# the safe ones applied at the end (31 objects and the program here).
	bench_case "C build overlay+apply" "$MOAT" run --quiet --workspace "$w" -- make -B -s -j2
	bench_run exec "$(bench_runs 6)" 120
	bench_ratio exec "C build overlay / direct workspace" "C build overlay" "C build direct" "<=" 1.1
	bench_ratio exec "C build overlay+apply (default) / direct" "C build overlay+apply" \
		"C build direct" info -
	bench_ratio exec "C build direct workspace / bare" "C build direct" "C build bare" info -
	echo
done
