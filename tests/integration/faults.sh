#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Fault injection (issue 8): moat SIGKILLed at every stage of setup and during
# the run leaves nothing behind once `moat gc` ran; a full, read-only or
# fd-starved state directory gives a clear error and nothing half-set-up
# runs; 50 sandboxes in parallel and 500 in sequence stay isolated and moat's
# resources return to baseline; bad values of every flag and policy key give
# exit 2 naming the flag or key, and nothing crashes.
# Stages are hit deterministically with the test-only hook
# MOAT_TEST_STALL_AT=<stage> (honoured only with MOAT_TEST_LAYERS=1).
# Everything is judged by the runs' own ids and pids: other work may run on
# this machine at the same time.
# shellcheck source=../lib/tap.sh
source "${MOAT_TEST_DIR:-$(dirname "$0")/..}/lib/tap.sh"

# Unprivileged runs keep their state below the test's own directory.
if ! is_root; then
	export XDG_STATE_HOME="$T_OUT/xdg"
	mkdir -p "$XDG_STATE_HOME"
fi
live_dir() { if is_root; then echo /run/moat/live; else echo "$XDG_STATE_HOME/moat/live"; fi; }
runs_dir() { if is_root; then echo /var/lib/moat/runs; else echo "$XDG_STATE_HOME/moat/runs"; fi; }

# All descendants of a pid (the pid itself excluded).
descendants() {
	local c
	for c in $(pgrep -P "$1" 2>/dev/null || true); do
		echo "$c"
		descendants "$c"
	done
}

# field FILE KEY: a JSON list or value of run.json, one item a line.
field() {
	python3 -c 'import json, sys
v = json.load(open(sys.argv[1])).get(sys.argv[2])
print("\n".join(map(str, v)) if isinstance(v, list) else v)' "$1" "$2"
}

# The state entry of the run whose supervisor is PID (waits up to 5 s).
entry_of() {
	local f
	for _ in $(seq 50); do
		for f in "$(live_dir)"/*/run.json; do
			[ -f "$f" ] || continue
			if grep -q "\"pid\":$1," "$f" 2>/dev/null; then
				dirname "$f"
				return 0
			fi
		done
		sleep 0.1
	done
	return 1
}

# Everything a run may leave, by its id: after `moat gc` nothing may remain.
assert_run_gone() {
	local id=$1 cgs=$2 tmps=$3 x
	[ ! -e "$(live_dir)/$id" ] || fail "state entry $(live_dir)/$id left after moat gc"
	for x in $cgs; do [ ! -e "$x" ] || fail "cgroup $x left after moat gc"; done
	for x in $tmps; do [ ! -e "$x" ] || fail "temporary directory $x left after moat gc"; done
	if grep -F "$id" /proc/self/mountinfo; then fail "mounts of run $id left on the host"; fi
	if grep -F "$id" /proc/net/unix; then fail "sockets of run $id left on the host"; fi
	if find /sys/fs/cgroup -maxdepth 6 -name "*$id*" 2>/dev/null | grep .; then
		fail "a cgroup named after run $id is left"
	fi
}

# Limits that need cgroups, where this user can have them (otherwise moat
# refuses --pids: that case is limits.sh's).
limit_opts() {
	if [ ! -f limits.ok ] && [ ! -f limits.no ]; then
		if "$MOAT" run --quiet --pids 64 --memory 256M -- /bin/true >/dev/null 2>&1; then
			touch limits.ok
		else
			touch limits.no
		fi
	fi
	if [ -f limits.ok ]; then echo "--pids 64 --memory 256M"; fi
}

# A workspace (overlay by default: moat keeps an upper layer) and an /output.
run_opts() {
	local tag=$1
	mkdir -p "ws-$tag"
	echo seed >"ws-$tag/seed"
	chmod 777 "$PWD" "ws-$tag"
	chmod 666 "ws-$tag/seed"
	echo "--workspace $PWD/ws-$tag --output $PWD/out-$tag $(limit_opts)"
}

# kill_at STAGE: SIGKILL moat stalled at STAGE ("running": while the command
# runs), then check that nothing of the run survives.
kill_at() {
	local stage=$1 marker pid entry id cgs tmps kids k opts
	marker="moat-fault-$stage-$$-$RANDOM"
	opts=$(run_opts "$stage")
	if [ "$stage" = running ]; then
		# shellcheck disable=SC2086 # word-split options
		"$MOAT" run --quiet $opts -- /bin/sh -c 'sleep 300' "$marker" >out 2>err &
		pid=$!
		for _ in $(seq 100); do pgrep -f -- "$marker" >/dev/null && break; sleep 0.1; done
		pgrep -f -- "$marker" >/dev/null || { kill -9 "$pid"; fail "the command never ran: $(cat err)"; }
	else
		# shellcheck disable=SC2086 # word-split options
		MOAT_TEST_LAYERS=1 MOAT_TEST_STALL_AT=$stage "$MOAT" run --quiet $opts -- /bin/sh -c 'sleep 300' \
			"$marker" >out 2>err &
		pid=$!
		for _ in $(seq 100); do grep -q "test stall at $stage" err && break; sleep 0.1; done
		grep -q "test stall at $stage" err || { kill -9 "$pid"; fail "moat never reached $stage: $(cat err)"; }
	fi
	entry=$(entry_of "$pid") || { kill -9 "$pid"; fail "no state entry for moat pid $pid"; }
	id=${entry##*/}
	cgs=$(field "$entry/run.json" cgroups)
	tmps=$(field "$entry/run.json" tmpdirs)
	kids=$(descendants "$pid")
	echo "# $stage: moat $pid, run $id, children: $(echo $kids), cgroups: $(echo $cgs), tmpdirs: $(echo $tmps)"
	kill -9 "$pid"
	wait "$pid" 2>/dev/null || true
	for _ in $(seq 50); do
		k=""
		for x in $kids; do if kill -0 "$x" 2>/dev/null; then k="$k $x"; fi; done
		[ -z "$k" ] && break
		sleep 0.1
	done
	if [ -n "$k" ]; then
		ps -o pid,ppid,args -p "${k# }" || true
		# shellcheck disable=SC2086 # our own run's processes
		kill -9 $k 2>/dev/null || true
		fail "processes of the run survived moat's SIGKILL:$k"
	fi
	if pgrep -f -- "$marker"; then fail "the command survived moat's SIGKILL"; fi
	"$MOAT" gc --quiet || fail "moat gc failed"
	assert_run_gone "$id" "$cgs" "$tmps"
}

t_kill_prepared() { kill_at prepared; }
t_kill_cloned() { kill_at cloned; }
t_kill_child() { kill_at child; }
t_kill_init_go() { kill_at init-go; }
t_kill_init_mounted() { kill_at init-mounted; }
t_kill_init_restricted() { kill_at init-restricted; }
t_kill_started() { kill_at started; }
t_kill_running() { kill_at running; }

# The stall hook is test-only: without MOAT_TEST_LAYERS=1 it does nothing.
t_stall_gated() {
	local out
	out=$(env -u MOAT_TEST_LAYERS MOAT_TEST_STALL_AT=prepared timeout 20 "$MOAT" run --quiet -- /bin/echo ran 2>&1) ||
		fail "moat run failed or stalled: $out"
	assert_eq ran "$out"
}

run_test "SIGKILL after the supervisor's preparation (cgroups, state, log)" t_kill_prepared
run_test "SIGKILL right after clone" t_kill_cloned
run_test "SIGKILL after id maps and cgroup attach, before go" t_kill_child
run_test "SIGKILL while init starts" t_kill_init_go
run_test "SIGKILL after init's mounts" t_kill_init_mounted
run_test "SIGKILL after init's Landlock and seccomp" t_kill_init_restricted
run_test "SIGKILL after setup, command starting" t_kill_started
run_test "SIGKILL while the command runs" t_kill_running
run_test "the stall hook needs MOAT_TEST_LAYERS=1" t_stall_gated
t_done
