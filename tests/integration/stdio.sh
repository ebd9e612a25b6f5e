#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The command's standard streams (issue 13 item 6): the sandbox never holds a
# file description of the caller. Hostile probes on stdout, stderr and stdin
# given as host files, each with a positive control (the same probe run
# directly, unprivileged, does rewrite its file), and the relay's semantics:
# completeness, order, EOF, stdin left where the command stopped, a
# background child holding stdout, --max-output, a reader that goes away.
# shellcheck source=tests/lib/tap.sh
. "$(dirname "$0")/../lib/tap.sh"

mrun() { "$MOAT" run --quiet "$@"; }

PROBE="$T_OUT/stdio_probe"
${CC:-cc} -O1 -o "$PROBE" "$MOAT_TEST_DIR/integration/stdio_probe.c" 2>"$T_OUT/cc.log" || PROBE=
chmod 755 "$T_OUT" 2>/dev/null || true

need_probe() { [ -n "$PROBE" ] || skip "cannot compile the probe: $(head -c 200 "$T_OUT/cc.log")"; }
prun() { mrun --ro "$PROBE:/probe" "$@"; }

# The positive control runs the probe outside moat, never as host root: as
# root inside a throw-away user+mount namespace, otherwise as ourselves.
direct() {
	if is_root; then
		unshare -Urm "$@"
	else
		"$@"
	fi
}

old_content() { printf 'OLD LINE 1\nOLD LINE 2\n'; }

# The file holds the old content, byte for byte, then the probe's output. As
# the unprivileged user the probe may reopen /proc/self/fd/N: that is its
# own relay pipe, so what it writes there ("REOPENED") is output like any.
assert_old_then_output() {
	local f=$1 what=$2 n
	n=$(old_content | wc -c)
	assert_eq "$(old_content | sha256sum)" "$(head -c "$n" "$f" | sha256sum)" "$what: the old content"
	assert_eq "PROBE-OUTPUT" "$(tail -c +"$((n + 1))" "$f" | grep -v '^REOPENED$')" "$what: what follows it"
}

t_stdout_append_hostile() {
	need_probe
	local f="$T_OUT/app.log"
	old_content >"$f"
	prun -- /probe out 1 >>"$f"
	assert_old_then_output "$f" "host file after the probe on stdout"
	# control: the same probe, run directly, rewrites the file it appends to
	local c="$T_OUT/ctl.log"
	old_content >"$c"
	direct "$PROBE" out 1 >>"$c"
	case "$(cat "$c")" in
	"OLD LINE 1"*) fail "control: the probe did not rewrite its own file: $(cat "$c")" ;;
	esac
}

t_stderr_append_hostile() {
	need_probe
	local f="$T_OUT/err.log" c="$T_OUT/ctl-err.log"
	old_content >"$f"
	prun -- /probe out 2 2>>"$f"
	assert_old_then_output "$f" "host file after the probe on stderr"
	old_content >"$c"
	direct "$PROBE" out 2 2>>"$c"
	case "$(cat "$c")" in
	"OLD LINE 1"*) fail "control: the probe did not rewrite its own file" ;;
	esac
}

# `> file` (no O_APPEND): the shared offset still works, before and after.
t_stdout_shared_offset() {
	need_probe
	local f="$T_OUT/off.log"
	{
		echo first
		prun -- /probe out 1
		echo last
	} >"$f"
	assert_eq "first
PROBE-OUTPUT
last" "$(grep -v '^REOPENED$' "$f")" "a file opened by the shell, written before and after"
}

t_stdin_file_hostile() {
	need_probe
	local f="$T_OUT/in.txt" out
	old_content >"$f"
	chmod 666 "$f"
	out=$(prun -- /probe in <"$f")
	assert_eq "$(old_content)" "$(cat "$f")" "host file given as stdin"
	assert_contains "$out" "OLD LINE 2" "what the command read"
	local c="$T_OUT/ctl-in.txt"
	old_content >"$c"
	out=$(direct "$PROBE" in <"$c")
	[ "$(cat "$c")" != "$(old_content)" ] || fail "control: the probe did not rewrite its stdin"
}

t_flock_not_host() {
	need_probe
	local f="$T_OUT/lock.log" pid i
	: >"$f"
	prun -- /probe lock 1 >>"$f" 2>"$T_OUT/lock.err" &
	pid=$!
	for i in $(seq 1 100); do
		grep -q LOCK "$T_OUT/lock.err" 2>/dev/null && break
		sleep 0.1
	done
	flock -n -x "$f" true || fail "the sandbox holds a lock on the host file ($(cat "$T_OUT/lock.err"))"
	wait "$pid"
	# control: directly, the lock is on the file
	: >"$T_OUT/ctl.lock"
	direct "$PROBE" lock 1 >>"$T_OUT/ctl.lock" 2>"$T_OUT/ctl.err" &
	pid=$!
	for i in $(seq 1 100); do
		grep -q LOCK "$T_OUT/ctl.err" 2>/dev/null && break
		sleep 0.1
	done
	if flock -n -x "$T_OUT/ctl.lock" true; then fail "control: the probe's lock was not seen"; fi
	wait "$pid"
}

# What the sandbox sees behind its fds: its own pipes, nothing of the host.
t_fds_are_pipes() {
	local out
	echo x >"$T_OUT/fd.in"
	mrun -- /bin/sh -c 'for i in 0 1 2; do readlink /proc/self/fd/$i; done' \
		<"$T_OUT/fd.in" >"$T_OUT/fd.out" 2>"$T_OUT/fd.err"
	out=$(cat "$T_OUT/fd.out")
	assert_not_contains "$out" "$T_OUT" "a host file behind a standard fd"
	assert_eq 3 "$(printf '%s\n' "$out" | grep -c '^pipe:')" "pipes on 0..2: $out"
}

t_large_output_complete() {
	local want got
	want=$(seq 1 8000000 | sha256sum)
	got=$(mrun -- seq 1 8000000 | sha256sum)
	assert_eq "$want" "$got" "64 MiB through a pipe"
	mrun -- seq 1 8000000 >"$T_OUT/big"
	assert_eq "$want" "$(sha256sum <"$T_OUT/big")" "64 MiB into a file"
	mrun -- seq 1 8000000 >>"$T_OUT/big2"
	assert_eq "$want" "$(sha256sum <"$T_OUT/big2")" "64 MiB appended to a file"
	rm -f "$T_OUT/big" "$T_OUT/big2"
	want=$(head -c 20000000 /dev/zero | sha256sum)
	got=$(head -c 20000000 /dev/zero | mrun -- cat | sha256sum)
	assert_eq "$want" "$got" "20 MB through stdin and stdout"
}

t_ordering() {
	local want
	want=$(for i in $(seq 1 3000); do
		echo "o$i"
		echo "e$i"
	done)
	# 2>&1: one pipe for both, so their order is kept
	mrun -- /bin/sh -c 'i=1; while [ $i -le 3000 ]; do echo o$i; echo e$i >&2; i=$((i+1)); done' >"$T_OUT/both" 2>&1
	assert_eq "$want" "$(cat "$T_OUT/both")" "stdout and stderr into one file"
	mrun -- /bin/sh -c 'i=1; while [ $i -le 3000 ]; do echo o$i; echo e$i >&2; i=$((i+1)); done' >"$T_OUT/o" 2>"$T_OUT/e"
	assert_eq "$(seq 1 3000 | sed 's/^/o/')" "$(cat "$T_OUT/o")" "stdout alone"
	assert_eq "$(seq 1 3000 | sed 's/^/e/')" "$(cat "$T_OUT/e")" "stderr alone"
}

t_stdin_eof_and_closed() {
	assert_eq "abc" "$(printf abc | mrun -- cat)" "stdin from a pipe, then EOF"
	assert_eq "" "$(mrun -- cat </dev/null)" "stdin from /dev/null"
	assert_eq "closed" "$(mrun -- /bin/sh -c '[ -e /proc/self/fd/0 ] && echo open || echo closed' <&-)" "a closed stdin stays closed"
	local rc=0
	mrun -- /bin/sh -c 'echo x' >&- 2>/dev/null || rc=$?
	[ "$rc" -ne 0 ] || fail "a write to a closed stdout succeeded"
	# a reader that waits for EOF gets it although the writer lives on
	assert_eq "1" "$( (
		echo 1
		sleep 1
	) | mrun -- /bin/sh -c 'read x; echo $x')" "a line, the writer still open"
}

# What the command did not read stays for the next reader: pipe and file.
t_stdin_left_for_next() {
	local out
	out=$(printf 'a\nb\nc\n' | {
		mrun -- /bin/sh -c 'read x; echo got $x'
		cat
	})
	assert_eq "got a
b
c" "$out" "a pipe read in part"
	printf 'a\nb\nc\n' >"$T_OUT/lines"
	out=$({
		mrun -- /bin/sh -c 'read x; echo got $x'
		cat
	} <"$T_OUT/lines")
	assert_eq "got a
b
c" "$out" "a file read in part"
	out=$(while read -r l; do
		mrun -- /bin/true
		echo "$l"
	done <"$T_OUT/lines")
	assert_eq "a
b
c" "$out" "a loop over a file, the command reads nothing"
	out=$(printf 'a\nb\nc\n' | while read -r l; do
		mrun -- /bin/true
		echo "$l"
	done)
	assert_eq "a
b
c" "$out" "a loop over a pipe, the command reads nothing"
}

t_background_child_holds_stdout() {
	local t0 t1 out
	t0=$(date +%s)
	out=$(mrun -- /bin/sh -c 'sleep 60 & echo started')
	t1=$(date +%s)
	assert_eq started "$out"
	[ $((t1 - t0)) -lt 10 ] || fail "moat waited $((t1 - t0)) s for a background child holding stdout"
}

t_max_output() {
	local n rc=0
	n=$(mrun --max-output 1M --log "$T_OUT/mo.jsonl" -- head -c 10000000 /dev/zero | wc -c) || rc=$?
	assert_eq 1048576 "$n" "bytes relayed with --max-output 1M"
	grep -q '"type":"limit".*"what":"stdio"' "$T_OUT/mo.jsonl" ||
		fail "no limit event: $(grep limit "$T_OUT/mo.jsonl" | head -c 300)"
	n=$(mrun --max-output 1M -- /bin/sh -c 'head -c 600000 /dev/zero; head -c 600000 /dev/zero >&2' 2>&1 | wc -c)
	assert_eq 1048576 "$n" "stdout and stderr count together"
	n=$(mrun -- head -c 3000000 /dev/zero | wc -c)
	assert_eq 3000000 "$n" "below the default"
}

t_reader_goes_away() {
	local rc=0 st
	set +o pipefail
	mrun --json-status "$T_OUT/st.json" -- /bin/sh -c 'yes' | head -n 1 >/dev/null
	set -o pipefail
	st=$(sed -n 's/.*"exit_code": *\([0-9]*\).*/\1/p' "$T_OUT/st.json")
	assert_eq 141 "$st" "the command sees SIGPIPE once the reader is gone"
	: "$rc"
}

t_exit_status_kept() {
	local rc=0
	mrun -- /bin/sh -c 'echo out; echo err >&2; exit 7' >/dev/null 2>&1 || rc=$?
	assert_eq 7 "$rc"
}

# stdout and stdin on sockets (read + send/recv, never blocking the loop)
t_socket_streams() {
	command -v python3 >/dev/null || skip "python3 missing"
	local out
	out=$(python3 - "$MOAT" <<'PY'
import socket, subprocess, sys, hashlib
a, b = socket.socketpair()
c, d = socket.socketpair()
p = subprocess.Popen([sys.argv[1], "run", "--quiet", "--", "/bin/sh", "-c", "cat; seq 1 200000"],
                     stdout=a, stdin=c)
a.close(); c.close()
d.sendall(b"from-socket\n"); d.shutdown(socket.SHUT_WR)
data = b"".join(iter(lambda: b.recv(65536), b""))
p.wait()
want = b"from-socket\n" + b"".join(b"%d\n" % i for i in range(1, 200001))
print(p.returncode, data == want, len(data))
PY
)
	assert_eq "0 True $((12 + $(seq 1 200000 | wc -c)))" "$out" "stdin and stdout on sockets"
}

# RT-069 through the relay: a reader that never reads does not hold moat
# beyond the time limit (+ grace + one second of draining).
t_stalled_reader_timeout() {
	local f="$T_OUT/fifo" pid rc=0 t0 t1
	mkfifo "$f"
	# shellcheck disable=SC2217 # a reader that never reads
	sleep 20 <"$f" &
	pid=$!
	t0=$(date +%s%N)
	timeout -s KILL 30 "$MOAT" run --quiet --timeout 2s --kill-grace 500ms -- \
		head -c 1000000000 /dev/zero >"$f" 2>/dev/null || rc=$?
	t1=$(date +%s%N)
	kill "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
	assert_eq 124 "$rc" "exit status with a stalled reader"
	[ $(((t1 - t0) / 1000000)) -lt 8000 ] || fail "moat took $(((t1 - t0) / 1000000)) ms"
}

# The caller's stdout cannot take the bytes (ENOSPC: /dev/full stands for a
# full disk). The command wrote into moat's pipe and never saw the error, so
# moat must say so and fail; a plain program to the same file fails too.
t_write_error_reported() {
	local rc=0 err
	direct /bin/sh -c 'echo hi' >/dev/full 2>/dev/null || rc=$?
	[ "$rc" -ne 0 ] || skip "control: writing to /dev/full does not fail here"
	rc=0
	err=$(mrun --log "$T_OUT/full.jsonl" --json-status "$T_OUT/full.status.json" \
		-- /bin/sh -c 'echo hi; echo more' 2>&1 >/dev/full) || rc=$?
	# 1, or 141 if the second echo met the closed pipe (SIGPIPE)
	[ "$rc" -ne 0 ] || fail "a run whose stdout got ENOSPC exited 0 ($err)"
	assert_contains "$err" "cannot write the command's stdout: No space left on device"
	assert_contains "$(cat "$T_OUT/full.jsonl")" '"error":"ENOSPC"'
	assert_contains "$(cat "$T_OUT/full.status.json")" '"stdio_error":"cannot write the command'"'"'s stdout'
	# the command's own failure is kept
	rc=0
	mrun -- /bin/sh -c 'echo hi; exit 3' >/dev/full 2>/dev/null || rc=$?
	assert_eq 3 "$rc"
	# a reader that went away is no error (as without moat)
	rc=0
	err=$(mrun -- /bin/sh -c 'echo hi' 2>&1 | true) || rc=$?
	assert_not_contains "$err" "cannot write"
}

run_test "stdout >> host file: the sandbox cannot rewrite it" t_stdout_append_hostile
run_test "stderr >> host file: the sandbox cannot rewrite it" t_stderr_append_hostile
run_test "stdout > file shared with the shell: offsets kept" t_stdout_shared_offset
run_test "stdin < host file: the sandbox cannot rewrite it" t_stdin_file_hostile
run_test "flock on stdout does not lock the host file" t_flock_not_host
run_test "the command's fds 0..2 are moat's pipes" t_fds_are_pipes
run_test "64 MiB of output arrive complete (pipe, file, append)" t_large_output_complete
run_test "output order per stream, and 2>&1 interleaving" t_ordering
run_test "stdin EOF, /dev/null, closed stdin and stdout" t_stdin_eof_and_closed
run_test "stdin the command did not read stays for the next reader" t_stdin_left_for_next
run_test "a background child holding stdout does not hold moat" t_background_child_holds_stdout
run_test "--max-output bounds the relayed output" t_max_output
run_test "a reader that goes away: SIGPIPE for the command" t_reader_goes_away
run_test "exit status through the relay" t_exit_status_kept
run_test "stdin and stdout on sockets" t_socket_streams
run_test "a stalled reader: the time limit still ends the run" t_stalled_reader_timeout
run_test "a write error on the caller's stdout is reported (ENOSPC)" t_write_error_reported
t_done
