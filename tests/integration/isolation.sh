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
# shellcheck source=tests/lib/tlsapi.sh
. "$(dirname "$0")/../lib/tlsapi.sh"

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

# exec_keys LOG: the field names of the log's exec events, one line each.
exec_keys() { jq -c 'select(.type == "exec") | del(.v, .seq, .ts, .run) | keys' "$1" | sort -u; }

t_exit_and_kernel() {
	need_runsc
	local out rc=0 log="$T_OUT/exec.json" plog="$T_OUT/exec-process.json" l
	# shellcheck disable=SC2016 # expanded inside
	out=$(gv --log "$log" -- /bin/sh -c 'echo out-$((6*7)); dmesg | head -1
		cd /tmp && env PATH=/nonexistent:/usr/bin true "a b" "" && exit 7') || rc=$?
	assert_eq 7 "$rc" "the command's exit status"
	assert_contains "$out" "out-42" "its stdout"
	# proof that it ran under gVisor: its kernel log is gVisor's own
	assert_contains "$out" "Starting gVisor" "dmesg inside is gVisor's"
	# positive control: at the process level the host kernel's log is not readable
	# shellcheck disable=SC2016 # expanded inside
	out=$("$MOAT" run --quiet --log "$plog" -- /bin/sh -c 'dmesg 2>&1 | head -1
		cd /tmp && env PATH=/nonexistent:/usr/bin true "a b" "" && exit 7' || true)
	assert_not_contains "$out" "gVisor" "the process level is not gVisor"
	# exec records from gVisor's trace session: every program, its argv,
	# cwd and parent, in the process level's shape; the PATH step that
	# found nothing is not one
	l=$(jq -c 'select(.type == "exec") | [.path, .argv, .cwd, .syscall, .ppid > 0]' "$log")
	assert_contains "$l" '["/bin/sh",["/bin/sh","-c",' "the command's exec"
	assert_contains "$l" '["/usr/bin/dmesg",["dmesg"],"/home/agent","execve",true]' "a child's, with its parent"
	assert_contains "$l" '["/usr/bin/true",["true","a b",""],"/tmp","execve",true]' \
		"argv and cwd as given (env's exec after its PATH search)"
	assert_not_contains "$l" "/nonexistent/true" "the PATH step that failed is not recorded"
	assert_contains "$(cat "$log")" '"records":{"exec":"recorded"' "the start event says recorded"
	assert_eq "$(exec_keys "$plog")" "$(exec_keys "$log")" "the same fields as at the process level"
	assert_eq "$(jq -c 'select(.type == "exec") | .path' "$plog" | sort)" \
		"$(jq -c 'select(.type == "exec") | .path' "$log" | sort)" "and the same execs"
	assert_not_contains "$(cat "$log")" '"cause":"exec_records"' "nothing dropped"
	# control: with --no-record-exec there are none, and the start event says off
	gv --log "$T_OUT/off.json" --no-record-exec -- /bin/sh -c 'env true' >/dev/null
	assert_eq 0 "$(jq -c 'select(.type == "exec")' "$T_OUT/off.json" | wc -l)" "--no-record-exec: none"
	assert_contains "$(cat "$T_OUT/off.json")" '"records":{"exec":"off"' "and the start event says so"
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
	# a planted git hook is held for review (the default --apply safe),
	# an ordinary file is applied; control: moat apply makes the hook land
	local hw="$T_OUT/hookws"
	mkdir -p "$hw/.git/hooks"
	gv --log "$T_OUT/hook.json" --workspace "$hw" -- /bin/sh -c \
		'printf "#!/bin/sh\necho pwned\n" >.git/hooks/pre-commit; chmod +x .git/hooks/pre-commit
		echo plain >p.txt' 2>/dev/null
	assert_eq plain "$(cat "$hw/p.txt")" "an ordinary new file is applied"
	[ ! -e "$hw/.git/hooks/pre-commit" ] || fail "the planted hook was applied unreviewed"
	id=$(run_of "$T_OUT/hook.json")
	assert_contains "$("$MOAT" diff "$id")" "FLAGGED: git hook" "moat diff flags it"
	"$MOAT" apply "$id" >/dev/null
	[ -x "$hw/.git/hooks/pre-commit" ] || fail "control: moat apply did not apply the hook"
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
	assert_contains "$l" '"records":{"exec":"recorded"' "and that execs are recorded"
}

# A credential injected without entering the sandbox (as credentials.sh at
# the process level): an HTTPS upstream on 127.0.0.2 with a test CA records
# the Authorization it receives; inside gVisor there is only the placeholder.
t_credential() {
	need_runsc
	command -v openssl >/dev/null || skip "openssl not installed"
	local pki="$T_OUT/pki" real="real-token-$$-$RANDOM-s3cr3t" out port up
	mkdir -p "$pki"
	tls_api_start "$pki" "$pki/server.out"
	up=$TLS_API_PID
	for _ in $(seq 100); do
		[ -s "$pki/port" ] && break
		sleep 0.05
	done
	port=$(cat "$pki/port" 2>/dev/null) || { kill "$up"; fail "upstream: $(cat "$pki/server.out")"; }
	# shellcheck disable=SC2016 # expanded inside
	out=$(GH_TOKEN=$real gv --log "$T_OUT/cred.json" --allow-host "api.test:$port" \
		--resolve api.test=127.0.0.2 --upstream-ca "$pki/ca.pem" --secret GH_TOKEN@api.test \
		-- /bin/sh -c 'curl -sS --fail "https://api.test:'"$port"'/c" -H "Authorization: Bearer $GH_TOKEN"
		echo "ENV=$GH_TOKEN"; cat /proc/[0-9]*/environ /proc/[0-9]*/cmdline 2>/dev/null
		tar cf - /etc /tmp "$HOME" 2>/dev/null; echo END' 2>&1) || true
	kill "$up" 2>/dev/null || true
	wait "$up" 2>/dev/null || true
	assert_contains "$(cat "$pki/seen" 2>/dev/null)" "/c	Bearer $real" "the upstream received the real value"
	assert_contains "$out" "ENV=moat-ph-GH_TOKEN-" "the sandbox holds a placeholder"
	assert_contains "$out" "END" "the dump of its environment and files finished"
	assert_not_contains "$out" "$real" "the real value is nowhere inside gVisor"
	assert_not_contains "$(cat "$T_OUT/cred.json")" "$real" "nor in the audit log"
	# control: the value is in moat's own environment, so a leak would show
	GH_TOKEN=$real sh -c 'tr "\0" "\n" < /proc/$$/environ' | grep -q "$real" || fail "control"
}

# A full --disk area under gVisor: the workspace overlay's upper layer (a
# host tmpfs the supervisor holds) is said as at the process level; /tmp is
# gVisor's own tmpfs, not seen from the host, and the start event's records
# say so (no silent gap).
t_disk_full_partial() {
	need_runsc
	local out ws ws_opt=()
	ws=$(mktemp -d "$T_OUT/gws.XXXXXX")
	# unprivileged a writable workspace is refused under gVisor (t_files_review):
	# there only the gap is checked
	is_root && ws_opt=(--workspace "$ws")
	out=$("$MOAT" run --isolation gvisor --disk 8M "${ws_opt[@]}" --log "$T_OUT/gd.jsonl" \
		-- /bin/sh -c "head -c 16M /dev/zero >'$ws/w' 2>/dev/null
			head -c 16M /dev/zero >/tmp/t 2>/dev/null; true" 2>&1)
	if is_root; then
		assert_contains "$out" "moat: limits: disk limit 8 MiB reached on $ws (full: "
		assert_contains "$(cat "$T_OUT/gd.jsonl")" \
			"\"type\":\"limit\",\"what\":\"disk\",\"path\":\"$ws\""
	fi
	assert_not_contains "$out" "reached on /tmp " "gVisor's own /tmp is not seen"
	assert_contains "$(cat "$T_OUT/gd.jsonl")" \
		'"disk":"partial: /output and the workspace overlay only; /tmp, /dev/shm, home and --tmpfs are gVisor'"'"'s own tmpfs'
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

# --rootfs at the gvisor level: the tree is the container's system (a
# busybox-static tree: no libc, so moat's init runs through the host's
# loader bound at /.moat/lib), opened again in the holder's mount namespace
# (a source opened beneath the supervisor's fd is a mount of the host's
# namespace, and open_tree refused it: the run failed with EINVAL before).
# Control: without --rootfs the host's /usr/bin/python3 is there.
t_rootfs() {
	need_runsc
	local bb root="$T_OUT/gv-rootfs" out a
	bb=$(command -v busybox || true)
	[ -n "$bb" ] || skip "busybox-static not installed (scripts/deps.sh installs it)"
	mkdir -p "$root/bin"
	cp "$bb" "$root/bin/busybox"
	for a in sh cat dmesg head; do ln -sf busybox "$root/bin/$a"; done
	echo "from-the-rootfs" >"$root/bin/marker"
	chmod -R a+rX "$root"
	out=$(gv --rootfs "$root" -- /bin/sh -c 'cat /bin/marker; dmesg | head -1
		[ -e /usr/bin/python3 ] && echo host-usr; true' 2>&1)
	assert_contains "$out" "from-the-rootfs" "the rootfs is the system"
	assert_contains "$out" "Starting gVisor" "under gVisor's kernel"
	assert_not_contains "$out" "host-usr" "the host's /usr is not there"
	out=$(gv -- /bin/sh -c '[ -e /usr/bin/python3 ] && echo host-usr; true')
	assert_contains "$out" "host-usr" "control: without --rootfs the host's /usr is"
}

# moat selftest --isolation gvisor: the battery's filesystem and network
# probes, each judged against its own positive control (run outside moat,
# never as host root: "held" means the control found the attempt open and
# gVisor's sandbox blocked or contained it); the other probes are skipped
# with the reason, and the process level still runs them all.
t_selftest() {
	need_runsc
	local out rc=0 p
	out=$("$MOAT" selftest --isolation gvisor 2>&1) || rc=$?
	assert_eq 0 "$rc" "moat selftest --isolation gvisor: nothing escaped, nothing inconclusive"
	for p in rt008_mount rt009_chroot rt023_procleak rt024_procwrite rt030_fds rt031_exe \
		rt033_robind rt037_propagation rt074_creds rt011_netlink rt027_sockets; do
		assert_contains "$out" "[$p]: held" "$p held (its control showed it open)"
	done
	assert_contains "$out" "11 held, 23 skipped, 0 inconclusive, 0 ESCAPED" "the battery's summary"
	assert_contains "$out" "[rt005_userns]: skipped" "a kernel-surface probe is skipped"
	assert_contains "$out" "not in the gvisor level's battery" "with the reason"
	# control: at the process level the same probe is not skipped
	out=$("$MOAT" selftest --only rt005_userns 2>&1) || true
	assert_contains "$out" "[rt005_userns]: held" "the process level runs it"
}

t_vm() {
	local out rc=0
	# (the vm level itself: tests/integration/vm.sh)
	out=$("$MOAT" run --isolation vm --vm-accel any --net host -- true 2>&1) || rc=$?
	assert_eq 125 "$rc" "the vm level fails closed on a key it cannot honour"
	assert_contains "$out" "isolation vm" "and says so"
	out=$("$MOAT" policy show --isolation vm)
	assert_contains "$out" "level        vm" "moat policy show prints the level"
	out=$("$MOAT" policy show --isolation gvisor --deny-syscall personality)
	assert_contains "$out" "syscalls.deny: refused (IN USE: the run fails)" "and what it refuses"
}

# run_of LOG: the run id in an audit log.
run_of() { sed -n 's/.*"run":"\([0-9a-f]*\)".*/\1/p' "$1" 2>/dev/null | head -1; }

# moat serve at the gvisor level: runsc's start is waited for in the
# server's loop (holder_wait.c), so health is answered meanwhile, for a
# create and for a reset (which, without layered state, starts a fresh
# sandbox); counted, not timed (serve_client.py vm_create: a blocking
# server answers one health request during it).
t_serve() {
	need_runsc
	command -v python3 >/dev/null || skip "python3 not installed"
	local sock=$PWD/api/serve.sock srv run deg=()
	is_root || deg=(--allow-degraded cgroup)
	mkdir -p api
	"$MOAT" serve --socket "$sock" --isolation gvisor ${deg[@]+"${deg[@]}"} 2>srv.err &
	srv=$!
	# shellcheck disable=SC2064 # this server, whatever happens to the test
	trap "kill -KILL $srv 2>/dev/null || true" EXIT
	for _ in $(seq 1 300); do
		grep -q "listening on" srv.err 2>/dev/null && break
		kill -0 "$srv" 2>/dev/null || fail "the server ended: $(cat srv.err)"
		sleep 0.1
	done
	grep -q "listening on" srv.err || fail "the server did not start: $(cat srv.err)"
	python3 "$(dirname "$0")/serve_client.py" vm_create --socket "$sock" >out 2>err ||
		fail "$(grep -m1 FAIL out || tail -3 out) $(tail -5 err) $(tail -5 srv.err)"
	assert_contains "$(tail -1 out)" "all ok" "the gvisor level under moat serve"
	[ "$(awk '/^run /{print $2}' out | sort -u | wc -l)" = 2 ] || fail "no two run ids: $(cat out)"
	for run in $(awk '/^run /{print $2}' out); do
		for _ in $(seq 50); do
			pgrep -f "runsc.*moat-gvisor-$run" >/dev/null || break
			sleep 0.1
		done
		[ -z "$(pgrep -f "runsc.*moat-gvisor-$run" || true)" ] ||
			fail "runsc of run $run survived the reset or the delete"
	done
	kill -TERM "$srv"
	local rc=0
	wait "$srv" || rc=$?
	assert_eq 0 "$rc" "the server ends cleanly on SIGTERM"
}

# bundles_of ID: the bundle directories of run ID
bundles_of() { ls -d /dev/shm/moat-gvisor-"$1"-* /tmp/moat-gvisor-"$1"-* 2>/dev/null || true; }

# moat's init inside gVisor leaves the dispositions as the Sentry made them
# (it skips the process level's reset): the command inherits no ignored
# signal, even from a caller that ignores some
t_signals_default() {
	need_runsc
	local out
	out=$( (
		trap '' INT PIPE
		gv -- /bin/bash -c 'echo "ignored:[$(trap -p)]"'
	))
	assert_contains "$out" "ignored:[]" "no signal is ignored in the command"
	# positive control: the same probe sees a signal that is ignored
	# shellcheck disable=SC2016 # expanded inside
	out=$(gv -- /bin/bash -c 'trap "" INT; exec /bin/bash -c "echo \"ignored:[\$(trap -p)]\""')
	assert_contains "$out" "SIGINT" "positive control: an ignored SIGINT is seen"
}

t_no_leftovers() {
	need_runsc
	local log="$T_OUT/left.json" id
	gv --log "$log" -- /bin/sh -c 'sleep 30 & exit 0'
	id=$(run_of "$log")
	[ -n "$id" ] || fail "no run id in the log"
	# the bundle lives in /dev/shm (a tmpfs) or, without one, /tmp
	[ -z "$(bundles_of "$id")" ] || fail "the bundle was left"
	# nothing of runsc survives the run (a background sleep included)
	[ -z "$(pgrep -f "runsc.*moat-gvisor-$id" || true)" ] || fail "runsc survived the run"
	# SIGKILL of moat itself: its init inside gVisor sees the channel close
	# and the container, runsc and its gofer end with it; the bundle is
	# named in the run's state record, so `moat gc` removes it
	gv_killed "$T_OUT/kill.json"
	"$MOAT" gc --quiet || fail "moat gc failed"
	gone_or_fail "$(bundles_of "$GV_ID")" "the bundle was left after SIGKILL and moat gc"
	# and without moat gc: the next run's sweep (at the process level)
	gv_killed "$T_OUT/kill2.json"
	"$MOAT" run --quiet -- true || fail "the next run failed"
	gone_or_fail "$(bundles_of "$GV_ID")" "the bundle was left after SIGKILL and the next run"
}

# no_record CMD...: CMD with a state directory where the run's record
# cannot be written (root: a read-only tmpfs over /run/moat/live in a mount
# namespace of its own; else XDG_STATE_HOME whose moat/live is a file).
no_record() {
	if is_root; then
		mkdir -p /run/moat/live
		unshare -m --propagation private sh -c \
			'mount -t tmpfs -o ro,size=4k tmpfs /run/moat/live && exec "$@"' sh "$@"
	else
		mkdir -p "$T_OUT/nostate/moat"
		: >"$T_OUT/nostate/moat/live"
		XDG_STATE_HOME="$T_OUT/nostate" "$@"
	fi
}

# A temporary the run's state record cannot name is never made use of: no
# record, no gVisor run (125 naming the step), and no bundle left. Positive
# control: the same state directory lets a process-level run (no
# temporary) run.
t_no_record_fails_closed() {
	need_runsc
	local out rc=0 id
	out=$(no_record "$MOAT" run --quiet --log "$T_OUT/nr.json" --isolation gvisor -- true 2>&1) ||
		rc=$?
	assert_eq 125 "$rc" "a gVisor run without a state record: $out"
	assert_contains "$out" "isolation step: cannot record the temporary directory" "names the step"
	id=$(run_of "$T_OUT/nr.json")
	[ -n "$id" ] || fail "no run id in the log"
	gone_or_fail "$(bundles_of "$id")" "the bundle of the refused run was left"
	rc=0
	out=$(no_record "$MOAT" run --quiet -- echo ran 2>&1) || rc=$?
	assert_eq 0 "$rc" "positive control: a run without temporaries runs: $out"
}

# gone_or_fail DIRS WHAT: fails when DIRS (left by a crashed run) is not
# empty, removing them first (the next test starts clean).
gone_or_fail() {
	[ -z "$1" ] && return 0
	local d
	for d in $1; do rm -rf "$d"; done
	fail "$2: $1"
}

# gv_killed LOG: a gVisor run of `sleep 60` SIGKILLed (moat, the process
# holding the sandbox) once its runsc sandbox and bundle are seen (positive
# control); then no process of runsc is left. Its run id in GV_ID.
gv_killed() {
	local log=$1 pid
	"$MOAT" run --quiet --log "$log" --isolation gvisor -- sleep 60 &
	pid=$!
	GV_ID=
	for _ in $(seq 100); do
		GV_ID=$(run_of "$log")
		[ -n "$GV_ID" ] && pgrep -f "runsc-sandbox.*moat-gvisor-$GV_ID" >/dev/null && break
		sleep 0.1
	done
	pgrep -f "runsc-sandbox.*moat-gvisor-$GV_ID" >/dev/null ||
		fail "positive control: the run's runsc sandbox was not seen running"
	[ -n "$(bundles_of "$GV_ID")" ] || fail "positive control: the running run's bundle was not found"
	kill -9 "$pid"
	wait "$pid" 2>/dev/null || true
	for _ in $(seq 50); do
		pgrep -f "runsc.*moat-gvisor-$GV_ID" >/dev/null || break
		sleep 0.1
	done
	[ -z "$(pgrep -f "runsc.*moat-gvisor-$GV_ID" || true)" ] || fail "runsc survived moat's SIGKILL"
}

# moat doctor says gvisor works only when runsc starts a container of
# /bin/true with moat's options; --boot gvisor proves it with a sandbox.
t_doctor() {
	need_runsc
	local out rc=0
	out=$("$MOAT" doctor --json) || true
	python3 -c 'import json,sys; g=json.load(sys.stdin)["isolation"]["gvisor"]
assert g["present"] is True and g["runsc"] and g["version"].startswith("runsc version"), g
assert g["works"] is True and g["why"] == "", g' <<<"$out" || fail "doctor --json, gvisor: $out"
	assert_contains "$("$MOAT" doctor)" "[ ok ] --isolation gvisor         works here: runsc version"
	out=$("$MOAT" doctor --boot gvisor --json) || rc=$?
	assert_eq 0 "$rc" "doctor --boot gvisor: $out"
	python3 -c 'import json,sys; b=json.load(sys.stdin)
assert b["level"] == "gvisor" and b["booted"] is True and b["exit"] == 0, b' <<<"$out" ||
		fail "doctor --boot gvisor --json: $out"
	assert_contains "$("$MOAT" doctor --boot gvisor)" "booted in" "the text"
	# control: the proof can fail; a level that refuses the run does not boot
	# (vm with a key it cannot honour is not reachable from doctor, so: the
	# vm level with vm_accel kvm where KVM cannot run the guest)
	if [ ! -e /sys/module/kvm_intel ] && [ ! -e /sys/module/kvm_amd ]; then
		rc=0
		out=$("$MOAT" doctor --boot vm 2>&1) || rc=$?
		assert_eq 1 "$rc" "doctor --boot vm without a usable KVM"
		assert_contains "$out" "did not boot" "says so"
	fi
}

run_test "gvisor: moat doctor: works only when runsc runs a container; --boot gvisor proves it" t_doctor
run_test "gvisor: exit status, stdout, gVisor's kernel, exec records as at the process level" t_exit_and_kernel
run_test "gvisor: workspace overlay, review (a planted hook held), rw owner" t_files_review
run_test "gvisor: --net none has no network" t_net_none
run_test "gvisor: --net allow through moat's proxy, recorded" t_net_allow
run_test "gvisor: a credential injected by the proxy never enters gVisor" t_credential
run_test "gvisor: --fsize/--disk hold; keys it cannot honour fail closed naming the key" t_refused_keys
run_test "gvisor: a full workspace overlay is said; /tmp is not seen and the records say so" t_disk_full_partial
run_test "gvisor: --rootfs is the system (a libc-less tree)" t_rootfs
run_test "gvisor: moat selftest --isolation gvisor holds the filesystem and network probes" t_selftest
run_test "vm: a key it cannot honour fails closed" t_vm
run_test "gvisor: moat serve creates and resets a gvisor sandbox without holding its other requests" t_serve
run_test "gvisor: no bundle or runsc process left, even after SIGKILL of moat (moat gc, the next run)" t_no_leftovers
run_test "gvisor: no state record for its bundle: 125 naming the step, nothing left" t_no_record_fails_closed
run_test "gvisor: the command inherits no ignored signal" t_signals_default
t_done
