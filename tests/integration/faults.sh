#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Fault injection (issue 8): moat SIGKILLed at every stage of setup and during
# the run leaves nothing behind once `moat gc` ran; a full, read-only or
# fd-starved state directory gives a clear error and nothing half-set-up
# runs; 50 sandboxes in parallel and 500 in sequence stay isolated and moat's
# resources return to baseline; bad values of every flag and policy key give
# exit 2 naming the flag or key, and nothing crashes.
# Stages are hit deterministically with the test build's hook
# MOAT_TEST_STALL_AT=<stage> (only in moat-testing, and only with
# MOAT_TEST_LAYERS=1; the shipped moat has no such hook: shipped.sh).
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
RUNS_DIR=$(runs_dir)

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
		MOAT_TEST_LAYERS=1 MOAT_TEST_STALL_AT=$stage "$MOAT_TESTING_BIN" run --quiet $opts -- /bin/sh -c 'sleep 300' \
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

# Even in the test build the stall hook does nothing without MOAT_TEST_LAYERS=1.
t_stall_gated() {
	local out
	out=$(env -u MOAT_TEST_LAYERS MOAT_TEST_STALL_AT=prepared timeout 20 "$MOAT_TESTING_BIN" run --quiet -- /bin/echo ran 2>&1) ||
		fail "moat run failed or stalled: $out"
	assert_eq ran "$out"
}

# ------------------------------------------------------------ the state directory

# Forget the records of our own failed runs (root: a shared runs directory).
forget_runs() {
	local id
	for id in "$@"; do
		case $id in '' | *[!0-9a-f]*) continue ;; esac
		rm -rf "${RUNS_DIR:?}/$id"
	done
}

# run_in_faulty_state KIND: moat run with its state directories on a full
# filesystem (KIND=full), read-only (ro), or only the live-run directory full
# (livefull). Root: a throw-away mount namespace (unshare -m) over the real
# directories; unprivileged: a throw-away user+mount namespace that mounts a
# small tmpfs, then a nested user namespace mapping the user's own uid back,
# so that moat runs unprivileged with XDG_STATE_HOME on that tmpfs.
run_in_faulty_state() {
	local kind=$1 fill='dd if=/dev/zero of="$0/fill" bs=4k 2>/dev/null; true'
	if is_root; then
		local setup
		case $kind in
		full) setup="mount -t tmpfs -o size=64k tmpfs /run/moat && mount -t tmpfs -o size=64k tmpfs /var/lib/moat/runs && sh -c '$fill' /run/moat && sh -c '$fill' /var/lib/moat/runs" ;;
		livefull) setup="mount -t tmpfs -o size=64k tmpfs /run/moat && sh -c '$fill' /run/moat" ;;
		ro) setup="mount --bind /run/moat /run/moat && mount -o remount,bind,ro /run/moat && mount --bind /var/lib/moat/runs /var/lib/moat/runs && mount -o remount,bind,ro /var/lib/moat/runs" ;;
		esac
		mkdir -p /run/moat /var/lib/moat/runs
		unshare -m --propagation private sh -c "$setup && exec \"\$0\" run --quiet --json-status $PWD/status.json -- /bin/echo RAN" "$MOAT"
	else
		local s=$PWD/state-$kind
		rm -rf "$s"
		mkdir -p "$s"
		case $kind in
		ro)
			chmod 555 "$s"
			XDG_STATE_HOME=$s "$MOAT" run --quiet --json-status "$PWD/status.json" -- /bin/echo RAN
			;;
		full | livefull)
			local size=64k
			unshare -Urm sh -c "mount -t tmpfs -o size=$size tmpfs '$s' && mkdir -p '$s/x/moat/runs' && sh -c '$fill' '$s' && exec unshare --map-user=$(id -u) --map-group=$(id -g) env XDG_STATE_HOME='$s/x' \"\$0\" run --quiet --json-status $PWD/status.json -- /bin/echo RAN" "$MOAT"
			;;
		esac
	fi
}

# The run failed cleanly: exit 125, a message naming the cause, the command
# never ran, and nothing of the run is left.
assert_clean_failure() {
	local rc=$1 out=$2 cause=$3 id
	echo "# exit $rc: $out"
	assert_eq 125 "$rc" "exit status"
	assert_not_contains "$out" "RAN" "output (the command must not run)"
	assert_contains "$out" "sandbox not started"
	assert_contains "$out" "$cause"
	id=$(grep -o '[0-9a-f]\{16,32\}' <<<"$out" | head -1 || true)
	if [ -n "$id" ]; then
		assert_run_gone "$id" "" ""
		forget_runs "$id"
	fi
}

t_state_full() {
	local rc=0 out
	out=$(run_in_faulty_state full 2>&1) || rc=$?
	if ! is_root && [ "$rc" != 125 ] && grep -q "unshare" <<<"$out"; then
		skip "no nested user namespaces here: $out"
	fi
	assert_clean_failure "$rc" "$out" "No space left on device"
}

t_state_ro() {
	local rc=0 out
	out=$(run_in_faulty_state ro 2>&1) || rc=$?
	if is_root; then
		assert_clean_failure "$rc" "$out" "Read-only file system"
	else
		assert_clean_failure "$rc" "$out" "Permission denied"
	fi
}

# The network plugins (moat-net.so, moat-nft.so, loaded for --net allow
# only): missing, or writable by others, and --net allow fails closed naming
# the file, while runs without network access do not need them. The positive
# control: the same copy with the plugins in place runs --net allow.
t_net_plugin() {
	local d=$T_OUT/plugin rc out
	mkdir -p "$d"
	cp "$MOAT" "$d/moat"
	rc=0
	out=$("$d/moat" run --net allow -- /bin/true 2>&1) || rc=$?
	assert_eq 125 "$rc" "exit status without the plugin"
	assert_contains "$out" "network plugin moat-net.so is not installed"
	rc=0
	"$d/moat" run -- /bin/true 2>/dev/null || rc=$?
	assert_eq 0 "$rc" "--net none without the plugin"
	cp "$(dirname "$MOAT")/moat-net.so" "$d/moat-net.so"
	rc=0
	out=$("$d/moat" run --net allow -- /bin/true 2>&1) || rc=$?
	assert_eq 125 "$rc" "exit status without the nftables plugin"
	assert_contains "$out" "network plugin moat-nft.so is not installed"
	cp "$(dirname "$MOAT")/moat-nft.so" "$d/moat-nft.so"
	chmod 0664 "$d/moat-net.so"
	rc=0
	out=$("$d/moat" run --net allow -- /bin/true 2>&1) || rc=$?
	assert_eq 125 "$rc" "exit status with a group-writable plugin"
	assert_contains "$out" "others can write it"
	chmod 0644 "$d/moat-net.so"
	rc=0
	out=$("$d/moat" run --net allow -- sh -c 'echo "$HTTP_PROXY"' 2>&1) || rc=$?
	assert_eq 0 "$rc" "--net allow with the plugin"
	assert_contains "$out" "http://127.0.0.1:3128"
}

# Only the live-run record cannot be written: by design (state.h) the record
# is bookkeeping for gc/ps, not a restriction, so the run goes ahead; it must
# still run completely and leave nothing.
t_state_live_full() {
	local rc=0 out id
	out=$(run_in_faulty_state livefull 2>&1) || rc=$?
	echo "# exit $rc: $out"
	if is_root; then
		assert_eq 0 "$rc" "exit status"
		assert_contains "$out" "RAN"
		id=$(field status.json run)
		assert_run_gone "$id" "" ""
		forget_runs "$id"
	else
		# the tmpfs holds runs and live alike: the audit log cannot be written
		[ "$rc" = 0 ] || assert_clean_failure "$rc" "$out" "No space left on device"
	fi
}

# EMFILE: with a small soft RLIMIT_NOFILE every stage of setup fails in turn;
# each must be a clean exit 125 naming the cause, never a crash, never a
# half-set-up command.
t_emfile() {
	local n rc out failed=0 ran=0 ids=()
	for n in 4 5 6 8 10 12 14 16 18 20 24 28 32 40 48 56 60 63 64 80; do
		rc=0
		out=$(ulimit -Sn "$n" && "$MOAT" run --quiet --json-status "$PWD/st.json" -- /bin/echo RAN 2>&1) || rc=$?
		echo "# nofile $n: exit $rc: $(head -1 <<<"$out")"
		[ "$rc" -lt 128 ] || fail "moat crashed with nofile $n: exit $rc: $out"
		if [ "$rc" = 0 ]; then
			assert_eq RAN "$out" "output with nofile $n"
			ran=$((ran + 1))
		else
			assert_eq 125 "$rc" "exit status with nofile $n"
			assert_not_contains "$out" "RAN" "output with nofile $n"
			case $out in
			*"Too many open files"* | *RLIMIT_NOFILE*) ;;
			*) fail "nofile $n: the message does not name the cause: $out" ;;
			esac
			failed=$((failed + 1))
		fi
		if [ -s st.json ]; then ids+=("$(field st.json run)"); fi
		rm -f st.json
	done
	[ "$failed" -ge 5 ] || fail "EMFILE was hit only $failed times: the test proves nothing"
	[ "$ran" -ge 1 ] || fail "moat never ran even with enough fds"
	for id in "${ids[@]}"; do assert_run_gone "$id" "" ""; done
	forget_runs "${ids[@]}"
}

# ------------------------------------------------------- many sandboxes at once

# The program each sandbox runs: marks its /tmp, listens on an abstract and a
# pathname socket, reports ready, waits for go, then tries to reach every
# other sandbox's marker, sockets and processes. Prints OK or BAD ....
iso_py='
import os, socket, sys, time
i, n, tag = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
out = sys.argv[4] if len(sys.argv) > 4 else "/out"
open("/tmp/marker-%s-%d" % (tag, i), "w").write("x")
a = socket.socket(socket.AF_UNIX); a.bind("\0%s-%d" % (tag, i)); a.listen(64)
p = socket.socket(socket.AF_UNIX); p.bind("/tmp/sock-%s-%d" % (tag, i)); p.listen(64)
open(out + "/ready", "w").write("%d" % os.getpid())
for _ in range(1200):
    if os.path.exists(out + "/go"): break
    time.sleep(0.05)
bad = []
for j in range(n):
    if j == i: continue
    c = socket.socket(socket.AF_UNIX)
    try:
        c.connect("\0%s-%d" % (tag, j)); bad.append("abstract-%d" % j)
    except OSError: pass
    c.close()
    for f in ("/tmp/marker-%s-%d" % (tag, j), "/tmp/sock-%s-%d" % (tag, j)):
        if os.path.exists(f): bad.append(f)
mine = ("\0%d\0%d\0%s" % (i, n, tag)).encode()
for d in os.listdir("/proc"):
    if not d.isdigit(): continue
    try: cmd = open("/proc/%s/cmdline" % d, "rb").read()
    except OSError: continue
    if tag.encode() in cmd and mine not in cmd: bad.append("sees pid %s: %r" % (d, cmd[:80]))
print("OK" if not bad else "BAD " + " ".join(bad))
sys.stdout.flush()
time.sleep(float(sys.argv[5]) if len(sys.argv) > 5 else 0)
'

# Positive control: two instances of the same program without moat (one
# /tmp, one network namespace, one pid namespace) must each see the other.
t_parallel_control() {
	local tag="isoc$$r$RANDOM" p0 p1 bad
	mkdir -p c0 c1
	python3 -c "$iso_py" 0 2 "$tag" "$PWD/c0" 3 >c0.log 2>&1 &
	p0=$!
	python3 -c "$iso_py" 1 2 "$tag" "$PWD/c1" >c1.log 2>&1 &
	p1=$!
	for _ in $(seq 50); do [ -s c0/ready ] && [ -s c1/ready ] && break; sleep 0.1; done
	touch c0/go c1/go
	wait "$p1" || true
	kill "$p0" 2>/dev/null || true
	wait "$p0" 2>/dev/null || true
	rm -f "/tmp/marker-$tag-0" "/tmp/marker-$tag-1" "/tmp/sock-$tag-0" "/tmp/sock-$tag-1"
	bad=$(cat c1.log)
	echo "# control: $bad"
	assert_contains "$bad" "BAD"
	assert_contains "$bad" "abstract-0"
	assert_contains "$bad" "marker-$tag-0"
	assert_contains "$bad" "sees pid"
}

t_parallel_50() {
	local n=50 tag i pids=() rc id bad=0 ids=()
	tag="iso$$r$RANDOM"
	chmod 755 "$PWD"
	for i in $(seq 0 $((n - 1))); do
		mkdir -p "p$i"
		chmod 777 "p$i"
		"$MOAT" run --quiet --rw "$PWD/p$i:/out" --json-status "$PWD/p$i.status" -- \
			/usr/bin/python3 -c "$iso_py" "$i" "$n" "$tag" >"p$i.log" 2>&1 &
		pids+=($!)
	done
	for _ in $(seq 600); do
		[ "$(find . -maxdepth 2 -name ready | wc -l)" -ge "$n" ] && break
		sleep 0.1
	done
	[ "$(find . -maxdepth 2 -name ready | wc -l)" -ge "$n" ] || {
		kill "${pids[@]}" 2>/dev/null || true
		fail "not all $n sandboxes got ready: $(cat p0.log)"
	}
	# From the host: the sandboxes' abstract sockets live in their own network
	# namespaces, out of the host's reach too.
	python3 -c '
import socket, sys
tag, n = sys.argv[1], int(sys.argv[2])
for j in range(n):
    c = socket.socket(socket.AF_UNIX)
    try:
        c.connect("\0%s-%d" % (tag, j)); print("host reached abstract %d" % j); sys.exit(1)
    except OSError: pass
' "$tag" "$n" || bad=1
	for i in $(seq 0 $((n - 1))); do touch "p$i/go"; done
	for i in $(seq 0 $((n - 1))); do
		rc=0
		wait "${pids[$i]}" || rc=$?
		if [ "$rc" != 0 ] || [ "$(cat "p$i.log")" != OK ]; then
			echo "# sandbox $i: exit $rc: $(cat "p$i.log")"
			bad=1
		fi
		[ -s "p$i.status" ] && ids+=("$(field "p$i.status" run)")
	done
	[ "$bad" = 0 ] || fail "sandboxes reached each other (or failed)"
	assert_eq "$n" "${#ids[@]}" "status records"
	for id in "${ids[@]}"; do assert_run_gone "$id" "" ""; done
	if pgrep -f -- "$tag"; then fail "processes of the sandboxes survived"; fi
	forget_runs "${ids[@]}"
}

t_sequence_500() {
	local n=500 i rc out tag ids=() t0
	tag="seq$$r$RANDOM"
	t0=$(date +%s)
	for i in $(seq 1 $n); do
		rc=0
		out=$("$MOAT" run --quiet --json-status "$PWD/s.json" -- /bin/sh -c \
			"ls /tmp; echo x >/tmp/$tag-$i; ls /proc | grep -c '^[0-9]'" 2>&1) || rc=$?
		# a fresh /tmp (nothing of earlier runs) and only its own processes
		# (sh, ls, grep and init)
		if [ "$rc" != 0 ] || [ "$(head -1 <<<"$out")" != "$(tail -1 <<<"$out")" ] ||
			[ "$(tail -1 <<<"$out")" -gt 5 ]; then
			fail "run $i: exit $rc: $out"
		fi
		ids+=("$(field s.json run)")
	done
	echo "# $n runs in $(($(date +%s) - t0)) s"
	for id in "${ids[@]}"; do
		[ ! -e "$(live_dir)/$id" ] || fail "state entry of run $id left"
		if grep -qF "$id" /proc/self/mountinfo; then fail "mount of run $id left"; fi
	done
	if [ -n "$(find /sys/fs/cgroup -maxdepth 6 -name "*$tag*" 2>/dev/null)" ]; then fail "cgroups left"; fi
	for id in "${ids[@]:0:20}" "${ids[@]: -20}"; do assert_run_gone "$id" "" ""; done
	if pgrep -f -- "$tag"; then fail "processes survived"; fi
	forget_runs "${ids[@]}"
}

# ------------------------------------------------------------------ bad input

# Every flag of `moat run --help` with malformed values: exit 2 naming the
# flag, or (a value that happens to be valid) a normal run; never a crash,
# never another exit status. Each value-taking flag must reject at least one.
t_bad_flags() {
	local f t v rc out long rejected bad=0
	long=$(head -c 5000 /dev/zero | tr '\0' x)
	while read -r f t; do
		[ "$f" = --policy ] && continue
		if [ "$t" = n ]; then
			rc=0
			out=$("$MOAT" run --quiet "$f=x" -- /bin/true 2>&1 </dev/null) || rc=$?
			if [ "$rc" != 2 ] || [[ $out != *"$f"* ]]; then
				echo "# $f=x: exit $rc: $out"
				bad=1
			fi
			continue
		fi
		rejected=0
		for v in "" $'\x01\x1b[31m\n' "$long" -1 99999999999999999999999 abc a:b:c:d /nonexistent/../x; do
			rc=0
			# each in an empty directory of its own: a relative path
			# value (issue 18) must not meet what an earlier one made
			out=$(cd "$(mktemp -d "$T_OUT/bf.XXXXXX")" &&
				timeout 30 "$MOAT" run --quiet "$f" "$v" -- /bin/true 2>&1 </dev/null) || rc=$?
			[ "$rc" -lt 128 ] || { echo "# CRASH $f $(printf %q "$v" | head -c 40): exit $rc"; bad=1; }
			case $rc in
			0) ;;
			2)
				rejected=1
				if [[ $out != *"$f"* ]]; then
					echo "# $f $(printf %q "$v" | head -c 40): the message does not name the flag: $out"
					bad=1
				fi
				if [[ $out == *$'\x1b'* ]]; then
					echo "# $f: the message echoes an escape sequence raw"
					bad=1
				fi
				;;
			125)
				# only where the value is valid but its layer is not in
				# this build (--net allow: the egress proxy), or names a
				# variable moat's environment lacks (--env NAME)
				if [[ $out != *"not available in this build"* ]] &&
					[[ $out != *"not set in moat's environment"* ]]; then
					echo "# $f $(printf %q "$v" | head -c 40): exit 125: $out"
					bad=1
				fi
				;;
			*)
				echo "# $f $(printf %q "$v" | head -c 40): exit $rc: $out"
				bad=1
				;;
			esac
		done
		if [ "$rejected" = 0 ]; then
			echo "# $f accepted every malformed value"
			bad=1
		fi
	done < <("$MOAT" run --help 2>&1 | awk '$1 ~ /^--/ { print $1, ($2 ~ /^[A-Z]|\|/ ? "v" : "n") }')
	[ "$bad" = 0 ] || fail "flags mishandled (see above)"
}

# Every key of the policy schema with values of the wrong type and malformed
# values: `moat policy check` exits 2 naming the key (dotted path); never a
# crash.
t_bad_policy_keys() {
	python3 - "$MOAT" <<'PY' || fail "policy keys mishandled (see above)"
import json, subprocess, sys
moat = sys.argv[1]
# every key of the schema (policy_json.c), with a valid example value
keys = {
    "filesystem.rootfs": "/srv/root", "filesystem.workspace.path": "/srv/moat-ws",
    "filesystem.workspace.mode": "overlay", "filesystem.input": "/tmp",
    "filesystem.output": "/tmp/o", "filesystem.output_overwrite": False,
    "filesystem.mounts[0].type": "ro", "filesystem.mounts[0].src": "/usr",
    "filesystem.mounts[0].dest": "/x", "filesystem.mounts[0].size": "1M",
    "process.uid": 1000, "process.gid": 1000, "process.user": "agent",
    "process.hostname": "moat", "process.cwd": "/tmp", "process.env.A": "b",
    "process.tty": "auto", "limits.cpus": "1", "limits.memory": "1G",
    "limits.pids": 64, "limits.timeout": "10s", "limits.kill_grace": "1s",
    "limits.disk": "1G", "limits.max_output": "1G", "limits.nofile": 1024,
    "limits.fsize": "1G", "allow_degraded[0]": "landlock",
    "syscalls.allow[0]": "ptrace", "syscalls.deny[0]": "chmod", "network.mode": "none",
    "network.allow_hosts[0]": "example.com", "network.deny_hosts[0]": "bad.example.com",
    "network.allow_cidrs[0]": "10.0.0.0/8", "network.resolve.host1": "127.0.0.1",
    "network.upstream_ca": "/etc/ssl/certs/ca.pem", "secrets[0].name": "TOKEN",
    "secrets[0].from_env": "TOKEN", "secrets[0].hosts[0]": "api.example.com",
    "audit.log": "/tmp/l.jsonl", "audit.on_alert": "true",
    "audit.record_exec": True, "audit.apply": "safe", "audit.flag_patterns[0]": "*.sh",
}
bad_values = [None, True, 12345, -1, 1e300, "", "\u001b[31m\u0007", "x" * 5000, [], {}]
import copy
# keys that need their siblings: the smallest valid document around them
bases = [
    ("filesystem.workspace.", {"filesystem": {"workspace": {"path": "/srv/moat-ws", "mode": "overlay"}}}),
    ("filesystem.mounts[0].size", {"filesystem": {"mounts": [{"type": "tmpfs", "dest": "/x", "size": "1M"}]}}),
    ("filesystem.mounts[0].", {"filesystem": {"mounts": [{"type": "ro", "src": "/usr", "dest": "/x"}]}}),
    ("network.mode", {}),
    ("network.", {"network": {"mode": "allow"}}),
    ("secrets[0].", {"network": {"mode": "allow"},
                     "secrets": [{"name": "TOKEN", "from_env": "TOKEN", "hosts": ["api.example.com"]}]}),
]
def base(path):
    for prefix, b in bases:
        if path.startswith(prefix):
            d = copy.deepcopy(b); d["version"] = 1; return d
    return {"version": 1}
def put(doc, path, v):
    parts = path.replace("[0]", ".[0]").split(".")
    cur = doc
    for k, nxt in zip(parts, parts[1:] + [None]):
        if k == "[0]":
            if nxt is None: cur.append(v); return
            if not cur: cur.append({} if nxt != "[0]" else [])
            cur = cur[0]; continue
        if nxt is None: cur[k] = v; return
        cur = cur.setdefault(k, [] if nxt == "[0]" else {})
def check(doc):
    open("bad.json", "w").write(json.dumps(doc))
    r = subprocess.run([moat, "policy", "check", "bad.json"], capture_output=True)
    return r.returncode, r.stdout.decode(errors="replace") + r.stderr.decode(errors="replace")
bad = 0
for path, good in keys.items():
    doc = base(path)
    put(doc, path, good)
    rc, out = check(doc)
    if rc != 0:
        print("# valid example of %s refused: %s" % (path, out.strip())); bad = 1; continue
    rejected = 0
    for v in bad_values:
        if v == good or (isinstance(good, bool) and isinstance(v, bool)): continue
        doc = base(path)
        put(doc, path, v)
        rc, out = check(doc)
        if rc >= 128 or rc not in (0, 2):
            print("# %s = %r: exit %d: %s" % (path, v, rc, out.strip()[:200])); bad = 1
        elif rc == 2:
            rejected += 1
            name = path.split("[0]")[0].split(".")[-1] if not path.endswith("[0]") else path[:-3].split(".")[-1]
            if name not in out:
                print("# %s = %r: message does not name the key: %s" % (path, v, out.strip()[:200])); bad = 1
            if "\x1b" in out:
                print("# %s: the message echoes an escape sequence raw" % path); bad = 1
    if rejected < 3:
        print("# %s: only %d malformed values refused" % (path, rejected)); bad = 1
# unknown keys and top-level shapes
for doc in ({"version": 1, "bogus\u001b[2J": 1}, {"version": 2}, [], "x", {"version": 1, "limits": 5}):
    rc, out = check(doc)
    if rc != 2 or "\x1b" in out:
        print("# %r: exit %d: %s" % (doc, rc, out.strip()[:200])); bad = 1
sys.exit(bad)
PY
}

run_test "SIGKILL after the supervisor's preparation (cgroups, state, log)" t_kill_prepared
run_test "SIGKILL right after clone" t_kill_cloned
run_test "SIGKILL after id maps and cgroup attach, before go" t_kill_child
run_test "SIGKILL while init starts" t_kill_init_go
run_test "SIGKILL after init's mounts" t_kill_init_mounted
run_test "SIGKILL after init's Landlock and seccomp" t_kill_init_restricted
run_test "SIGKILL after setup, command starting" t_kill_started
run_test "SIGKILL while the command runs" t_kill_running
run_test "test build: the stall hook needs MOAT_TEST_LAYERS=1" t_stall_gated
run_test "state directory on a full filesystem: clean exit 125" t_state_full
run_test "read-only state directory: clean exit 125" t_state_ro
run_test "live-run record on a full filesystem" t_state_live_full
run_test "network plugin missing or writable by others: --net allow fails closed" t_net_plugin
run_test "EMFILE at every stage: clean exit 125, never a crash" t_emfile
run_test "isolation check, positive control without moat" t_parallel_control
run_test "50 sandboxes in parallel: isolated, nothing left" t_parallel_50
run_test "500 sandboxes in sequence: isolated, nothing left" t_sequence_500
run_test "bad values of every flag: exit 2 naming it" t_bad_flags
run_test "bad values of every policy key: exit 2 naming it" t_bad_policy_keys
t_done
