#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Issue 15: "1,000 sequential create/exec/delete cycles leave nothing behind
# (processes, mounts, cgroups, uids, files)". (1) 1,000 cycles through
# libmoat (tests/integration/lifecycle_probe cycles: create, exec of a
# command that writes through the relay and leaves a marked process in the
# background, destroy), then the checks of tests/lib/leaks.sh (processes,
# the mount table moat ran in, cgroups below moat's, live records,
# temporaries, session files) by the run ids, plus the holder's own fds and
# children and, as root, any process of the sandboxes' host uids. (2) 100
# cycles through the sessions CLI (moat create / exec / rm). Root and
# unprivileged. Target: 0 things left. BENCH_CYCLES / BENCH_CLI_CYCLES
# override the counts (scaled by BENCH_SCALE).
set -euo pipefail

# ---- the worker: runs as the benchmark's user (bench_as_user) -------------
if [ "${1:-}" = --worker ]; then
	n=$2 m=$3 probe=$4 leaks=$5
	# shellcheck source=tests/lib/leaks.sh
	. "$leaks"
	work=$(mktemp -d "${TMPDIR:-/tmp}/moat-cycles.XXXXXX")
	cd "$work"
	mark="moat-bench-cycle-$$-$RANDOM"
	opts=(--memory 256M --pids 200)
	[ "$(id -u)" -eq 0 ] || opts=(--allow-degraded cgroup "${opts[@]}")
	cg_count() { find /sys/fs/cgroup -maxdepth 8 -type d -path '*/moat/*' 2>/dev/null | wc -l; }
	echo "mounts_before $(wc -l </proc/self/mountinfo) cgroups_before $(cg_count)"
	LC_OPTS="${opts[*]}" "$probe" cycles "$n" "$mark" >lib.out 2>lib.err || {
		echo "lib failed $(head -3 lib.err)"
		exit 1
	}
	awk '$1 == "cycle" { print $3 }' lib.out >lib.ids
	leaks_check "$mark" lib.ids 3 >lib.found
	echo "lib_ids $(sort -u lib.ids | grep -c .)"
	echo "lib_leaks $LEAKS $(head -5 lib.found | tr '\n' ';')"
	grep -E '^(cycles|fds|children|uids|control|cycle_us) ' lib.out | sed 's/^/lib_/'
	echo "lib_records $(leaks_records lib.ids)"
	# the sessions CLI
	: >cli.ids
	: >cli.ms
	fails=0
	for i in $(seq "$m"); do
		t0=$(date +%s%N)
		id=$(timeout 30 "$MOAT" create "${opts[@]}" --name "$mark-$i" 2>>cli.err) || {
			fails=$((fails + 1))
			continue
		}
		echo "$id" >>cli.ids
		out=$(timeout 30 "$MOAT" exec "$id" -- sh -c "(sleep 100; :) </dev/null >/dev/null 2>&1 & echo ok" "$mark" 2>>cli.err) || true
		[ "$out" = ok ] || fails=$((fails + 1))
		timeout 30 "$MOAT" rm --force --quiet "$id" 2>>cli.err || fails=$((fails + 1))
		echo $((($(date +%s%N) - t0) / 1000)) >>cli.ms
	done
	leaks_check "$mark" cli.ids 3 >cli.found
	echo "cli_cycles $m failed $fails"
	echo "cli_leaks $LEAKS $(head -5 cli.found | tr '\n' ';')"
	echo "cli_cycle_us median $(sort -n cli.ms | awk '{ v[NR] = $1 } END { print v[int(NR / 2) + 1] }')"
	echo "mounts_after $(wc -l </proc/self/mountinfo) cgroups_after $(cg_count)"
	cd /
	rm -rf "$work"
	exit 0
fi

# shellcheck source=bench/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
bench_setup

PROBE_SRC="$BENCH_TOP/$O/testbin/lifecycle_probe"
[ -x "$PROBE_SRC" ] || { echo "cycles: $PROBE_SRC not built (make all)" >&2; exit 1; }
cp "$PROBE_SRC" "$BENCH_STAGE/bin/"
cp "$BENCH_TOP/tests/lib/leaks.sh" "$BENCH_TOP/bench/cycles.sh" "$BENCH_STAGE/bin/"
chmod a+rx "$BENCH_STAGE/bin/lifecycle_probe" "$BENCH_STAGE/bin/leaks.sh" "$BENCH_STAGE/bin/cycles.sh"
n=$(bench_runs "${BENCH_CYCLES:-1000}")
m=$(bench_runs "${BENCH_CLI_CYCLES:-100}")

for BENCH_USER in $(bench_users); do
	echo "cycles (as $BENCH_USER: $n through the library, $m through the CLI)"
	out=$(bench_as_user env MOAT="$MOAT" bash "$BENCH_STAGE/bin/cycles.sh" --worker "$n" "$m" \
		"$BENCH_STAGE/bin/lifecycle_probe" "$BENCH_STAGE/bin/leaks.sh") || {
		bench_note cycles "the cycles failed: $(tail -2 <<<"$out")"
		continue
	}
	while IFS= read -r l; do echo "  # $l"; done <<<"$out"
	val() { awk -v k="$1" -v f="$2" '$1 == k { print $f }' <<<"$out"; }
	lib_failed=$(val lib_cycles 4)
	bench_target cycles "library: $n cycles, commands that failed" "$lib_failed" "<=" 0 ""
	bench_target cycles "library: things left after $n cycles" "$(val lib_leaks 2)" "<=" 0 ""
	fds=$(awk '$1 == "lib_fds" { print $3 - $2 }' <<<"$out")
	bench_target cycles "library: holder fds gained over $n cycles" "$fds" "<=" 0 ""
	bench_target cycles "library: holder children left" "$(val lib_children 2)" "<=" 0 ""
	if [ "$BENCH_USER" = root ]; then
		bench_target cycles "library: processes of the sandboxes' host uids" "$(val lib_uids 4)" "<=" 0 ""
	fi
	bench_target cycles "CLI: $m create/exec/rm cycles, failed steps" "$(val cli_cycles 4)" "<=" 0 ""
	bench_target cycles "CLI: things left after $m cycles" "$(val cli_leaks 2)" "<=" 0 ""
	lib_us=$(val lib_cycle_us 3)
	cli_us=$(val cli_cycle_us 3)
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' cycles "$BENCH_USER" "library create/exec/destroy" \
		"$lib_us" "$(val lib_cycle_us 5)" "$n" 0 0 0 >>"$BENCH_OUT/results.tsv"
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' cycles "$BENCH_USER" "CLI create/exec/rm" \
		"$cli_us" "$cli_us" "$m" 0 0 0 >>"$BENCH_OUT/results.tsv"
	bench_note cycles "one cycle: library $(_bench_fmt "$lib_us") ms, CLI $(_bench_fmt "$cli_us") ms (median); mount table $(val mounts_before 2) -> $(val mounts_after 2) lines, moat cgroups $(val mounts_before 4) -> $(val mounts_after 4) (all users' runs); run records kept by design: $(awk '$1 == "lib_records" { $1 = ""; print }' <<<"$out")"
done
