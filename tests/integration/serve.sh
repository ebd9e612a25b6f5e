#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# `moat serve` (issue 15): the HTTP API, driven by serve_client.py over the
# unix socket and over TCP.
#  - lifecycle: create (ready on return), exec with streamed output and the
#    exit record, stdin/env/cwd, inspect, list, names, the audit stream,
#    reset, delete (the end summary; gone after), JSON errors (404, 405, 400,
#    413); delete leaves nothing (moat ps, processes).
#  - concurrent execs, streaming (the first line before the command ends),
#    a client that hangs up (its command is killed).
#  - flow control: 40 MB to a client that reads late, complete; a stalled
#    client blocks the command and not the front's memory.
#  - the audit stream without follow: 300 execs' events, all of them.
#  - files: write/read (binary), stat, list, remove, errors.
#  - snapshots: take, restore (409 busy while a process runs, unless
#    force), reset to the start, delete.
#  - auth over TCP with a tokens file: no token, a wrong token, another
#    tenant's id (not found; control: the owner reaches it); quotas.
#  - request fields that would widen the policy: refused naming the field
#    (control: a narrower request is accepted and applied).
#  - the warm pool: taken, refilled; a non-matching create is cold.
#  - a server killed with SIGKILL: its sandboxes die with it, `moat gc`
#    cleans the rest, a new server replaces the stale socket.
#  - the API cannot be reached from inside a sandbox (unix socket and TCP;
#    control: the same probe outside reaches it); a policy that binds the
#    socket's directory in is refused.
#  - the front's isolation: unprivileged, seccomp, no_new_privs, exactly its
#    descriptors (control: the back differs).
#  - the OpenAPI document: every route, every response checked against it
#    (openapi_check.py).
# shellcheck source=tests/lib/tap.sh
. "$(dirname "$0")/../lib/tap.sh"

HERE=$(cd "$(dirname "$0")" && pwd)
CLIENT=$HERE/serve_client.py
FRONT=$(dirname "$MOAT")/moat-serve-front

# Unprivileged runs with explicit limits need the degraded mode here (no
# cgroup delegation: limits.sh).
DEG=()
is_root || DEG=(--allow-degraded cgroup)

need_python() { command -v python3 >/dev/null || skip "python3 not installed"; }

# start_server ARGS...: SRV (pid), SOCK, PORT (with --listen); its stderr
# in srv.err
start_server() {
	SOCK=$PWD/api/serve.sock
	"$MOAT" serve --socket "$SOCK" ${DEG[@]+"${DEG[@]}"} "$@" 2>srv.err &
	SRV=$!
	# shellcheck disable=SC2064 # this server, whatever happens to the test
	trap "kill -KILL $SRV 2>/dev/null || true" EXIT
	# "listening on" comes once the front is confined and serving (a
	# loaded machine took more than 10 s once): up to 30 s
	for _ in $(seq 1 300); do
		grep -q "listening on" srv.err 2>/dev/null && break
		kill -0 "$SRV" 2>/dev/null || fail "the server ended: $(cat srv.err)"
		sleep 0.1
	done
	grep -q "listening on" srv.err || fail "the server did not start: $(cat srv.err)"
	PORT=$(grep -o 'tcp:127.0.0.1:[0-9]*' srv.err | head -1 | cut -d: -f3 || true)
}

stop_server() {
	kill -TERM "$SRV" 2>/dev/null || true
	local rc=0
	wait "$SRV" || rc=$?
	assert_eq 0 "$rc" "the server ends cleanly on SIGTERM"
	[ ! -e "$SOCK" ] || fail "the socket is left behind"
}

client() {
	python3 "$CLIENT" "$@" >out 2>err || fail "$(grep -m1 FAIL out || tail -3 out) $(tail -5 err) $(tail -5 srv.err)"
	assert_contains "$(tail -1 out)" "all ok" "$1"
}

# the processes whose parent is $1, recursively
descendants() {
	local p c
	for p in "$@"; do
		for c in $(cat /proc/[0-9]*/stat 2>/dev/null | awk -v p="$p" '$4 == p {print $1}'); do
			echo "$c"
			descendants "$c"
		done
	done
}

t_lifecycle() {
	need_python
	start_server --memory 1G
	client lifecycle --socket "$SOCK"
	local run
	run=$(awk '/^run /{print $2}' out)
	[ -n "$run" ] || fail "no run id"
	# delete left nothing: no live run of it, no process but the front
	assert_not_contains "$("$MOAT" ps 2>&1)" "$run" "moat ps after the delete"
	local kids
	kids=$(descendants "$SRV" | wc -l)
	assert_eq 1 "$kids" "the server's only process left is its front"
	stat -c %a "$SOCK" >mode
	assert_eq 600 "$(cat mode)" "the socket's mode"
	stop_server
}

t_concurrent_streaming() {
	need_python
	start_server
	client concurrent --socket "$SOCK"
	stop_server
}

# flow control: 40 MB to a client that reads late arrive complete with the
# exit record; a stalled client blocks the command (its pipe fills), not the
# front's memory (control: read, the command finishes); a stalled client
# that hangs up has its command killed (control: it ran). About 6 s.
t_flow() {
	need_python
	start_server
	local front="" _i
	for _i in $(seq 1 20); do
		front=$(descendants "$SRV" | head -1)
		[ -n "$front" ] && break
		sleep 0.1
	done
	[ -n "$front" ] || fail "no front process of $SRV"
	# A sanitizer build's allocator keeps freed memory in its quarantine
	# (256 MiB by default), so there the front's peak is ASan's: the bound
	# is 20 MiB for the release build, 400 MiB under ASan (the data and
	# blocking checks are the same)
	local bound=20
	if readelf -d "$MOAT" 2>/dev/null | grep -q 'libasan'; then bound=400; fi
	client flow --socket "$SOCK" --front "$front" --mem-bound-mib "$bound"
	stop_server
}

# a sandbox whose new exec is held stopped before its command (a process of
# the same sandbox stops every other one: sessions.sh t_exec_stopped) does
# not stall the server: another sandbox's exec and a health request are
# answered while it is pending, and it ends with the bound's message (as
# root the vforked process holds the init: the sandbox is ended; else the
# process is killed). Control: the test build's blocking start (the back
# before the change), with a 2 s bound, answers nothing else meanwhile: the
# order check detects the stall. About 20 s (the 15 s bound once).
t_exec_stalled() {
	need_python
	start_server
	client stall --socket "$SOCK"
	stop_server
	[ -x "$MOAT_TESTING_BIN" ] || skip "no test build ($MOAT_TESTING_BIN)"
	local moat=$MOAT
	MOAT=$MOAT_TESTING_BIN
	export MOAT_TEST_LAYERS=1 MOAT_TEST_SERVE_BLOCKING_EXEC=1 MOAT_TEST_EXEC_START_MS=2000
	start_server
	client stall --socket "$SOCK" --expect-stall
	stop_server
	unset MOAT_TEST_LAYERS MOAT_TEST_SERVE_BLOCKING_EXEC MOAT_TEST_EXEC_START_MS
	MOAT=$moat
}

# a create whose set-up is held (the test build's stall at init-mounted,
# armed only while stall-on exists: one tenant's create, not the other's)
# does not stall the server: another sandbox's exec and a health request
# are answered while it is pending, and it ends with the create bound's
# message (10 s here). Concurrent creates all succeed, distinct and
# ready. Control: the test build's blocking create (the back before the
# change), with a 2 s bound, answers nothing else meanwhile: the order
# check detects the stall. Then a held create whose client hangs up leaves
# nothing (tests/lib/leaks.sh; control: while held, it is found). About 20 s.
t_create_stalled() {
	need_python
	[ -x "$MOAT_TESTING_BIN" ] || skip "no test build ($MOAT_TESTING_BIN)"
	# shellcheck source=tests/lib/leaks.sh
	. "$MOAT_TEST_DIR/lib/leaks.sh"
	local moat=$MOAT
	MOAT=$MOAT_TESTING_BIN
	export MOAT_TEST_LAYERS=1 MOAT_TEST_STALL_AT=init-mounted MOAT_TEST_STALL_FILE=$PWD/stall-on
	MOAT_TEST_CREATE_READY_MS=10000 start_server --memory 256M
	client create_stall --socket "$SOCK" --stall-file "$PWD/stall-on" --server-err "$PWD/srv.err" --n 6
	# abandoned by its client: nothing is left of it
	local kids0 kids1 hold
	kids0=$(descendants "$SRV" | wc -l)
	rm -f hold.fifo && mkfifo hold.fifo
	python3 "$CLIENT" create_hold --socket "$SOCK" --stall-file "$PWD/stall-on" \
		--server-err "$PWD/srv.err" --live-dir "$(_leaks_live_dir)" --ids-out "$PWD/held.ids" \
		<hold.fifo >hold.out 2>&1 &
	hold=$!
	exec 7>hold.fifo
	for _ in $(seq 1 600); do
		grep -q '^held' hold.out 2>/dev/null && break
		kill -0 "$hold" 2>/dev/null || break
		sleep 0.1
	done
	grep -q '^held' hold.out || fail "the create was not held: $(cat hold.out) $(tail -3 srv.err)"
	[ -s held.ids ] || fail "no live record of the held create: $(cat hold.out)"
	kids1=$(descendants "$SRV" | wc -l)
	[ "$kids1" -gt "$kids0" ] || fail "control: no process of the held create ($kids0 -> $kids1)"
	leaks_check "no-mark-$$" held.ids >leaks.held
	[ "$LEAKS" -gt 0 ] || fail "control: the held create is not found by the leak check"
	echo >&7
	exec 7>&-
	wait "$hold" || fail "the holding client failed: $(cat hold.out)"
	# the front sees the hang-up within a second, the back ends the create
	local _i kids=$kids1
	for _i in $(seq 1 300); do
		kids=$(descendants "$SRV" | wc -l)
		[ "$kids" -le "$kids0" ] && break
		sleep 0.1
	done
	assert_eq "$kids0" "$kids" "the abandoned create's processes are gone"
	leaks_check "no-mark-$$" held.ids 30 >leaks.after
	assert_eq 0 "$LEAKS" "an abandoned create leaves nothing: $(cat leaks.after)"
	stop_server
	# the control: the blocking create
	MOAT_TEST_SERVE_BLOCKING_CREATE=1 MOAT_TEST_CREATE_READY_MS=2000 start_server
	client create_stall --socket "$SOCK" --stall-file "$PWD/stall-on" --server-err "$PWD/srv.err" --expect-stall
	stop_server
	unset MOAT_TEST_LAYERS MOAT_TEST_STALL_AT MOAT_TEST_STALL_FILE
	MOAT=$moat
}

# the audit stream without follow, longer than one turn of the back (256
# events): complete, ended at the log's end (the unfixed back cut it at 256;
# the count check fails there). About 3 s (300 execs).
t_events_long() {
	need_python
	start_server
	client events_long --socket "$SOCK" --n 300
	stop_server
}

t_files() {
	need_python
	echo host >"$PWD/host-only.txt"
	start_server
	client files --socket "$SOCK" --host-file "$PWD/host-only.txt"
	stop_server
}

t_snapshots() {
	need_python
	start_server
	client snapshots --socket "$SOCK"
	stop_server
}

tokens() {
	cat >tokens.json <<'JSON'
{"tenants":[
 {"token":"alice-0123456789abcdef","name":"alice","max_sandboxes":1,"max_memory":"256M"},
 {"token":"bob-0123456789abcdef00","name":"bob"}]}
JSON
	chmod 600 tokens.json
}

t_auth() {
	need_python
	tokens
	start_server --listen 127.0.0.1:0 --token-file tokens.json
	[ -n "$PORT" ] || fail "no TCP port: $(cat srv.err)"
	client auth --url "http://127.0.0.1:$PORT" --token bob-0123456789abcdef00 --token2 alice-0123456789abcdef
	# the unix socket asks for the token too when there is a tokens file
	client auth --socket "$SOCK" --token bob-0123456789abcdef00 --token2 alice-0123456789abcdef
	client quota --url "http://127.0.0.1:$PORT" --token alice-0123456789abcdef
	stop_server
	# refused at start: TCP without tokens, a tokens file others can read
	local rc=0
	"$MOAT" serve --socket "$PWD/x.sock" --listen 127.0.0.1:0 2>err || rc=$?
	assert_eq 125 "$rc" "--listen without --token-file"
	assert_contains "$(cat err)" "token-file" "and says why"
	chmod 644 tokens.json
	rc=0
	"$MOAT" serve --socket "$PWD/x.sock" --listen 127.0.0.1:0 --token-file tokens.json 2>err || rc=$?
	assert_eq 125 "$rc" "a tokens file others can read"
	echo short >tok1
	chmod 600 tok1
	rc=0
	"$MOAT" serve --socket "$PWD/x.sock" --listen 127.0.0.1:0 --token-file tok1 2>err || rc=$?
	assert_eq 125 "$rc" "a token shorter than 16 bytes"
}

free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# silent PORT N CACERT WAIT BOUND: N TCP connections to PORT that never
# start their handshake; with them open, one HTTPS request given BOUND
# seconds (its body and time), then how many of the N the server ended
# within WAIT seconds more
silent() {
	exec python3 - "$@" <<'PY'
import socket, subprocess, sys, time
port, n, cacert, wait, bound = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], float(sys.argv[4]), sys.argv[5]
ss = [socket.create_connection(("127.0.0.1", port), timeout=5) for _ in range(n)]
time.sleep(0.3)
t0 = time.monotonic()
r = subprocess.run(["curl", "-s", "-m", bound, "--cacert", cacert,
                    "-H", "Authorization: Bearer tls-token-0123456789",
                    f"https://127.0.0.1:{port}/v1/sandboxes"], capture_output=True, text=True)
print("request", r.stdout or "-", "%.1fs" % (time.monotonic() - t0))
closed, deadline = 0, time.monotonic() + wait
for s in ss:
    s.settimeout(max(0.1, deadline - time.monotonic()))
    try:
        closed += s.recv(1) == b""
    except OSError:
        pass
print("closed", closed, "of", n)
PY
}

# reneg PORT: a TLS 1.2 client that asks to renegotiate once connected
reneg() { (sleep 1; echo R; sleep 1) | openssl s_client -tls1_2 -connect "127.0.0.1:$1" 2>&1 || true; }

# s_server ARGS...: openssl's own server on a free loopback port (SPID,
# CPORT), once it accepts
s_server() {
	CPORT=$(free_port)
	rm -f ss.out
	openssl s_server -key key.pem -cert cert.pem -accept "127.0.0.1:$CPORT" -www "$@" >ss.out 2>&1 &
	SPID=$!
	# shellcheck disable=SC2064 # these processes, whatever happens to the test
	trap "kill -KILL $SRV $SPID ${SIL:-} 2>/dev/null || true" EXIT
	for _ in $(seq 1 100); do
		grep -q ACCEPT ss.out 2>/dev/null && return 0
		sleep 0.1
	done
	fail "openssl s_server did not start: $(cat ss.out)"
}

t_tls() {
	need_python
	command -v openssl >/dev/null || skip "openssl not installed"
	command -v curl >/dev/null || skip "curl not installed"
	openssl req -x509 -newkey rsa:2048 -nodes -keyout key.pem -out cert.pem -days 1 \
		-subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 2>/dev/null
	echo "tls-token-0123456789" >tok
	chmod 600 tok
	start_server --listen 127.0.0.1:0 --token-file tok --tls-cert cert.pem --tls-key key.pem
	[ -n "$PORT" ] || fail "no TCP port: $(cat srv.err)"
	# 50 clients that connect and send nothing, while the rest runs; the
	# request's bound (5 s) is below the handshake timeout (10 s)
	silent "$PORT" 50 cert.pem 20 5 >silent.out 2>&1 &
	SIL=$!
	# shellcheck disable=SC2064 # these processes, whatever happens to the test
	trap "kill -KILL $SRV $SIL 2>/dev/null || true" EXIT
	local got
	got=$(curl -s --cacert cert.pem -H "Authorization: Bearer tls-token-0123456789" \
		"https://127.0.0.1:$PORT/v1/sandboxes")
	assert_eq '{"sandboxes":[]}' "$got" "a request over TLS"
	got=$(curl -s -o /dev/null -w '%{http_code}' --cacert cert.pem \
		-H "Authorization: Bearer tls-token-9876543210" "https://127.0.0.1:$PORT/v1/sandboxes")
	assert_eq 401 "$got" "a wrong token over TLS"
	# positive control: plaintext on the TLS port is not served
	got=$(curl -s -m 5 -H "Authorization: Bearer tls-token-0123456789" \
		"http://127.0.0.1:$PORT/v1/sandboxes" || true)
	assert_not_contains "$got" "sandboxes" "plaintext HTTP on the TLS listener"
	# the protocol: 1.2 with ECDHE and 1.3 only (the client offers 1.1 at
	# any security level; the control below shows it can speak it)
	got=$(openssl s_client -tls1_2 -connect "127.0.0.1:$PORT" </dev/null 2>&1 || true)
	assert_contains "$got" "New, TLSv1.2, Cipher is ECDHE-" "TLS 1.2 with ECDHE"
	assert_contains "$got" "Compression: NONE" "TLS 1.2 without compression"
	got=$(openssl s_client -tls1_3 -connect "127.0.0.1:$PORT" </dev/null 2>&1 || true)
	assert_contains "$got" "New, TLSv1.3, Cipher is TLS_" "TLS 1.3"
	got=$(openssl s_client -tls1_1 -cipher 'DEFAULT@SECLEVEL=0' -connect "127.0.0.1:$PORT" </dev/null 2>&1 || true)
	assert_contains "$got" "Cipher is (NONE)" "TLS 1.1 is refused"
	assert_contains "$got" "alert protocol version" "TLS 1.1 is refused by the server"
	got=$(openssl s_client -tls1_2 -cipher AES128-SHA -connect "127.0.0.1:$PORT" </dev/null 2>&1 || true)
	assert_contains "$got" "Cipher is (NONE)" "TLS 1.2 without forward secrecy is refused"
	# renegotiation is refused
	got=$(reneg "$PORT")
	assert_contains "$got" "RENEGOTIATING" "the client asked to renegotiate"
	assert_contains "$got" "no renegotiation" "renegotiation is refused"
	# the front with TLS: as confined, the same descriptors
	local front
	front=$(descendants "$SRV" | head -1)
	assert_eq "" "$(isolated "$front")" "the TLS front: unprivileged, seccomp, no_new_privs"
	assert_contains "$(grep -m1 "front $front " srv.err)" "fds 0=/dev/null 1=/dev/null 2=$PWD/srv.err 3=socket 4=socket 5=socket 6=anon_inode:[eventpoll] 7=anon_inode:[eventpoll], seccomp on" \
		"the TLS front's descriptors"
	# positive controls with openssl's own server: this client speaks TLS
	# 1.1; a server that allows renegotiation renegotiates; and since that
	# server handshakes one client at a time, one silent client holds it
	# (the probe sees a held server)
	s_server -tls1_1 -cipher 'DEFAULT@SECLEVEL=0'
	got=$(openssl s_client -tls1_1 -cipher 'DEFAULT@SECLEVEL=0' -connect "127.0.0.1:$CPORT" </dev/null 2>&1 || true)
	kill "$SPID" 2>/dev/null || true
	wait "$SPID" 2>/dev/null || true
	assert_contains "$got" "Protocol  : TLSv1.1" "control: the client speaks TLS 1.1"
	s_server -client_renegotiation
	got=$(reneg "$CPORT")
	assert_contains "$got" "RENEGOTIATING" "control: the client asked to renegotiate"
	assert_not_contains "$got" "no renegotiation" "control: a server that allows it renegotiates"
	got=$(silent "$CPORT" 1 cert.pem 0 3)
	kill "$SPID" 2>/dev/null || true
	wait "$SPID" 2>/dev/null || true
	assert_contains "$got" "request -" "control: one silent client holds a one-at-a-time server"
	# with 50 silent clients open, the request was answered (5 s bound),
	# and the front ended every one of them (handshake timeout, 10 s)
	wait "$SIL" || fail "the silent clients: $(cat silent.out)"
	assert_contains "$(cat silent.out)" 'request {"sandboxes":[]}' "a request while 50 clients are silent"
	assert_contains "$(cat silent.out)" "closed 50 of 50" "the silent clients are ended"
	stop_server
	# fail closed: a key of another certificate, a key with a passphrase
	openssl req -x509 -newkey rsa:2048 -nodes -keyout key2.pem -out cert2.pem -days 1 \
		-subj /CN=other 2>/dev/null
	local rc=0
	"$MOAT" serve --socket "$PWD/x.sock" --listen 127.0.0.1:0 --token-file tok \
		--tls-cert cert.pem --tls-key key2.pem 2>err || rc=$?
	assert_eq 125 "$rc" "a key that does not match the certificate"
	assert_contains "$(cat err)" "tls: --tls-key does not match --tls-cert" "and says why"
	assert_not_contains "$(cat err)" "listening on" "nothing was reported ready"
	openssl pkey -in key.pem -aes256 -passout pass:secret -out enc.pem 2>/dev/null
	rc=0
	"$MOAT" serve --socket "$PWD/x.sock" --listen 127.0.0.1:0 --token-file tok \
		--tls-cert cert.pem --tls-key enc.pem </dev/null 2>err || rc=$?
	assert_eq 125 "$rc" "an encrypted key (no prompt)"
	assert_contains "$(cat err)" "no unencrypted PEM private key" "and says why"
}

t_widen() {
	need_python
	start_server --memory 1G --cpus 1 --pids 1000 --timeout 10m
	client widen --socket "$SOCK"
	stop_server
}

t_pool() {
	need_python
	start_server --pool 2
	client pool --socket "$SOCK"
	stop_server
	local rc=0
	"$MOAT" serve --socket "$PWD/x.sock" --pool 0 2>err || rc=$?
	assert_eq 125 "$rc" "--pool 0 is refused"
	echo '{"version":1,"limits":{"memory":"2G"}}' >big.json
	rc=0
	"$MOAT" serve --socket "$PWD/x.sock" --memory 1G --pool 1:big.json 2>err || rc=$?
	assert_eq 125 "$rc" "a pool policy wider than the ceiling is refused"
	assert_contains "$(cat err)" "memory" "and names the field"
}

t_crash() {
	need_python
	start_server --pool 1
	python3 "$CLIENT" hold --socket "$SOCK" --n 2 --wait 120 >out 2>err &
	local holder=$!
	# two creates and execs: up to 30 s on a loaded machine (it took more
	# than 10 s once, with 7 engineers' tests on 2 CPUs)
	for _ in $(seq 1 300); do
		grep -q "all ok" out && break
		sleep 0.1
	done
	grep -q "all ok" out || fail "the holder did not start: $(cat out err srv.err)"
	local runs pids
	runs=$(awk '/^run /{print $2}' out)
	pids=$(descendants "$SRV")
	[ "$(echo "$pids" | wc -w)" -ge 4 ] || fail "the sandboxes' processes are not there: $pids"
	kill -KILL "$SRV"
	wait "$SRV" || true
	kill "$holder" 2>/dev/null || true
	wait "$holder" 2>/dev/null || true
	# every process of the sandboxes (and the front) dies with the server
	local left="" p
	for _ in $(seq 1 50); do
		left=""
		for p in $pids; do
			[ -d "/proc/$p" ] && [ "$(awk '{print $3}' "/proc/$p/stat" 2>/dev/null)" != Z ] && left="$left $p"
		done
		[ -z "$left" ] && break
		sleep 0.1
	done
	assert_eq "" "$left" "processes left after the server was killed"
	"$MOAT" gc >gc.out 2>&1 || fail "moat gc: $(cat gc.out)"
	local r
	for r in $runs; do
		assert_not_contains "$("$MOAT" ps 2>&1)" "$r" "a run of the killed server after moat gc"
	done
	# cgroups of those runs are gone
	if [ -d /sys/fs/cgroup ]; then
		for r in $runs; do
			[ -z "$(find /sys/fs/cgroup -maxdepth 6 -type d -name "*$r*" 2>/dev/null | head -1)" ] ||
				fail "a cgroup of run $r is left"
		done
	fi
	# a new server takes the stale socket over
	start_server
	client lifecycle --socket "$SOCK"
	stop_server
}

t_unreachable() {
	need_python
	tokens
	start_server --listen 127.0.0.1:0 --token-file tokens.json
	local in out_
	# from inside a sandbox: the unix socket's path and the TCP port
	in=$("$MOAT" run --ro "$HERE:/t" -- \
		python3 /t/serve_client.py probe --socket "$SOCK" --url "http://127.0.0.1:$PORT" 2>&1) ||
		fail "the probe in the sandbox: $in"
	assert_not_contains "$in" "reached" "the API from inside a sandbox"
	assert_contains "$in" "unix:" "the probe ran inside"
	# and through the API's own sandboxes
	python3 - "$SOCK" "$PORT" "$HERE" >api.out 2>&1 <<'PY' || fail "$(cat api.out)"
import json, sys
sys.path.insert(0, sys.argv[3])
import serve_client as sc
class A: socket = sys.argv[1]; url = None; token = "bob-0123456789abcdef00"
cl = sc.Client(A)
_, sb = cl.json("POST", "/v1/sandboxes", {}, want=201)
src = open(sys.argv[3] + "/serve_client.py", "rb").read()
st, _, _ = cl.req("PUT", f"/v1/sandboxes/{sb['id']}/files?path=/tmp/c.py", raw=src)
st, evs = cl.exec_stream(sb["id"], {"argv": ["python3", "/tmp/c.py", "probe", "--socket", sys.argv[1],
                                             "--url", "http://127.0.0.1:" + sys.argv[2]]})
print("inside-api", sc.output(evs), sc.output(evs, "stderr"))
cl.json("DELETE", f"/v1/sandboxes/{sb['id']}", want=200)
PY
	assert_contains "$(cat api.out)" "inside-api unix:" "the probe ran in an API sandbox"
	assert_not_contains "$(cat api.out)" "reached" "the API from inside one of its own sandboxes"
	# positive control: the same probe outside a sandbox reaches both (as
	# root: inside a throw-away user namespace, not as host root)
	if is_root; then
		out_=$(unshare -Ur python3 "$CLIENT" probe --socket "$SOCK" --url "http://127.0.0.1:$PORT")
	else
		out_=$(python3 "$CLIENT" probe --socket "$SOCK" --url "http://127.0.0.1:$PORT")
	fi
	assert_eq "unix:reached tcp:reached" "$out_" "control: the probe reaches the API outside"
	stop_server
	# a policy that would bind the socket's directory into every sandbox
	local rc=0
	"$MOAT" serve --socket "$PWD/api/serve.sock" --ro "$PWD:/w" 2>err || rc=$?
	assert_eq 125 "$rc" "the socket inside a --ro mount"
	assert_contains "$(cat err)" "binds into every sandbox" "and says why"
}

status_field() { awk -v k="$2:" '$1 == k { $1 = ""; sub(/^ /, ""); print; exit }' "/proc/$1/status"; }

# isolated PID: empty if unprivileged, filtered, no_new_privs, else what differs
isolated() {
	local pid=$1 why=""
	[ "$(status_field "$pid" Seccomp)" = 2 ] || why="$why Seccomp;"
	[ "$(status_field "$pid" NoNewPrivs)" = 1 ] || why="$why NoNewPrivs;"
	[ "$(status_field "$pid" CapEff)" = 0000000000000000 ] || why="$why CapEff;"
	[ "$(status_field "$pid" CapPrm)" = 0000000000000000 ] || why="$why CapPrm;"
	if is_root; then
		case " $(status_field "$pid" Uid) " in *" 0 "*) why="$why uid 0;" ;; esac
		[ "$(status_field "$pid" CapBnd)" = 0000000000000000 ] || why="$why CapBnd;"
	fi
	printf '%s' "$why"
}

t_front_isolation() {
	tokens
	start_server --listen 127.0.0.1:0 --token-file tokens.json
	local front="" _i
	for _i in $(seq 1 20); do
		front=$(descendants "$SRV" | head -1)
		[ -n "$front" ] && break
		sleep 0.1
	done
	[ -n "$front" ] || fail "no front process of $SRV: $(ps -ef | grep -c moat)"
	case "$(tr '\0' ' ' <"/proc/$front/cmdline")" in
	"moat-serve-front "*) ;;
	*) fail "the server's child is not the front: $(tr '\0' ' ' <"/proc/$front/cmdline")" ;;
	esac
	assert_eq "" "$(isolated "$front")" "the front: unprivileged, seccomp, no_new_privs"
	local report
	report=$(grep -m1 "front $front " srv.err || true)
	# exactly /dev/null twice, stderr, the channel, the two listeners, and
	# libmicrohttpd's epoll descriptors (made before the filter)
	assert_contains "$report" "fds 0=/dev/null 1=/dev/null 2=$PWD/srv.err 3=socket 4=socket 5=socket 6=anon_inode:[eventpoll] 7=anon_inode:[eventpoll], seccomp on" \
		"the front's descriptors"
	if is_root; then
		assert_not_contains "$report" "(uid 0)" "the front's uid"
		local fds
		fds=$(find "/proc/$front/fd" -mindepth 1 -maxdepth 1 | wc -l)
		assert_eq 8 "$fds" "the front's descriptor count from /proc"
	fi
	# positive control: the back is not confined so
	assert_contains "$(isolated "$SRV")" "Seccomp" "control: the back has no filter of its own"
	stop_server
	# the front alone refuses to run
	local rc=0
	"$FRONT" </dev/null >out 2>err || rc=$?
	assert_eq 125 "$rc" "moat-serve-front started by hand"
	assert_contains "$(cat err)" "not started by moat serve" "and says why"
}

t_openapi() {
	need_python
	start_server --memory 1G --pool 1
	python3 "$HERE/openapi_check.py" "$MOAT_TEST_DIR/../docs/openapi.json" "$SOCK" \
		"$MOAT_TEST_DIR/../src/api/serve_route.c" >out 2>err ||
		fail "$(grep -m3 FAIL out || tail -5 out) $(tail -5 err)"
	assert_contains "$(tail -1 out)" "all ok" "the OpenAPI check"
	stop_server
}

mkdir -p "$T_OUT/api"
run_test "lifecycle over the API; delete leaves nothing" t_lifecycle
run_test "concurrent execs, streaming, a client that hangs up" t_concurrent_streaming
run_test "flow control: a slow client gets all, a stalled one blocks the command" t_flow
run_test "an exec held before its command does not stall other sandboxes (control: blocking)" t_exec_stalled
run_test "a create held in set-up does not stall the server; concurrent creates; abandoned leaves nothing (control: blocking)" t_create_stalled
run_test "the audit stream without follow: more than 256 events, all" t_events_long
run_test "files: write, read, stat, list, remove" t_files
run_test "snapshots: take, restore (busy unless force), reset, delete" t_snapshots
run_test "auth: no token, wrong token, another tenant's id; quotas" t_auth
run_test "TLS (OpenSSL): token, plaintext, 1.1, silent clients, fail closed" t_tls
run_test "widening fields are refused with the field named" t_widen
run_test "the warm pool" t_pool
run_test "a SIGKILLed server leaves nothing moat gc cannot clean" t_crash
run_test "the API socket is unreachable from inside a sandbox" t_unreachable
run_test "the front: unprivileged, seccomp, its descriptors (control: back)" t_front_isolation
run_test "the implementation against docs/openapi.json" t_openapi
t_done
