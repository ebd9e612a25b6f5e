#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The lifecycle API (issue 14): sandboxes created, used by several processes
# and destroyed through libmoat (tests/integration/lifecycle_probe.c, linked
# against libmoat.a): two sandboxes in one process destroyed in either order,
# concurrent processes with their own statuses, environment, working
# directory, signals and time limits per process, one poll() loop driving
# two sandboxes, destroy while processes run, and SIGKILL of the process
# holding a sandbox: nothing of it survives.
# shellcheck source=tests/lib/tap.sh
. "$(dirname "$0")/../lib/tap.sh"

LC="${MOAT_TESTBIN:-$(dirname "$MOAT")/testbin}/lifecycle_probe"

need_lc() { [ -x "$LC" ] || fail "the lifecycle probe $LC was not built"; }

# The value after KEY on the probe's line starting with KEY.
line() {
	local l
	l=$(grep -m1 -F -- "$1 " "$2" | grep -m1 -- "^$1 ") || true
	echo "${l#"$1 "}"
}

t_two() {
	need_lc
	local order
	for order in ab ba; do
		"$LC" two "$order" >"out-$order" 2>"err-$order" || fail "probe: $(cat "err-$order")"
		assert_eq "from-a exit 0" "$(line a-wrote "out-$order")" "$order: a wrote and read its file"
		assert_eq "none exit 0" "$(line b-reads "out-$order")" "$order: b does not see a's file"
		# b's /proc as ls read it: its init, the sh and ls; a's sleep is not there
		assert_eq "3 exit 0" "$(line b-procs "out-$order")" "$order: b sees only its own processes"
		assert_contains "$(line ids "out-$order")" differ "$order: two run ids"
		local first second
		first=$(grep '^destroyed' "out-$order" | head -1 | cut -d' ' -f2)
		second=$(grep '^destroyed' "out-$order" | tail -1 | cut -d' ' -f2)
		assert_eq "${order:0:1} ${order:1:1}" "$first $second" "destroyed in the order $order"
	done
}

t_two_control() {
	need_lc
	# positive control for "b does not see a's file": in ONE sandbox the
	# second process does see what the first wrote (the probe reads the same
	# path in a's own sandbox through its 'concurrent' scenario's /tmp/go)
	"$LC" concurrent >out 2>err || fail "probe: $(cat err)"
	assert_eq "0" "$(line go out | sed 's/exit //')" "touch /tmp/go in the sandbox"
	# the five processes waited for /tmp/go: they saw the file of another process
	for i in 0 1 2 3 4; do
		assert_eq "out p$i exit $((10 + i))" "$(line "proc $i" out)" "process $i: its output and status"
	done
}

t_exec_options() {
	need_lc
	"$LC" concurrent >out 2>err || fail "probe: $(cat err)"
	# env over the sandbox's, cwd, the policy's user
	assert_eq "bar baz|/elsewhere|/tmp|agent exit 0" "$(line env out)" "env, cwd and user of one exec"
	assert_eq "-2 exec" "$(line notfound out)" "a missing command: -ENOENT at the exec step"
	assert_eq "exit 0" "$(line after out)" "the sandbox still works after a failed exec"
	assert_eq "15 exit 143" "$(line signaled out)" "SIGTERM to one process"
	assert_eq "reason timeout exit 124" "$(line timeout out)" "a per-exec time limit"
}

t_loop() {
	need_lc
	"$LC" loop >out 2>err || fail "probe: $(cat err)"
	assert_eq "done 1 out first exit 0" "$(line "loop 0" out)" "sandbox a through poll + dispatch"
	assert_eq "done 1 out second exit 7" "$(line "loop 1" out)" "sandbox b through poll + dispatch"
}

# The processes whose command line holds MARK (other than the probe itself).
marked() { pgrep -f -- "$1" | grep -vx "${2:-0}" || true; }

t_destroy_running() {
	need_lc
	local mark="moat-lc-destroy-$$-$RANDOM"
	"$LC" destroy-running "$mark" >out 2>err || fail "probe: $(cat err)"
	assert_contains "$(cat out)" running "the processes were started"
	assert_contains "$(cat out)" "destroyed s" "destroy returned"
	[ -z "$(marked "$mark")" ] || fail "processes survived destroy: $(marked "$mark")"
}

t_sigkill_holder() {
	need_lc
	local mark="moat-lc-hold-$$-$RANDOM" pid id left
	"$LC" hold "$mark" >out 2>err &
	pid=$!
	for _ in $(seq 100); do grep -q '^ready' out && break; sleep 0.1; done
	grep -q '^ready' out || { kill -9 "$pid"; fail "the holder never got ready: $(cat err)"; }
	id=$(line ready out)
	# positive control: the sandbox's processes are there before the kill
	[ -n "$(marked "$mark" "$pid")" ] || { kill -9 "$pid"; fail "no process of the sandbox found"; }
	kill -9 "$pid"
	wait "$pid" 2>/dev/null || true
	for _ in $(seq 50); do
		left=$(marked "$mark" "$pid")
		[ -z "$left" ] && break
		sleep 0.1
	done
	[ -z "$left" ] || fail "processes of the sandbox survived its holder's SIGKILL: $left"
	"$MOAT" gc --quiet || fail "moat gc failed"
	if grep -F "$id" /proc/self/mountinfo; then fail "mounts of $id left"; fi
	if find /sys/fs/cgroup -maxdepth 6 -name "*$id*" 2>/dev/null | grep .; then
		fail "a cgroup of $id is left after moat gc"
	fi
}

# Issue 15: sequential create / exec / destroy cycles through the library
# leave nothing behind (processes, mounts, cgroups, uids, records of live
# runs, temporaries); bench/cycles.sh runs 1,000. A held sandbox is what the
# checks do find (positive control), and after its holder's SIGKILL
# `moat gc` leaves nothing of it either.
t_cycles() {
	need_lc
	# shellcheck source=tests/lib/leaks.sh
	. "$MOAT_TEST_DIR/lib/leaks.sh"
	local mark="moat-lc-cycles-$$-$RANDOM" pid id found
	export XDG_STATE_HOME="$T_OUT/state"
	export LC_OPTS="--memory 256M --pids 200"
	is_root || LC_OPTS="--allow-degraded cgroup $LC_OPTS"
	LC_OPTS=$LC_OPTS "$LC" hold "$mark-ctl" >hold 2>err &
	pid=$!
	for _ in $(seq 100); do grep -q '^ready' hold && break; sleep 0.1; done
	grep -q '^ready' hold || { kill -9 "$pid"; fail "the holder never got ready: $(cat err)"; }
	line ready hold >ctl.ids
	leaks_check "$mark-ctl" ctl.ids >found
	found=$(cat found)
	kill -9 "$pid"
	wait "$pid" 2>/dev/null || true
	assert_contains "$found" "process " "control: a held sandbox's processes are found"
	assert_contains "$found" "live " "control: a held sandbox's live record is found"
	if is_root; then assert_contains "$found" "cgroup " "control: a held sandbox's cgroup is found"; fi
	for _ in $(seq 50); do
		leaks_check "$mark-ctl" ctl.ids >found
		grep -q '^process' found || break
		sleep 0.1
	done
	"$MOAT" gc --quiet || fail "moat gc failed"
	leaks_check "$mark-ctl" ctl.ids 3 >found
	assert_eq 0 "$LEAKS" "left after the holder's SIGKILL and moat gc: $(cat found)"
	# the cycles
	"$LC" cycles 50 "$mark" >out 2>err || fail "probe: $(cat err)"
	awk '$1 == "cycle" { print $3 }' out >ids
	assert_eq 50 "$(sort -u ids | grep -c .)" "50 sandboxes, 50 run ids"
	assert_eq "50 failed 0" "$(line cycles out)" "each cycle's command ran and wrote ok"
	local fds
	fds=$(line fds out)
	assert_eq "${fds% *}" "${fds#* }" "the holder's fds before and after"
	assert_eq 0 "$(line children out)" "no child of the holder is left"
	assert_contains "$(line control out)" "children 1" "control: the live sandbox's init is a child"
	if is_root; then
		# each sandbox had its own host uid; none of them runs anything now
		assert_eq "processes 0" "$(line uids out | cut -d' ' -f2-)" "processes of the sandboxes' uids"
		[[ "$(line control out)" =~ uid_processes\ [1-9] ]] || fail "control: the live sandbox's uid was not seen: $(line control out)"
	fi
	leaks_check "$mark" ids 3 >found
	assert_eq 0 "$LEAKS" "left behind by 50 cycles: $(head -20 found)"
	echo "# $(line cycle_us out); kept: $(leaks_records ids)" >&2
}

t_files() {
	need_lc
	"$LC" files >out 2>err || fail "probe: $(cat err)"
	assert_eq "0" "$(line write out)" "write a file (a space in its name)"
	assert_eq "0 len 14 same 1 cut 0" "$(line read out)" "read it back byte for byte"
	assert_eq "0 len 5 cut 1" "$(line short out)" "a read bounded at 5 bytes says it was cut"
	assert_eq "0 type 0 size 14 name a file" "$(line stat out)" "stat"
	assert_eq "0 seen 2" "$(line list out)" "list the directory"
	assert_eq "0" "$(line remove out)" "remove"
	assert_eq "-2" "$(line gone out)" "a removed file is gone (-ENOENT)"
	# the sandbox's own limits hold: /usr is read-only inside
	assert_eq "-5" "$(line outside out)" "writing where the sandbox cannot fails"
	assert_eq "-22" "$(line relative out)" "a relative path is refused"
}

t_eof_other_sandbox() {
	need_lc
	"$LC" eof >out 2>err || fail "probe: $(cat err)"
	# without the init's closing of what it inherited, the second sandbox's
	# init holds the first's stdin relay end: cat never sees EOF (124)
	assert_eq "through exit 0" "$(line eof out)" "stdin EOF with a second sandbox created meanwhile"
}

run_test "two sandboxes in one process, destroyed in either order" t_two
run_test "concurrent processes in one sandbox, each with its status" t_two_control
run_test "exec: env, cwd, missing command, signal, time limit" t_exec_options
run_test "one poll() loop drives two sandboxes" t_loop
run_test "destroy while processes run leaves none" t_destroy_running
run_test "a sandbox's init holds nothing of another sandbox (stdin EOF)" t_eof_other_sandbox
run_test "files of a sandbox: write, read, stat, list, remove" t_files
run_test "SIGKILL of the holding process: every process of the sandbox dies" t_sigkill_holder
run_test "50 create/exec/destroy cycles leave nothing behind; gc after a crash" t_cycles
t_done
