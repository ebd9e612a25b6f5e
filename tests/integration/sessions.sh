#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Sessions (issue 15, "Sessions from the command line"): moat create / exec /
# ls / logs / stop / rm / cp. A sandbox that outlives one command, served by
# its own supervisor: files kept between execs, concurrent execs, exit codes
# as moat run's, isolation between sandboxes, the supervisor's SIGKILL kills
# the sandbox, idle and lifetime expiry, another user can neither see nor
# drive a sandbox, bad input. Run as root and as the unprivileged user.
# shellcheck source=tests/lib/tap.sh
. "$(dirname "$0")/../lib/tap.sh"

TUSER=moat-test
# As the unprivileged user the sessions live in a directory of this test
# ($XDG_RUNTIME_DIR); root's are in /run/moat/sessions (shared: the tests
# only touch the sandboxes they created).
export XDG_RUNTIME_DIR="$T_OUT/xdg"
mkdir -m 0700 "$XDG_RUNTIME_DIR"

# Every sandbox a test created (create runs in $(...): a file, not a
# variable), removed at its end whatever happened.
cleanup_sessions() {
	local s
	[ -f "$T_OUT/created" ] || return 0
	while read -r s; do "$MOAT" rm --force --quiet "$s" >/dev/null 2>&1 || true; done <"$T_OUT/created"
	rm -f "$T_OUT/created"
}
create() {
	local id
	id=$(timeout 30 "$MOAT" create "$@") || fail "moat create $* failed"
	echo "$id" >>"$T_OUT/created"
	echo "$id"
}
ex() { timeout 30 "$MOAT" exec "$@"; }

# The field of the session id in `moat ls --json`.
ls_field() {
	timeout 10 "$MOAT" ls --json | jq -r --arg id "$1" ".[] | select(.id == \$id) | .$2"
}

# The processes whose command line holds MARK.
marked() { pgrep -f -- "$1" || true; }

# A raw INFO request to a session socket (seqpacket); prints the answer.
raw_info() {
	printf 'meat\001\000\001\000\002\000\000\000{}' |
		timeout 5 socat -t 2 - "UNIX-CONNECT:$1,type=5" 2>&1 || true
}

t_lifecycle() {
	trap cleanup_sessions EXIT
	local id out
	id=$(create --name "life-$$")
	assert_contains "$id" "" "an id"
	[[ $id =~ ^[0-9a-f]{16,}$ ]] || fail "the id is not random hex: $id"
	assert_eq "idle" "$(ls_field "$id" state)" "moat ls shows it idle"
	assert_eq "life-$$" "$(ls_field "$id" name)" "moat ls shows its name"
	# files are kept between execs, by id and by name
	ex "$id" -- sh -c 'echo kept >/tmp/f; echo out; echo err >&2' >out 2>err
	assert_eq "out" "$(cat out)" "stdout relayed"
	assert_contains "$(cat err)" "err" "stderr relayed"
	assert_eq "kept" "$(ex "life-$$" -- cat /tmp/f)" "a file written by one exec, read by the next"
	# exit codes as moat run's
	local rc=0
	ex "$id" -- sh -c 'exit 3' || rc=$?
	assert_eq 3 "$rc" "the command's status"
	rc=0
	ex "$id" -- /no/such/command 2>err || rc=$?
	assert_eq 127 "$rc" "a missing command: 127"
	assert_contains "$(cat err)" "No such file" "says why"
	rc=0
	ex "$id" -- /tmp 2>err || rc=$?
	assert_eq 126 "$rc" "a command that cannot be executed: 126"
	rc=0
	ex --timeout 1s "$id" -- sleep 10 || rc=$?
	assert_eq 124 "$rc" "--timeout: 124"
	rc=0
	ex "$id" -- sh -c 'kill -TERM $$' || rc=$?
	assert_eq 143 "$rc" "killed by SIGTERM: 143"
	# environment and working directory
	assert_eq "v1 /tmp" "$(ex --env K=v1 --cwd /tmp "$id" -- sh -c 'echo "$K $(pwd)"')" "--env, --cwd"
	# the sandbox's execs are counted and recorded with their own ids
	local n
	n=$(ls_field "$id" execs)
	[ "$n" -ge 6 ] || fail "moat ls counts $n execs"
	timeout 10 "$MOAT" logs --json "$id" >log
	[ "$(grep -c '"type":"process".*"event":"start"' log)" -ge 6 ] || fail "process events: $(grep -c process log)"
	# control for "nothing left" below: the live sandbox is a live run
	assert_contains "$(timeout 10 "$MOAT" ps)" "$id" "moat ps lists the live sandbox"
	# rm: the end of a run (an exit record), then it is gone
	timeout 30 "$MOAT" rm "$id" 2>err || fail "rm failed: $(cat err)"
	assert_contains "$(cat err)" "removed" "rm reports the end"
	[ -z "$(ls_field "$id" id)" ] || fail "moat ls still lists $id"
	timeout 10 "$MOAT" log --type exit "$id" >exitlog || fail "no log after rm"
	assert_contains "$(cat exitlog)" "exit" "the exit record was written"
	rc=0
	timeout 10 "$MOAT" rm "$id" 2>err || rc=$?
	assert_eq 2 "$rc" "rm twice: exit 2"
	assert_contains "$(cat err)" "no sandbox" "rm twice: says so"
	rc=0
	ex "$id" -- true 2>err || rc=$?
	assert_eq 2 "$rc" "exec into a removed sandbox: 2"
	[ ! -e "${XDG_RUNTIME_DIR}/moat/sessions/$id.sock" ] || fail "the socket is left"
	# nothing left: no process, mount, cgroup or live record of it
	[ -z "$(timeout 10 "$MOAT" ps | grep -F "$id")" ] || fail "moat ps still lists $id"
	if grep -F "$id" /proc/self/mountinfo; then fail "mounts of $id left"; fi
	if find /sys/fs/cgroup -maxdepth 6 -name "*$id*" 2>/dev/null | grep .; then
		fail "a cgroup of $id is left"
	fi
}

t_logs_follow() {
	trap cleanup_sessions EXIT
	local id f
	id=$(create)
	timeout 30 "$MOAT" logs --follow --json "$id" >follow &
	f=$!
	sleep 0.3
	ex "$id" -- sh -c 'echo followed-marker >/dev/null'
	for _ in $(seq 30); do grep -q followed-marker follow && break; sleep 0.1; done
	grep -q followed-marker follow || fail "--follow did not print the new process"
	timeout 30 "$MOAT" rm --quiet "$id" || fail "rm"
	wait "$f" || fail "moat logs --follow did not end with the sandbox"
	grep -q '"type":"exit"' follow || fail "--follow missed the exit record"
}

# rm ends the sandbox as a run ends: the overlay workspace's changes are
# reviewed and applied then, not before.
t_review_at_rm() {
	trap cleanup_sessions EXIT
	local id ws="$T_OUT/ws"
	mkdir -p "$ws"
	echo before >"$ws/f"
	id=$(create --workspace "$ws")
	ex "$id" -- sh -c 'echo after >f; echo new >g'
	assert_eq "after" "$(ex "$id" -- cat f)" "the sandbox sees its change"
	assert_eq "before" "$(cat "$ws/f")" "the host's file is untouched while the sandbox lives"
	[ ! -e "$ws/g" ] || fail "a new file reached the host before rm"
	timeout 30 "$MOAT" rm "$id" 2>err || fail "rm: $(cat err)"
	assert_contains "$(cat err)" "2 change(s)" "rm reports the review"
	assert_eq "after" "$(cat "$ws/f")" "applied at rm"
	assert_eq "new" "$(cat "$ws/g")" "the new file applied at rm"
}

t_concurrent() {
	trap cleanup_sessions EXIT
	local id p1 p2 p3
	id=$(create)
	# three processes wait for a file the fourth exec writes: they run at once
	for i in 1 2 3; do
		ex "$id" -- sh -c "for i in \$(seq 100); do [ -e /tmp/go ] && break; sleep 0.05; done; [ -e /tmp/go ] && echo ok$i" >"out$i" &
		eval "p$i=\$!"
	done
	for _ in $(seq 50); do [ "$(ls_field "$id" running)" = 3 ] && break; sleep 0.1; done
	assert_eq 3 "$(ls_field "$id" running)" "three processes run at once"
	assert_eq "running" "$(ls_field "$id" state)" "moat ls: running"
	ex "$id" -- touch /tmp/go
	wait "$p1" "$p2" "$p3" || fail "a concurrent exec failed"
	for i in 1 2 3; do assert_eq "ok$i" "$(cat "out$i")" "exec $i saw the file of another exec"; done
	# a busy sandbox is not removed without --force
	ex "$id" -- sleep 30 &
	local busy=$!
	for _ in $(seq 50); do [ "$(ls_field "$id" running)" = 1 ] && break; sleep 0.1; done
	local rc=0
	timeout 10 "$MOAT" rm "$id" 2>err || rc=$?
	assert_eq 1 "$rc" "rm of a busy sandbox is refused"
	assert_contains "$(cat err)" "still run" "with a clear message"
	timeout 30 "$MOAT" rm --force --quiet "$id" || fail "rm --force failed"
	rc=0
	wait "$busy" || rc=$?
	assert_eq 137 "$rc" "the exec of a removed sandbox: killed"
}

# The init is never dumpable, also while it starts a process: as root it
# vforks (the new process runs on the init's memory until its execve is
# done), so a process that made that memory dumpable for the exec recorder
# would hand /proc/1/mem to the whole sandbox, and an fd opened in that
# moment stays usable. A watcher inside opens /proc/1/mem as fast as bash
# can (the builtin's redirection: no fork per try) during 100 execs.
t_init_undumpable() {
	trap cleanup_sessions EXIT
	local id pw tries hits
	id=$(create)
	# shellcheck disable=SC2016 # expanded inside the sandbox
	ex "$id" -- bash -c 't=0 n=0; while [ ! -e /tmp/stop ]; do t=$((t + 1));
		if { : </proc/1/mem; } 2>/dev/null; then n=$((n + 1)); fi; done; echo "$t $n"' >watch &
	pw=$!
	for _ in $(seq 50); do [ "$(ls_field "$id" running)" = 1 ] && break; sleep 0.1; done
	assert_eq 1 "$(ls_field "$id" running)" "the watcher runs"
	for _ in $(seq 100); do ex "$id" -- /bin/true || fail "an exec failed"; done
	ex "$id" -- touch /tmp/stop
	local rc=0
	wait "$pw" || rc=$?
	[ "$rc" = 0 ] || fail "the watcher failed ($rc): $(cat watch)"
	read -r tries hits <watch
	[ "${tries:-0}" -gt 100 ] || fail "the watcher barely ran (${tries:-0} tries)"
	assert_eq 0 "$hits" "no process opened the init's memory during 100 execs ($tries tries)"
	# positive control: the same check opens a dumpable process's memory
	# (a sibling of the sandbox's, same user)
	# shellcheck disable=SC2016
	assert_eq "opened" "$(ex "$id" -- bash -c 'sleep 5 & p=$!
		if { : </proc/$p/mem; } 2>/dev/null; then echo opened; fi; kill $p')" \
		"the check opens a dumpable process's memory"
}

t_exec_stopped() {
	trap cleanup_sessions EXIT
	local id out rc t0 t1 i hit=""
	id=$(create --net none)
	# control: an exec starts and ends normally before the stopper runs
	ex "$id" -- /bin/true || fail "the control exec failed"
	# a process of the sandbox stops every other one, over and over, so a
	# new process is (sooner or later) stopped before its execve: as root a
	# vforked one, which also holds the init; unprivileged a forked one.
	# One stopped after its execve is ended by --timeout: another try.
	# (one stopper: kill -1 spares only the caller, so two would stop each
	# other)
	ex "$id" -- sh -c 'nohup sh -c "while :; do kill -STOP -1 2>/dev/null; done" \
		>/dev/null 2>&1 </dev/null & echo started' >/dev/null || fail "the stopper did not start"
	for i in $(seq 40); do
		t0=$(date +%s)
		rc=0
		out=$(timeout 60 "$MOAT" exec --timeout 3s "$id" -- /bin/true 2>&1) || rc=$?
		t1=$(date +%s)
		if [ "$rc" = 125 ]; then
			hit=$i
			break
		fi
	done
	[ -n "$hit" ] || fail "no exec of 40 was stopped before its command (last: $rc $out)"
	assert_contains "$out" "within 15 s" "the stopped exec's message names the bound"
	[ $((t1 - t0)) -lt 40 ] || fail "the supervisor waited $((t1 - t0)) s, not the bound"
	# the sessions CLI still answers, and says what became of the sandbox:
	# ended by the bound (vfork, root: "the sandbox was ended") it is
	# "ended" with the reason (it showed "idle" before); still alive (fork)
	# it is not "ended"
	local ls_out st
	ls_out=$(timeout 10 "$MOAT" ls --json) || fail "moat ls failed after the stalled exec"
	st=$(printf '%s' "$ls_out" | python3 -c 'import json,sys; v=[s for s in json.load(sys.stdin) if s["id"]==sys.argv[1]]; print(v[0]["state"], v[0].get("reason", "-"))' "$id")
	case "$out" in
	*"the sandbox was ended"*)
		assert_contains "$st" "ended" "moat ls: a sandbox ended by the bound is ended"
		assert_contains "$st" "within 15 s" "moat ls: the reason names the bound"
		assert_contains "$(timeout 10 "$MOAT" ls)" "within 15 s" "moat ls (text): the reason"
		;;
	*)
		assert_not_contains "$st" "ended" "moat ls: a sandbox that lives on is not ended"
		;;
	esac
}

t_isolation() {
	trap cleanup_sessions EXIT
	local a b mark="moat-sess-iso-$$-$RANDOM"
	a=$(create)
	b=$(create)
	ex "$a" -- sh -c 'echo secret >/tmp/secret'
	ex "$a" -- sh -c "sleep 30; : $mark" &
	for _ in $(seq 50); do [ -n "$(marked "$mark")" ] && break; sleep 0.1; done
	# positive control: in a, another process sees the file and the process
	assert_eq "secret" "$(ex "$a" -- cat /tmp/secret)" "a sees its file"
	assert_contains "$(ex "$a" -- sh -c 'cat /proc/[0-9]*/cmdline 2>/dev/null | tr "\0" " "')" "$mark" "a sees its process"
	# b sees neither
	local rc=0
	ex "$b" -- cat /tmp/secret 2>/dev/null || rc=$?
	[ "$rc" -ne 0 ] || fail "b reads a's file"
	assert_not_contains "$(ex "$b" -- sh -c 'cat /proc/[0-9]*/cmdline 2>/dev/null | tr "\0" " "')" "$mark" "b's processes"
	timeout 30 "$MOAT" stop "$a" || fail "stop failed"
	for _ in $(seq 50); do [ -z "$(marked "$mark")" ] && break; sleep 0.1; done
	[ -z "$(marked "$mark")" ] || fail "stop left the process"
	assert_eq "secret" "$(ex "$a" -- cat /tmp/secret)" "after stop, the files stay"
}

t_kill_supervisor() {
	trap cleanup_sessions EXIT
	local id pid mark="moat-sess-kill-$$-$RANDOM" left
	id=$(create)
	ex "$id" -- sh -c "sleep 60; : $mark" &
	local cli=$!
	for _ in $(seq 50); do [ -n "$(marked "$mark")" ] && break; sleep 0.1; done
	# positive control: the sandbox's process runs before the kill
	[ -n "$(marked "$mark")" ] || fail "the process never ran"
	pid=$(ls_field "$id" pid)
	[ "$pid" -gt 1 ] || fail "no supervisor pid: $pid"
	assert_contains "$(cat "/proc/$pid/cmdline" | tr '\0' ' ')" "create" "the pid is the supervisor"
	kill -9 "$pid"
	for _ in $(seq 50); do
		left=$(marked "$mark")
		[ -z "$left" ] && break
		sleep 0.1
	done
	[ -z "$left" ] || fail "the sandbox's processes survived its supervisor: $left"
	local rc=0
	wait "$cli" || rc=$?
	[ "$rc" -ne 0 ] || fail "the exec client returned 0"
	# listed as gone once, then cleaned; moat gc removes the rest
	assert_eq "gone" "$(ls_field "$id" state)" "moat ls: gone"
	[ -z "$(ls_field "$id" id)" ] || fail "listed twice"
	timeout 30 "$MOAT" gc --quiet || fail "moat gc failed"
	if find /sys/fs/cgroup -maxdepth 6 -name "*$id*" 2>/dev/null | grep .; then
		fail "a cgroup of $id is left"
	fi
}

t_expiry() {
	trap cleanup_sessions EXIT
	local idle life rc=0
	idle=$(create --idle-timeout 1s)
	life=$(create --lifetime 2s)
	# a process that runs longer than the idle limit keeps it alive
	ex "$idle" -- sleep 1.5 || fail "exec into the idle sandbox"
	ex "$life" -- true || fail "exec into the lifetime sandbox"
	sleep 2.5
	ex "$idle" -- true 2>/dev/null || rc=$?
	assert_eq 2 "$rc" "idle sandbox expired"
	rc=0
	ex "$life" -- true 2>/dev/null || rc=$?
	assert_eq 2 "$rc" "lifetime expired"
	# expiry is the end of a run: the exit record is there
	timeout 10 "$MOAT" log --type exit "$idle" | grep -q exit || fail "no exit record after idle expiry"
	timeout 10 "$MOAT" log --type exit "$life" | grep -q exit || fail "no exit record after lifetime expiry"
}

t_cp() {
	trap cleanup_sessions EXIT
	local id rc
	id=$(create)
	printf 'line1\nline2\n' >src
	timeout 10 "$MOAT" cp src "$id:/tmp/in" || fail "cp in"
	assert_eq "line1 line2" "$(ex "$id" -- cat /tmp/in | tr '\n' ' ' | sed 's/ $//')" "cp in: same bytes"
	timeout 10 "$MOAT" cp "$id:/tmp/in" back || fail "cp out"
	cmp src back || fail "cp out: different bytes"
	# a destination that is a symlink is refused and its target untouched
	echo original >target
	ln -s target link
	rc=0
	timeout 10 "$MOAT" cp "$id:/tmp/in" link 2>err || rc=$?
	[ "$rc" -ne 0 ] || fail "cp wrote through a symlink"
	assert_eq original "$(cat target)" "the symlink's target is untouched"
	# positive control: a plain cp through the same link does change it
	cp back link
	assert_eq line1 "$(head -1 target)" "control: the link does lead to the target"
	# a symlink or a device inside the sandbox is not copied out
	ex "$id" -- ln -s /etc/passwd /tmp/pw
	rc=0
	timeout 10 "$MOAT" cp "$id:/tmp/pw" pw 2>err || rc=$?
	[ "$rc" -ne 0 ] || fail "a symlink was copied out"
	assert_contains "$(cat err)" "regular file" "says why"
	[ ! -e pw ] || fail "a file was left for a refused copy"
	rc=0
	timeout 10 "$MOAT" cp "$id:/dev/zero" zero 2>err || rc=$?
	[ "$rc" -ne 0 ] || fail "a device was copied out"
	# a fifo in the sandbox stalls no one: refused both ways, at once
	ex "$id" -- mkfifo /tmp/ff
	rc=0
	timeout 10 "$MOAT" cp src "$id:/tmp/ff" 2>err || rc=$?
	assert_eq 1 "$rc" "cp into a fifo is refused (124: the supervisor stalled)"
	rc=0
	timeout 10 "$MOAT" cp "$id:/tmp/ff" ffout 2>err || rc=$?
	assert_eq 1 "$rc" "cp out of a fifo is refused"
	assert_eq idle "$(ls_field "$id" state)" "the supervisor still answers"
	# a host source that is a symlink is refused
	rc=0
	timeout 10 "$MOAT" cp link "$id:/tmp/x" 2>err || rc=$?
	[ "$rc" -ne 0 ] || fail "a host symlink was followed"
	# the size cap, both ways
	head -c 100 /dev/zero >big
	rc=0
	timeout 10 "$MOAT" cp --max-size 10 big "$id:/tmp/big" 2>err || rc=$?
	[ "$rc" -ne 0 ] || fail "cp in above --max-size"
	timeout 10 "$MOAT" cp big "$id:/tmp/big" || fail "cp in below the cap"
	rc=0
	timeout 10 "$MOAT" cp --max-size 10 "$id:/tmp/big" bigout 2>err || rc=$?
	[ "$rc" -ne 0 ] || fail "cp out above --max-size"
	rc=0
	timeout 10 "$MOAT" cp src "nosuchid:/tmp/x" 2>err || rc=$?
	assert_eq 2 "$rc" "cp into an unknown sandbox"
	# a directory out: regular files and directories, links and fifos skipped
	ex "$id" -- sh -c 'mkdir -p /tmp/d/s/t; echo 1 >/tmp/d/a; echo 3 >/tmp/d/s/t/c; ln -s /etc/shadow /tmp/d/l; ln -s / /tmp/d/s/root; mkfifo /tmp/d/p'
	timeout 20 "$MOAT" cp "$id:/tmp/d" dout || fail "cp of a directory"
	assert_eq "d dout|d dout/s|d dout/s/t|f dout/a|f dout/s/t/c" "$(find dout -printf '%y %p\n' | sort | paste -sd '|')" "the tree, without links and fifos"
	assert_eq 3 "$(cat dout/s/t/c)" "a nested file"
	rc=0
	timeout 20 "$MOAT" cp "$id:/tmp/d" dout 2>err || rc=$?
	[ "$rc" -ne 0 ] || fail "a directory copied into an existing one"
	rc=0
	timeout 20 "$MOAT" cp --max-size 1 "$id:/tmp/d" dcap 2>err || rc=$?
	[ "$rc" -ne 0 ] || fail "a directory above --max-size"
}

# A host directory in (moat cp DIR ID:DEST): regular files and directories
# only, each opened beneath its parent with O_NOFOLLOW; a planted symlink (to
# a file or a directory) is skipped, never followed; into a new directory.
SWAPPER='
import ctypes, os, sys, time
libc = ctypes.CDLL(None, use_errno=True)
a, b = sys.argv[1].encode(), sys.argv[2].encode()
end = time.time() + float(sys.argv[3])
n = 0
while time.time() < end and not os.path.exists(sys.argv[4]):
    if libc.renameat2(-100, a, -100, b, 2) != 0:
        sys.exit("renameat2: " + os.strerror(ctypes.get_errno()))
    n += 1
print(n)
'

t_cp_dir_in() {
	trap cleanup_sessions EXIT
	local id rc tree
	mkdir cpin && cd cpin
	id=$(create)
	mkdir -p secret sd/s/t
	echo "SECRET-$$" >secret/f
	echo 1 >sd/a
	echo 3 >sd/s/t/c
	printf 'with space\n' >"sd/s/a b"
	ln -s "$PWD/secret/f" sd/l
	ln -s "$PWD/secret" sd/s/dl
	mkfifo sd/p
	# positive control: the plants do lead to the secret for a follower
	assert_eq "SECRET-$$ SECRET-$$" "$(cat sd/l sd/s/dl/f | paste -sd ' ')" "control: the links reach the secret"
	timeout 30 "$MOAT" cp sd "$id:/tmp/din" || fail "cp of a directory in"
	tree=$(ex "$id" -- find /tmp/din -printf '%y %P\n' | sort | paste -sd '|')
	assert_eq "d |d s|d s/t|f a|f s/a b|f s/t/c" "$tree" "the tree, without links and fifos"
	assert_eq "3" "$(ex "$id" -- cat /tmp/din/s/t/c)" "a nested file"
	assert_eq "with space" "$(ex "$id" -- cat "/tmp/din/s/a b")" "a name with a space"
	assert_not_contains "$(ex "$id" -- sh -c 'cat /tmp/din/* /tmp/din/*/* 2>/dev/null' || true)" "SECRET" "the secret in the sandbox"
	# never merged into what is there
	rc=0
	timeout 30 "$MOAT" cp sd "$id:/tmp/din" 2>err || rc=$?
	[ "$rc" -ne 0 ] || fail "a directory copied into an existing one"
	assert_contains "$(cat err)" "exists" "says why"
	rc=0
	timeout 30 "$MOAT" cp sd "$id:/tmp" 2>err || rc=$?
	[ "$rc" -ne 0 ] || fail "a directory copied into /tmp itself"
	# the size cap in all
	rc=0
	timeout 30 "$MOAT" cp --max-size 3 sd "$id:/tmp/dcap" 2>err || rc=$?
	[ "$rc" -ne 0 ] || fail "a directory above --max-size"
	assert_contains "$(cat err)" "max-size" "says why"
	# the depth cap: 33 levels
	mkdir -p "deep/$(printf 'd/%.0s' $(seq 33))"
	rc=0
	timeout 60 "$MOAT" cp deep "$id:/tmp/deep" 2>err || rc=$?
	[ "$rc" -ne 0 ] || fail "a tree deeper than 32 levels"
	assert_contains "$(cat err)" "deeper than 32" "says why"
	# a source that is itself a symlink to a directory is refused
	ln -s "$PWD/secret" sdlink
	rc=0
	timeout 30 "$MOAT" cp sdlink "$id:/tmp/sl" 2>err || rc=$?
	[ "$rc" -ne 0 ] || fail "a symlinked source directory was followed"
	ex "$id" -- test ! -e /tmp/sl || fail "something was made for the refused copy"
}

# A racing swap in the source: a real directory and a symlink to the secret
# exchanged (RENAME_EXCHANGE) while the tree is copied in again and again.
t_cp_dir_in_race() {
	trap cleanup_sessions EXIT
	local id rc ok=0 refused=0 hits=0 pid
	mkdir cprace && cd cprace
	id=$(create)
	mkdir -p secret src/r
	echo "SECRET-$$" >secret/f
	echo "REAL-$$" >src/r/f
	ln -s "$PWD/secret" src/x
	# positive control: the swap exposes the secret to a plain reader
	/usr/bin/python3 -c "$SWAPPER" src/r src/x 5 stop >ctl 2>&1 &
	pid=$!
	for _ in $(seq 400); do
		if grep -qs SECRET src/r/f; then hits=1; break; fi
	done
	touch stop
	wait "$pid" || fail "control swapper: $(cat ctl)"
	rm -f stop
	[ "$hits" -eq 1 ] || fail "control: the exchange never exposed the secret"
	[ -L src/x ] || { mv src/r src/t && mv src/x src/r && mv src/t src/x; }
	/usr/bin/python3 -c "$SWAPPER" src/r src/x 60 stop >swaps 2>&1 &
	pid=$!
	for i in $(seq 12); do
		rc=0
		timeout 30 "$MOAT" cp src "$id:/tmp/r$i" 2>err || rc=$?
		if [ "$rc" -eq 0 ]; then ok=$((ok + 1)); else refused=$((refused + 1)); fi
	done
	touch stop
	wait "$pid" || fail "swapper: $(cat swaps)"
	echo "# race: $ok copied, $refused refused, swaps: $(cat swaps)" >&2
	assert_not_contains "$(ex "$id" -- sh -c 'cat /tmp/r*/*/f 2>/dev/null' || true)" "SECRET" "the secret in the sandbox"
	[ $((ok + refused)) -eq 12 ] || fail "unexpected outcomes"
}

# moat ls shows the limits as set (and the default pids limit when none was)
# One supervisor that does not answer (here: stopped by the test) is listed
# as busy after a bounded wait, and the others are still listed.
t_ls_busy_supervisor() {
	trap 'kill -CONT "${STOPPED:-0}" 2>/dev/null || true; cleanup_sessions' EXIT
	local a b pid out
	a=$(create)
	b=$(create)
	pid=$(ls_field "$a" pid)
	[ -n "$pid" ] && [ "$pid" -gt 1 ] || fail "no supervisor pid for $a"
	# control: both answer while nothing is stopped
	assert_eq idle "$(ls_field "$a" state)" "control: the supervisor answers"
	STOPPED=$pid
	kill -STOP "$pid"
	out=$(timeout 20 "$MOAT" ls --json) || fail "moat ls did not return with a stopped supervisor"
	assert_eq busy "$(jq -r --arg id "$a" '.[] | select(.id == $id) | .state' <<<"$out")" \
		"a stopped supervisor is listed as busy"
	assert_eq idle "$(jq -r --arg id "$b" '.[] | select(.id == $id) | .state' <<<"$out")" \
		"the other sandbox is still listed"
	assert_contains "$(timeout 20 "$MOAT" ls)" "did not answer" "the text listing says why"
	kill -CONT "$pid"
	STOPPED=
	assert_eq idle "$(ls_field "$a" state)" "it answers again once continued"
}

t_ls_limits() {
	trap cleanup_sessions EXIT
	local id plain row
	local deg=()
	# unprivileged on cgroup v1 limits fall back to rlimits, when asked
	is_root || deg=(--allow-degraded cgroup)
	id=$(create "${deg[@]}" --memory 256M --cpus 1.5 --pids 77 --disk 64M --timeout 90s)
	plain=$(create)
	assert_eq "268435456 1500 77 67108864 90000" "$(ls_field "$id" 'limits | "\(.memory) \(.cpus_milli) \(.pids) \(.disk) \(.timeout_ms)"')" "ls --json limits"
	assert_eq "0 0" "$(ls_field "$plain" 'limits | "\(.memory) \(.timeout_ms)"')" "no memory or timeout limit when none was set"
	row=$(timeout 10 "$MOAT" ls | grep "^$id ")
	assert_contains "$row" "mem=256M,cpus=1.5,pids=77,disk=64M,timeout=90s" "the table's LIMITS"
	assert_contains "$(timeout 10 "$MOAT" ls | head -1)" "LIMITS" "the header"
	# the other columns the issue lists: id, name, state, age, policy digest, command count, memory
	ex "$id" -- true
	assert_eq 1 "$(ls_field "$id" execs)" "command count"
	[[ $(ls_field "$id" policy_sha256) =~ ^[0-9a-f]{64}$ ]] || fail "no policy digest"
	[ "$(ls_field "$id" policy_sha256)" != "$(ls_field "$plain" policy_sha256)" ] || fail "the digest does not depend on the policy"
	[ "$(ls_field "$id" age_s)" -ge 0 ] || fail "no age"
}

# A crashed session supervisor (SIGKILL while a command runs) leaves nothing
# that `moat gc` cannot clean: no process, mount, cgroup, live record,
# socket or name file (tests/lib/leaks.sh; `moat ls`, which also forgets a
# gone session, is not run before gc).
t_crash_gc() {
	trap cleanup_sessions EXIT
	# shellcheck source=tests/lib/leaks.sh
	. "$MOAT_TEST_DIR/lib/leaks.sh"
	local mark="crash-$$-$RANDOM" id pid cli rc deg=()
	is_root || deg=(--allow-degraded cgroup)
	id=$(create "${deg[@]}" --memory 256M --name "$mark")
	echo "$id" >ids
	ex "$id" -- sh -c "sleep 60; : $mark" &
	cli=$!
	for _ in $(seq 50); do [ -n "$(marked "sleep 60; : $mark")" ] && break; sleep 0.1; done
	leaks_check "$mark" ids >found
	# positive control: what a live session has is found
	assert_contains "$(cat found)" "process " "control: its processes"
	assert_contains "$(cat found)" "live " "control: its live record"
	assert_contains "$(cat found)" "$id.sock" "control: its socket"
	assert_contains "$(cat found)" "$mark.name" "control: its name file"
	if is_root; then assert_contains "$(cat found)" "cgroup " "control: its cgroup"; fi
	pid=$(timeout 10 "$MOAT" ls --json | jq -r --arg id "$id" '.[] | select(.id == $id) | .pid')
	[ "$pid" -gt 1 ] || fail "no supervisor pid"
	kill -9 "$pid"
	wait "$cli" 2>/dev/null || true
	for _ in $(seq 50); do [ -z "$(marked "sleep 60; : $mark")" ] && break; sleep 0.1; done
	local other oname="other-$$-$RANDOM"
	other=$(create --name "$oname")
	timeout 30 "$MOAT" gc --quiet || fail "moat gc failed"
	leaks_check "$mark" ids 3 >found
	assert_eq 0 "$LEAKS" "left after the supervisor's SIGKILL and moat gc: $(cat found)"
	# a live session keeps its socket and its name
	ex "$other" -- true || fail "gc broke a live session's socket"
	ex "$oname" -- true || fail "gc removed a live session's name"
	rc=0
	timeout 30 "$MOAT" create --name "$oname" >/dev/null 2>&1 || rc=$?
	[ "$rc" -ne 0 ] || fail "the live session's name was free again after gc"
}

# Sequential create / exec / rm through the CLI leave nothing behind
# (bench/cycles.sh runs 100).
t_cli_cycles() {
	trap cleanup_sessions EXIT
	# shellcheck source=tests/lib/leaks.sh
	. "$MOAT_TEST_DIR/lib/leaks.sh"
	local mark="cyc-$$-$RANDOM" id i
	: >ids
	for i in $(seq 10); do
		id=$(create --name "$mark-$i")
		echo "$id" >>ids
		assert_eq ok "$(ex "$id" -- sh -c "(sleep 100; :) </dev/null >/dev/null 2>&1 & echo ok" "$mark")" "exec $i"
		timeout 30 "$MOAT" rm --force --quiet "$id" || fail "rm $i"
	done
	leaks_check "$mark" ids 3 >found
	assert_eq 0 "$LEAKS" "left behind by 10 cycles: $(cat found)"
}

t_tty_signals() {
	trap cleanup_sessions EXIT
	local id out
	command -v script >/dev/null || skip "script(1) is not installed"
	id=$(create)
	# a terminal of the sandbox for the streams that are terminals here
	out=$(timeout 20 script -qec "$MOAT exec $id -- sh -c 'test -t 0 && test -t 1 && echo tty-yes'" /dev/null | tr -d '\r')
	assert_contains "$out" "tty-yes" "exec on a terminal gets a terminal"
	assert_eq "no" "$(ex "$id" -- sh -c 'test -t 1 && echo yes || echo no')" "without a terminal: none"
	# SIGINT of the client reaches the process
	"$MOAT" exec "$id" -- sh -c 'trap "echo got-int; exit 7" INT; touch /tmp/ready; while :; do sleep 0.1; done' >out &
	local cli=$!
	for _ in $(seq 50); do ex "$id" -- test -e /tmp/ready 2>/dev/null && break; sleep 0.1; done
	kill -INT "$cli"
	local rc=0
	wait "$cli" || rc=$?
	assert_eq 7 "$rc" "the trap's status"
	assert_eq "got-int" "$(cat out)" "SIGINT was forwarded"
}

# moat exec --tty over a terminal with a pending end-of-file marker (^D
# typed before moat starts: tests/lib/ptyeof.py, as script(1) leaves it when
# its stdin ends): the session supervisor, which relays the terminal, hands
# the marker on as ^D before it switches the terminal to raw, so the command
# shows no NUL. Control: the test build with the old order shows "^@".
t_exec_tty_no_stray_nul() {
	trap cleanup_sessions EXIT
	local id out pe="$MOAT_TEST_DIR/lib/ptyeof.py"
	id=$(create)
	out=$(timeout 60 python3 "$pe" "$MOAT" exec --tty "$id" -- sh -c 'sleep 0.5; echo hi')
	assert_eq "b'hi\\r\\n'" "$out" "a pending ^D at the switch to raw: no NUL"
	# the terminal is back to canonical mode after the exec
	out=$(timeout 60 python3 "$pe" sh -c "$MOAT exec --tty $id -- true; stty -a | grep -o -- '-\\?icanon'")
	assert_contains "$out" "icanon" "stty after exec"
	assert_not_contains "$out" "-icanon" "restored to canonical"
	[ -x "$MOAT_TESTING_BIN" ] || skip "no test build at $MOAT_TESTING_BIN"
	"$MOAT" rm "$id" >/dev/null 2>&1 || true
	# positive control: the session supervisor of the test build with the
	# old order (the knob is read where the terminal is switched)
	id=$(MOAT_TEST_LAYERS=1 MOAT_TEST_PTY_OLD_ORDER=1 "$MOAT_TESTING_BIN" create 2>/dev/null) ||
		fail "create (test build)"
	out=$(timeout 60 python3 "$pe" "$MOAT_TESTING_BIN" exec --tty "$id" -- sh -c 'sleep 0.5; echo hi')
	assert_eq "b'^@hi\\r\\n'" "$out" "control: the old order"
	"$MOAT_TESTING_BIN" rm "$id" >/dev/null 2>&1 || true
}

t_bad_input() {
	trap cleanup_sessions EXIT
	local rc=0 id
	for c in "exec nosuch -- true" "rm nosuch" "stop nosuch" "logs --follow nosuch"; do
		rc=0
		# shellcheck disable=SC2086
		timeout 10 "$MOAT" $c 2>err || rc=$?
		assert_eq 2 "$rc" "moat $c"
		assert_contains "$(cat err)" "no sandbox" "moat $c: says so"
	done
	rc=0
	timeout 10 "$MOAT" create --name 'bad/name' 2>err || rc=$?
	assert_eq 2 "$rc" "a bad name"
	rc=0
	timeout 10 "$MOAT" create -- true 2>err || rc=$?
	assert_eq 2 "$rc" "create takes no command"
	rc=0
	timeout 10 "$MOAT" create --no-such-option 2>err || rc=$?
	assert_eq 2 "$rc" "an unknown run option"
	rc=0
	timeout 10 "$MOAT" create --idle-timeout soon 2>err || rc=$?
	assert_eq 2 "$rc" "a bad duration"
	id=$(create --name "dup-$$")
	rc=0
	timeout 10 "$MOAT" create --name "dup-$$" 2>err || rc=$?
	assert_eq 2 "$rc" "a name in use"
	assert_contains "$(cat err)" "exists" "says so"
	# fail closed: a setup step that cannot be done starts nothing (125)
	rc=0
	timeout 10 "$MOAT" create --workspace /no/such/dir 2>err || rc=$?
	[ "$rc" = 2 ] || [ "$rc" = 125 ] || fail "create with a missing workspace: $rc"
	timeout 10 "$MOAT" rm "dup-$$" 2>/dev/null || fail "rm by name"
}

t_rm_all() {
	if is_root; then
		# root's sessions directory is shared: rm --all in a mount namespace
		# of this test with its own (empty) /run/moat/sessions
		mkdir -p /run/moat/sessions
		unshare -m --propagation private bash -c '
			set -e
			mount -t tmpfs -o mode=0700 tmpfs /run/moat/sessions
			a=$(timeout 30 "$MOAT" create); b=$(timeout 30 "$MOAT" create)
			[ "$(timeout 10 "$MOAT" ls --json | jq length)" = 2 ]
			timeout 30 "$MOAT" rm --all --quiet
			[ "$(timeout 10 "$MOAT" ls --json | jq length)" = 0 ]
		' || fail "rm --all"
	else
		timeout 30 "$MOAT" create >/dev/null
		timeout 30 "$MOAT" create >/dev/null
		assert_eq 2 "$(timeout 10 "$MOAT" ls --json | jq length)" "two sandboxes"
		timeout 30 "$MOAT" rm --all --quiet || fail "rm --all"
		assert_eq 0 "$(timeout 10 "$MOAT" ls --json | jq length)" "none left"
	fi
}

# Another user can neither see nor drive a sandbox.
t_other_user() {
	trap cleanup_sessions EXIT
	command -v socat >/dev/null || skip "socat is not installed"
	local id sock dir
	id=$(create)
	if is_root; then
		sock=/run/moat/sessions/$id.sock
		id "$TUSER" >/dev/null 2>&1 || skip "no $TUSER user"
		# positive control: the owner gets an answer over the raw socket
		assert_contains "$(raw_info "$sock")" "policy_sha256" "control: root's own request is answered"
		chmod 711 "$T_OUT"
		local as=(runuser -u "$TUSER" -- env HOME=/tmp XDG_RUNTIME_DIR="$T_OUT/u")
		mkdir -m 0700 "$T_OUT/u"
		chown "$TUSER:" "$T_OUT/u"
		assert_not_contains "$("${as[@]}" "$MOAT" ls 2>&1)" "$id" "moat-test's moat ls"
		local rc=0
		"${as[@]}" timeout 10 "$MOAT" exec "$id" -- true 2>/dev/null || rc=$?
		assert_eq 2 "$rc" "moat-test cannot exec"
		rc=0
		"${as[@]}" timeout 10 "$MOAT" rm --force "$id" 2>/dev/null || rc=$?
		assert_eq 2 "$rc" "moat-test cannot rm"
		assert_not_contains "$("${as[@]}" bash -c "$(declare -f raw_info); raw_info $sock")" "policy_sha256" "moat-test's raw connect"
		# the other way: moat-test's sandbox, root connects to its socket
		local uid
		uid=$("${as[@]}" timeout 30 "$MOAT" create) || fail "moat-test create"
		local usock="$T_OUT/u/moat/sessions/$uid.sock"
		assert_contains "$("${as[@]}" bash -c "$(declare -f raw_info); raw_info $usock")" "policy_sha256" "control: moat-test's own request"
		assert_not_contains "$(raw_info "$usock")" "policy_sha256" "root is refused by SO_PEERCRED"
		assert_not_contains "$(timeout 10 "$MOAT" ls)" "$uid" "root's moat ls"
		"${as[@]}" timeout 30 "$MOAT" rm --quiet "$uid" || fail "moat-test rm"
		assert_eq idle "$(ls_field "$id" state)" "root's sandbox is untouched"
	else
		dir="$XDG_RUNTIME_DIR/moat/sessions"
		assert_eq 700 "$(stat -c %a "$dir")" "the directory's mode"
		assert_eq 600 "$(stat -c %a "$dir/$id.sock")" "the socket's mode"
		assert_contains "$(raw_info "$dir/$id.sock")" "policy_sha256" "control: the owner's request"
		# a sessions directory others could write is refused
		chmod 0755 "$dir"
		local rc=0
		timeout 10 "$MOAT" ls 2>err || rc=$?
		chmod 0700 "$dir"
		[ "$rc" -ne 0 ] || fail "a 0755 sessions directory was used"
		assert_contains "$(cat err)" "0700" "says why"
	fi
}

# A process of a sandbox never drives a session, even where a bind shows it
# the socket and it runs as the same uid (unprivileged mode).
t_from_inside() {
	trap cleanup_sessions EXIT
	command -v socat >/dev/null || skip "socat is not installed"
	local target spy sdir out
	target=$(create)
	if is_root; then sdir=/run/moat/sessions; else sdir="$XDG_RUNTIME_DIR/moat/sessions"; fi
	# positive control: from the host the socket answers
	assert_contains "$(raw_info "$sdir/$target.sock")" "policy_sha256" "control: the host's request"
	spy=$(create --ro "$sdir:/sessions")
	out=$(ex "$spy" -- sh -c "test -S /sessions/$target.sock && echo visible" 2>&1 || true)
	is_root || assert_eq "visible" "$out" "control: the bind shows the socket in the sandbox"
	out=$(ex "$spy" -- bash -c "$(declare -f raw_info); raw_info /sessions/$target.sock; raw_info /sessions/$spy.sock" 2>&1 || true)
	assert_not_contains "$out" "policy_sha256" "a request from inside a sandbox"
	assert_eq idle "$(ls_field "$target" state)" "the target is untouched"
}

# A bare command name is searched in PATH as execvp does (the init skips the
# directories where the file is absent without an execve; the rest is glibc's
# own search): the same program, the same exec records (every file that is
# there is tried, in order, absent ones are not recorded), the same errors.
t_path_search() {
	trap cleanup_sessions EXIT
	local id rc out
	id=$(create)
	ex "$id" -- sh -c 'mkdir -p /tmp/p1 /tmp/p2/cmdx /tmp/p3 /tmp/p4
		echo "echo p1" >/tmp/p1/cmdx
		printf "#!/bin/sh\necho p3 \$0\n" >/tmp/p3/cmdx
		echo "echo via-sh" >/tmp/p4/noshe
		chmod +x /tmp/p3/cmdx /tmp/p4/noshe' || fail "set-up failed"
	# not executable (p1), a directory (p2): passed over, as execvp does
	assert_eq "p3 /tmp/p3/cmdx" "$(ex --env PATH=/tmp/nope:/tmp/p1:/tmp/p2:/tmp/p3 "$id" -- cmdx)" \
		"the first executable file in PATH order"
	assert_eq "via-sh" "$(ex --env PATH=/tmp/nope:/tmp/p4 "$id" -- noshe)" "a file without #! runs through /bin/sh"
	assert_eq "p3 cmdx" "$(ex --cwd /tmp/p3 --env PATH=/tmp/nope::/usr/bin "$id" -- cmdx)" \
		"an empty PATH element is the working directory"
	rc=0
	ex --env PATH=/tmp/nope:/tmp/p1 "$id" -- cmdx 2>err || rc=$?
	assert_eq 126 "$rc" "only a file that cannot be executed: 126"
	assert_contains "$(cat err)" "Permission denied" "says why"
	rc=0
	ex --env PATH=/tmp/nope:/tmp/p0 "$id" -- nosuch 2>err || rc=$?
	assert_eq 127 "$rc" "nowhere in PATH: 127"
	assert_contains "$(cat err)" "No such file" "says why"
	assert_eq "x" "$(ex "$id" -- echo x)" "the default PATH"
	timeout 10 "$MOAT" logs --json "$id" >log
	out=$(jq -r 'select(.type == "exec" and .argv[0] == "cmdx") | .path' log | head -3 | tr '\n' ' ')
	assert_eq "/tmp/p1/cmdx /tmp/p2/cmdx /tmp/p3/cmdx " "$out" "every file there tried and recorded, in order"
	out=$(jq -r 'select(.type == "exec" and .argv[0] == "noshe") | .path' log | tr '\n' ' ')
	assert_eq "/tmp/p4/noshe " "$out" "the script's own exec recorded"
	assert_eq 1 "$(jq -r 'select(.type == "exec" and .argv[0] == "/bin/sh" and .argv[1] == "/tmp/p4/noshe") | .path' log | wc -l)" \
		"and its shell's"
	assert_eq "/usr/bin/echo" "$(jq -r 'select(.type == "exec" and .argv[0] == "echo") | .path' log)" \
		"echo found in the default PATH, one record"
	if grep -q '/tmp/nope' <(jq -r 'select(.type == "exec") | .path' log); then
		fail "an absent file was recorded"
	fi
}

run_test "create, exec (files kept, exit codes, env, cwd), ls, logs, rm" t_lifecycle
run_test "a bare command name is searched in PATH as execvp does, with the same records" t_path_search
run_test "logs --follow until the sandbox is gone" t_logs_follow
run_test "rm reviews and applies the workspace changes" t_review_at_rm
run_test "concurrent execs; rm of a busy sandbox needs --force" t_concurrent
run_test "the init's memory stays closed to the sandbox while execs start" t_init_undumpable
run_test "a new process stopped before its command: the supervisor waits 15 s, not forever" t_exec_stopped
run_test "a sandbox cannot see another's files or processes; stop" t_isolation
run_test "SIGKILL of the supervisor kills the sandbox's processes" t_kill_supervisor
run_test "idle timeout and lifetime destroy the sandbox as rm does" t_expiry
run_test "cp in and out: regular files only, no symlink followed, size cap" t_cp
run_test "cp of a directory in: no symlink followed, new directory, caps" t_cp_dir_in
run_test "cp of a directory in while the source swaps a directory and a symlink" t_cp_dir_in_race
run_test "ls shows the limits as set" t_ls_limits
run_test "ls lists a supervisor that does not answer as busy, and the others" t_ls_busy_supervisor
run_test "a crashed supervisor leaves nothing moat gc cannot clean" t_crash_gc
run_test "10 create/exec/rm cycles leave nothing behind" t_cli_cycles
run_test "exec on a terminal; signals forwarded" t_tty_signals
run_test "exec --tty over a pending ^D: no stray NUL (deterministic, with a control)" t_exec_tty_no_stray_nul
run_test "bad input: unknown ids, names, options" t_bad_input
run_test "rm --all" t_rm_all
run_test "another user cannot see or drive a sandbox" t_other_user
run_test "a process in a sandbox cannot drive a session" t_from_inside
t_done
