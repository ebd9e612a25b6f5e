#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Isolation levels (issue 17, docs/ISOLATION.md): --isolation gvisor runs
# the command under gVisor's kernel (runsc) with the same policy, audit
# stream, egress proxy and workspace review; a key the level cannot honour
# fails closed naming it; the vm level fails closed. gVisor starts in ~0.3-1 s
# here: few cases, each one or two runs (the whole file takes ~15 s).
# Network traffic goes only to a mirror on 127.0.0.3 (loopback) and the
# sandbox's own namespaces.
# shellcheck source=tests/lib/tap.sh
. "$(dirname "$0")/../lib/tap.sh"

PY=/usr/bin/python3
RUNSC=$(command -v runsc || true)
MIRROR_ADDR=127.0.0.3
MIRROR_DIR=$(mktemp -d "${TMPDIR:-/tmp}/moat-iso-mirror.XXXXXX")
chmod 755 "$MIRROR_DIR"
echo "iso-bytes-$$" >"$MIRROR_DIR/pkg.txt"
MIRROR_PID=
MIRROR_PORT=

start_mirror() {
	[ -x "$PY" ] || return 1
	"$PY" -u -m http.server 0 --bind "$MIRROR_ADDR" --directory "$MIRROR_DIR" \
		>"$MIRROR_DIR/.log" 2>&1 &
	MIRROR_PID=$!
	for _ in $(seq 50); do
		MIRROR_PORT=$(sed -n 's/.* port \([0-9]*\).*/\1/p' "$MIRROR_DIR/.log" | head -1)
		[ -n "$MIRROR_PORT" ] && return 0
		sleep 0.1
	done
	return 1
}
cleanup() {
	[ -n "$MIRROR_PID" ] && kill "$MIRROR_PID" 2>/dev/null
	rm -rf "$MIRROR_DIR"
}
trap cleanup EXIT
start_mirror || MIRROR_PORT=

need_runsc() { [ -n "$RUNSC" ] || skip "runsc not installed (scripts/deps.sh installs it)"; }
need_mirror() {
	[ -n "$MIRROR_PORT" ] || skip "cannot start the local mirror ($PY -m http.server)"
	command -v curl >/dev/null || skip "curl not installed"
}

gv() { "$MOAT" run --quiet --isolation gvisor "$@"; }

t_exit_and_kernel() {
	need_runsc
	local out rc=0
	# shellcheck disable=SC2016 # expanded inside
	out=$(gv -- /bin/sh -c 'echo out-$((6*7)); dmesg | head -1; exit 7') || rc=$?
	assert_eq 7 "$rc" "the command's exit status"
	assert_contains "$out" "out-42" "its stdout"
	# proof that it ran under gVisor: its kernel log is gVisor's own
	assert_contains "$out" "Starting gVisor" "dmesg inside is gVisor's"
	# positive control: at the process level the host kernel's log is not readable
	out=$("$MOAT" run --quiet -- /bin/sh -c 'dmesg 2>&1 | head -1' || true)
	assert_not_contains "$out" "gVisor" "the process level is not gVisor"
}

t_files_review() {
	need_runsc
	local ws="$T_OUT/ws" out log="$T_OUT/log.json"
	mkdir -p "$ws"
	echo orig >"$ws/a.txt"
	if ! is_root; then
		# unprivileged, runsc --rootless shows the user's files as owned by
		# gVisor's root: a writable workspace fails closed, naming the key
		local rc=0
		out=$(gv --workspace "$ws" -- true 2>&1) || rc=$?
		assert_eq 125 "$rc" "a writable workspace is refused unprivileged"
		assert_contains "$out" "filesystem writable workspace" "the message names the key"
		out=$(gv --workspace "$ws:ro" -- cat "$ws/a.txt")
		assert_eq orig "$out" "a read-only workspace is readable"
		return
	fi
	out=$(gv --log "$log" --workspace "$ws" --apply never -- /bin/sh -c \
		'cat a.txt; echo new >b.txt; echo changed >a.txt; cat a.txt; touch /usr/x 2>/dev/null || echo ro-usr')
	assert_eq "orig
changed
ro-usr" "$out" "reads the workspace, writes its overlay, /usr read-only"
	assert_eq orig "$(cat "$ws/a.txt")" "the host file is unchanged (held back for review)"
	[ ! -e "$ws/b.txt" ] || fail "a new file reached the host without review"
	local id
	id=$(sed -n 's/.*"run":"\([0-9a-f]*\)".*/\1/p' "$log" | head -1)
	out=$("$MOAT" diff "$id" 2>&1)
	assert_contains "$out" "b.txt" "moat diff shows the new file"
	assert_contains "$out" "a.txt" "and the changed one"
	# rw: the writes land on the host as the directory's owner
	out=$(gv --workspace "$ws:rw" -- /bin/sh -c 'echo rw >c.txt && cat c.txt' 2>/dev/null)
	assert_eq rw "$out" "rw workspace writable"
	assert_eq "rw $(stat -c %u "$ws")" "$(cat "$ws/c.txt") $(stat -c %u "$ws/c.txt")" \
		"the write is on the host, owned by the workspace's owner"
}

t_net_none() {
	need_runsc
	need_mirror
	local out
	out=$(gv -- curl -sS -m3 --noproxy '*' "http://$MIRROR_ADDR:$MIRROR_PORT/pkg.txt" 2>&1 || true)
	assert_not_contains "$out" "iso-bytes-$$" "--net none: the mirror is not reachable"
	# positive control: it answers on the host
	assert_eq "iso-bytes-$$" "$(curl -sS -m5 --noproxy '*' "http://$MIRROR_ADDR:$MIRROR_PORT/pkg.txt")"
}

t_net_allow() {
	need_runsc
	need_mirror
	local out log="$T_OUT/net.json"
	out=$(gv --log "$log" --allow-host "mirror.test:$MIRROR_PORT" \
		--resolve "mirror.test=$MIRROR_ADDR" -- /bin/sh -c "
		curl -sS -m5 http://mirror.test:$MIRROR_PORT/pkg.txt
		curl -sS -m5 --noproxy '*' http://mirror.test:$MIRROR_PORT/pkg.txt
		curl -sS -m5 --noproxy '*' http://$MIRROR_ADDR:$MIRROR_PORT/pkg.txt || echo direct-refused
		curl -fsS -m5 http://other.test:$MIRROR_PORT/pkg.txt || echo other-refused" 2>/dev/null)
	assert_eq "iso-bytes-$$
iso-bytes-$$
direct-refused
other-refused" "$out" "proxy and transparent capture reach the mirror; direct and other are refused"
	local l
	l=$(cat "$log")
	assert_contains "$l" '"proto":"http","host":"mirror.test"' "the proxied request is recorded"
	assert_contains "$l" '"proto":"transparent","host":"mirror.test"' "the captured one too"
	assert_contains "$l" '"host":"other.test"' "the denied one too"
	assert_contains "$l" '"action":"deny"' "as denied"
	assert_contains "$l" '"isolation":"gvisor"' "the start event names the level"
	assert_contains "$l" '"records":{"exec":"unavailable' "and says exec records are unavailable"
}

t_refused_keys() {
	need_runsc
	local out rc=0
	# honoured with the same meaning: --fsize (RLIMIT_FSIZE) and --disk
	# (gVisor's tmpfs size=); positive control: without them both writes pass
	# shellcheck disable=SC2016 # expanded inside
	out=$(gv --fsize 100k --disk 1m -- /bin/sh -c '
		(head -c 200000 /dev/zero >/tmp/f) 2>/dev/null && echo fsize-passed
		head -c 400000 /dev/zero >"$HOME/a" && head -c 400000 /dev/zero >"$HOME/b" &&
			head -c 400000 /dev/zero >"$HOME/c" 2>/dev/null && echo disk-passed
		true' 2>/dev/null)
	assert_eq "" "$out" "--fsize and --disk hold under gVisor"
	# shellcheck disable=SC2016 # expanded inside
	out=$(gv -- /bin/sh -c '
		(head -c 200000 /dev/zero >/tmp/f) 2>/dev/null && echo fsize-passed
		head -c 400000 /dev/zero >"$HOME/a" && head -c 400000 /dev/zero >"$HOME/b" &&
			head -c 400000 /dev/zero >"$HOME/c" 2>/dev/null && echo disk-passed
		true' 2>/dev/null)
	assert_eq "fsize-passed
disk-passed" "$out" "positive control: the same writes pass without the limits"
	out=$(gv --deny-syscall personality -- true 2>&1) || rc=$?
	assert_eq 125 "$rc" "a key the level cannot honour: exit 125"
	assert_contains "$out" "syscalls.deny" "the message names the key"
	rc=0
	out=$(gv --tty -- true 2>&1) || rc=$?
	assert_eq 125 "$rc" "--tty: exit 125"
	assert_contains "$out" "process.tty always" "named"
	# positive control: the same policy at the process level runs
	"$MOAT" run --quiet --deny-syscall personality -- true || fail "the process level refused it"
}

t_vm() {
	local out rc=0
	# (the vm level itself: tests/integration/vm.sh)
	out=$("$MOAT" run --isolation vm --vm-accel any --allow-host example.test:443 -- true 2>&1) || rc=$?
	assert_eq 125 "$rc" "the vm level fails closed on a key it cannot honour"
	assert_contains "$out" "isolation vm" "and says so"
	out=$("$MOAT" policy show --isolation vm)
	assert_contains "$out" "level        vm" "moat policy show prints the level"
	out=$("$MOAT" policy show --isolation gvisor --deny-syscall personality)
	assert_contains "$out" "syscalls.deny: refused (IN USE: the run fails)" "and what it refuses"
}

# run_of LOG: the run id in an audit log.
run_of() { sed -n 's/.*"run":"\([0-9a-f]*\)".*/\1/p' "$1" 2>/dev/null | head -1; }

t_no_leftovers() {
	need_runsc
	local log="$T_OUT/left.json" id
	gv --log "$log" -- /bin/sh -c 'sleep 30 & exit 0'
	id=$(run_of "$log")
	[ -n "$id" ] || fail "no run id in the log"
	[ -z "$(ls -d "${TMPDIR:-/tmp}/moat-gvisor-$id-"* 2>/dev/null)" ] || fail "the bundle was left"
	# nothing of runsc survives the run (a background sleep included)
	[ -z "$(pgrep -f "runsc.*moat-gvisor-$id" || true)" ] || fail "runsc survived the run"
	# SIGKILL of moat itself: its init inside gVisor sees the channel close
	# and the container, runsc and its gofer end with it
	log="$T_OUT/kill.json"
	"$MOAT" run --quiet --log "$log" --isolation gvisor -- sleep 60 &
	local pid=$!
	id=
	for _ in $(seq 100); do
		id=$(run_of "$log")
		[ -n "$id" ] && pgrep -f "runsc-sandbox.*moat-gvisor-$id" >/dev/null && break
		sleep 0.1
	done
	pgrep -f "runsc-sandbox.*moat-gvisor-$id" >/dev/null ||
		fail "positive control: the run's runsc sandbox was not seen running"
	kill -9 "$pid"
	wait "$pid" 2>/dev/null || true
	for _ in $(seq 50); do
		pgrep -f "runsc.*moat-gvisor-$id" >/dev/null || break
		sleep 0.1
	done
	[ -z "$(pgrep -f "runsc.*moat-gvisor-$id" || true)" ] || fail "runsc survived moat's SIGKILL"
	# the crashed run's bundle (moat could not remove it)
	rm -rf "${TMPDIR:-/tmp}/moat-gvisor-$id-"*
}

run_test "gvisor: exit status, stdout, gVisor's kernel" t_exit_and_kernel
run_test "gvisor: workspace overlay, review, rw owner" t_files_review
run_test "gvisor: --net none has no network" t_net_none
run_test "gvisor: --net allow through moat's proxy, recorded" t_net_allow
run_test "gvisor: --fsize/--disk hold; keys it cannot honour fail closed naming the key" t_refused_keys
run_test "vm: a key it cannot honour fails closed" t_vm
run_test "gvisor: no bundle or runsc process left, even after SIGKILL of moat" t_no_leftovers
t_done
