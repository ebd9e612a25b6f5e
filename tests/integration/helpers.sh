#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Issue 13, item 1: every process moat starts outside the sandbox's command
# holds exactly the descriptors it needs. During a --net allow run with a
# secret and an --on-alert hook (triggered by a denied request), the
# descriptor tables of the proxy helper, its resolver and the alert hook are
# listed from /proc and compared with the exact expected set; the same check
# run against the supervisor (which legitimately holds the audit log, its
# epoll instance, timers, pidfds and a descriptor the caller leaked) must
# report a mismatch. Loopback only: the denied request goes to the proxy.
# shellcheck source=tests/lib/tap.sh
. "$(dirname "$0")/../lib/tap.sh"

# fdset PID: "FD=WHAT ..." as moat_fdset_describe() prints it (readlink of each
# /proc/PID/fd entry, the inode of socket:[N] / pipe:[N] dropped), in order.
fdset() {
	local f t out=""
	for f in $(find "/proc/$1/fd" -mindepth 1 -maxdepth 1 -printf '%f\n' | sort -n); do
		t=$(readlink "/proc/$1/fd/$f") || continue
		case $t in socket:\[* | pipe:\[*) t=${t%%:*} ;; esac
		out="${out:+$out }$f=$t"
	done
	printf '%s\n' "$out"
}

# check_exact PID WANT: 0 if the process holds exactly WANT, else prints the difference
check_exact() {
	local got
	got=$(fdset "$1")
	[ "$got" = "$2" ] && return 0
	echo "pid $1: want '$2', got '$got'"
	return 1
}

# children PID: the pids whose parent is PID
children() {
	local s ppid
	for s in /proc/[0-9]*/stat; do
		# field 4 (ppid), after the parenthesised comm
		ppid=$(sed 's/.*) //' "$s" 2>/dev/null | cut -d' ' -f2) || continue
		if [ "$ppid" = "$1" ]; then
			s=${s#/proc/}
			echo "${s%/stat}"
		fi
	done
	return 0
}

cmdline() { tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null | sed 's/ $//'; }

PROXY_WANT="0=/dev/null 1=/dev/null 2=/dev/null 3=pipe 4=socket 5=socket 6=socket 7=socket 8=socket 9=socket 10=socket 11=socket 12=anon_inode:[eventpoll]"
RESOLVER_WANT="0=/dev/null 1=/dev/null 2=/dev/null 3=socket"

t_helpers_hold_exactly_their_descriptors() {
	[ -x /usr/bin/python3 ] || skip "python3 not installed"
	local d=$PWD
	echo leaked >"$d/leaked.txt"
	# The hook lists its own shell's table (its parent's, from a child: no
	# redirection of the shell itself), then the run may end.
	cat >"$d/hookfds.sh" <<HOOK
#!/bin/sh
ls /proc/\$PPID/fd >/dev/null
out=""
for f in \$(ls /proc/\$PPID/fd | sort -n); do
	t=\$(readlink /proc/\$PPID/fd/\$f) || continue
	case \$t in socket:\[*|pipe:\[*) t=\${t%%:*} ;; esac
	out="\${out:+\$out }\$f=\$t"
done
printf '%s\n' "\$out" >"$d/hook.fds.tmp"
mv "$d/hook.fds.tmp" "$d/hook.fds"
HOOK
	chmod 755 "$d/hookfds.sh"
	# fd 8: a descriptor the caller leaks to moat (no O_CLOEXEC)
	GH_TOKEN="real-$$-$RANDOM" "$MOAT" run --quiet --net allow --allow-host api.test \
		--secret GH_TOKEN@api.test --on-alert "$d/hookfds.sh; true" --log "$d/log.jsonl" -- \
		python3 -c '
import socket, time
s = socket.create_connection(("127.0.0.1", 3128), 5)
s.sendall(b"GET http://127.0.0.9:9/ HTTP/1.1\r\nHost: 127.0.0.9:9\r\n\r\n")
s.recv(200)
s.close()
time.sleep(60)
' 8<"$d/leaked.txt" 2>"$d/moat.err" &
	SUP_PID=$!
	local sup=$SUP_PID
	# (run_test's subshell: on any exit, end this run, by its pid)
	trap '[ -z "${SUP_PID:-}" ] || kill -TERM "$SUP_PID" 2>/dev/null || true' EXIT
	local _ proxy="" resolver=""
	# (the command sleeps until the test has looked, then the run is ended)
	for _ in $(seq 600); do
		[ -s "$d/hook.fds" ] && break
		sleep 0.05
	done
	[ -s "$d/hook.fds" ] || fail "the alert hook did not run: $(cat "$d/moat.err")"
	local c
	for c in $(children "$sup"); do
		[ "$(cmdline "$c")" = "moat __proxy" ] && proxy=$c
	done
	[ -n "$proxy" ] || fail "no 'moat __proxy' child of the supervisor $sup"
	resolver=$(children "$proxy" | head -1)
	[ -n "$resolver" ] || fail "the proxy helper has no resolver child"
	local errs="" sup_fds proxy_fds=""
	sup_fds=$(fdset "$sup")
	if is_root; then
		# Root can read the tables of the non-dumpable helpers themselves.
		proxy_fds=$(fdset "$proxy")
		check_exact "$proxy" "$PROXY_WANT" || errs="$errs proxy"
		check_exact "$resolver" "$RESOLVER_WANT" || errs="$errs resolver"
	elif [ -n "$(fdset "$proxy" 2>/dev/null)" ]; then
		fail "an unprivileged user can read the proxy helper's descriptor table"
	fi
	# Positive control: the same check on the supervisor reports a mismatch,
	# and it sees what the helpers must not hold.
	if check_exact "$sup" "$PROXY_WANT" >/dev/null; then
		fail "the check found nothing extra in the supervisor: $sup_fds"
	fi
	assert_contains "$sup_fds" "=$d/log.jsonl" "the supervisor's descriptors"
	assert_contains "$sup_fds" "anon_inode:[eventpoll]" "the supervisor's descriptors"
	assert_contains "$sup_fds" "8=$d/leaked.txt" "the supervisor's descriptors"
	kill -TERM "$sup"
	wait "$sup" || true
	SUP_PID=
	# The alert hook: its alert line (a socket) and moat's stderr, nothing else.
	assert_eq "0=socket 1=$d/moat.err 2=$d/moat.err" "$(cat "$d/hook.fds")" "the alert hook's descriptors"
	# What the helper recorded of itself (read from its own /proc table just
	# before it served: the only view an unprivileged caller has).
	local ev
	ev=$(grep '"type":"helper"' "$d/log.jsonl") || fail "no helper event: $(cat "$d/moat.err")"
	assert_contains "$ev" "\"pid\":$proxy," "the helper event"
	assert_contains "$ev" "\"fds\":\"$PROXY_WANT\"" "the helper event"
	grep -q '"cause":"net_denied"' "$d/log.jsonl" || fail "the request was not denied"
	echo "# supervisor: $sup_fds"
	echo "# proxy: $proxy_fds"
	[ -z "$errs" ] || fail "helpers with other descriptors:$errs (proxy: $proxy_fds)"
	assert_not_contains "$proxy_fds" "leaked.txt"
}

# The check itself catches an extra descriptor: a process started with the
# helper's layout plus one more (a positive control outside moat).
t_check_detects_an_extra_descriptor() {
	echo x >"$PWD/extra"
	(
		exec 3<"$PWD/extra"
		exec sleep 5
	) </dev/null >/dev/null 2>&1 &
	local p=$!
	local out
	out=$(check_exact "$p" "0=/dev/null 1=/dev/null 2=/dev/null") && fail "no mismatch found: $out"
	assert_contains "$out" "3=$PWD/extra"
	kill "$p"
	wait "$p" 2>/dev/null || true
}

# Running the internal helper by hand grants nothing: without its descriptor
# layout it refuses to start.
t_internal_helper_refuses_by_hand() {
	local rc=0 err
	err=$("$MOAT" __proxy 2>&1 </dev/null) || rc=$?
	assert_eq 2 "$rc" "exit status"
	assert_contains "$err" "internal"
	rc=0
	err=$("$MOAT" __proxy 4</dev/null 2>&1) || rc=$?
	assert_eq 2 "$rc" "exit status with a non-memfd at 4"
}

run_test "the proxy helper, its resolver and an alert hook hold exactly their descriptors" \
	t_helpers_hold_exactly_their_descriptors
run_test "the descriptor check reports an extra descriptor" t_check_detects_an_extra_descriptor
run_test "moat __proxy by hand refuses to start" t_internal_helper_refuses_by_hand
t_done
