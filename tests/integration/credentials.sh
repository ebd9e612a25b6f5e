#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The credential proxy end to end (issue: credential proxy): a local HTTPS
# upstream with a test CA records what it receives; tools inside the sandbox
# hold only a placeholder. Loopback only.
# shellcheck source=tests/lib/tap.sh
. "$(dirname "$0")/../lib/tap.sh"

REAL="real-token-$$-$RANDOM-s3cr3t"

# make_ca DIR NAME...: a CA and a server certificate for the names
make_ca() {
	local d=$1
	shift
	mkdir -p "$d"
	local san="" n
	for n in "$@"; do san="${san:+$san,}DNS:$n"; done
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
		-subj "/CN=moat test CA" -keyout "$d/ca.key" -out "$d/ca.pem" 2>/dev/null
	openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=$1" \
		-keyout "$d/srv.key" -out "$d/srv.csr" 2>/dev/null
	printf 'subjectAltName=%s\nextendedKeyUsage=serverAuth\n' "$san" >"$d/ext"
	openssl x509 -req -in "$d/srv.csr" -CA "$d/ca.pem" -CAkey "$d/ca.key" -CAcreateserial \
		-days 2 -extfile "$d/ext" -out "$d/srv.pem" 2>/dev/null
}

# start_upstream DIR PORTFILE: HTTPS on 127.0.0.2, logs "path<TAB>authorization" lines
start_upstream() {
	local d=$1
	python3 - "$d" >"$d/server.out" 2>&1 <<'EOF' &
import http.server, socketserver, ssl, sys, os
d = sys.argv[1]
class H(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a): pass
    def handle_one(self):
        auth = self.headers.get("Authorization", "")
        with open(os.path.join(d, "seen"), "a") as f:
            f.write(f"{self.command} {self.path}\t{auth}\n")
        if self.path.startswith("/git") and not auth:
            self.send_response(401)
            self.send_header("WWW-Authenticate", 'Basic realm="t"')
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        body = b"ok\n"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    do_GET = do_POST = handle_one
class S(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
srv = S(("127.0.0.2", 0), H)
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(os.path.join(d, "srv.pem"), os.path.join(d, "srv.key"))
srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
with open(os.path.join(d, "port.tmp"), "w") as f:
    f.write(str(srv.server_address[1]))
os.rename(os.path.join(d, "port.tmp"), os.path.join(d, "port"))
srv.serve_forever()
EOF
	UP_PID=$!
	local _
	for _ in $(seq 100); do
		[ -s "$d/port" ] && break
		sleep 0.05
	done
	[ -s "$d/port" ] || fail "upstream did not start: $(cat "$d/server.out")"
	PORT=$(cat "$d/port")
}

setup() {
	PKI=$(mktemp -d "$T_OUT/pki.XXXXXX")
	make_ca "$PKI" api.test other.test
	start_upstream "$PKI"
	trap 'kill $UP_PID 2>/dev/null || true' EXIT
	COMMON=(--allow-host "api.test:$PORT" --allow-host "other.test:$PORT"
		--resolve api.test=127.0.0.2 --resolve other.test=127.0.0.2
		--upstream-ca "$PKI/ca.pem" --secret "GH_TOKEN@api.test")
}

t_injected_for_curl_python_git() {
	setup
	local out
	out=$(GH_TOKEN=$REAL "$MOAT" run --quiet "${COMMON[@]}" --log "$T_OUT/log.jsonl" -- sh -c '
		curl -sS --fail "https://api.test:'"$PORT"'/curl" -H "Authorization: Bearer $GH_TOKEN"
		python3 -c "import os, urllib.request as u; print(u.urlopen(u.Request(\"https://api.test:'"$PORT"'/python\", headers={\"Authorization\": \"token \" + os.environ[\"GH_TOKEN\"]})).read().decode().strip())"
		git -c credential.helper= ls-remote "https://x:$GH_TOKEN@api.test:'"$PORT"'/git/repo" >/dev/null 2>&1 || true
		echo "ENV=$GH_TOKEN"')
	assert_contains "$out" "ok"
	local seen
	seen=$(cat "$PKI/seen")
	assert_contains "$seen" "GET /curl	Bearer $REAL" "what the upstream received from curl"
	assert_contains "$seen" "GET /python	token $REAL" "from python"
	assert_contains "$seen" "Basic $(printf 'x:%s' "$REAL" | base64 -w0)" "from git (basic auth)"
	# inside, only the placeholder
	assert_contains "$out" "ENV=moat-ph-GH_TOKEN-"
	assert_not_contains "$out" "$REAL"
	assert_not_contains "$(cat "$T_OUT/log.jsonl")" "$REAL" "the audit log"
}

t_value_never_inside() {
	setup
	local out
	# everything readable inside comes out; the host looks for the value
	GH_TOKEN=$REAL "$MOAT" run --quiet "${COMMON[@]}" -- sh -c '
		cat /proc/[0-9]*/environ /proc/[0-9]*/cmdline 2>/dev/null
		tar cf - /etc /tmp "$HOME" /dev/shm 2>/dev/null
		echo END' >"$T_OUT/dump" 2>&1
	grep -q END "$T_OUT/dump" || fail "the dump did not finish"
	grep -q "moat-ph-GH_TOKEN-" "$T_OUT/dump" || fail "the placeholder is not in the environment"
	if grep -q -- "$REAL" "$T_OUT/dump"; then fail "the real value is inside the sandbox"; fi
	# control: the value is in moat's own environment, so a leak would show
	GH_TOKEN=$REAL sh -c 'tr "\0" "\n" < /proc/$$/environ' | grep -q "$REAL" || fail "control"
}

# Over TLS to a host that is not intercepted the proxy cannot see headers (and
# the placeholder is worth nothing there); in plain HTTP and on intercepted
# hosts it is refused wherever it is not approved.
t_refused_elsewhere() {
	setup
	local out
	out=$(GH_TOKEN=$REAL "$MOAT" run --quiet "${COMMON[@]}" --log "$T_OUT/log2.jsonl" -- sh -c '
		curl -sS -o /dev/null -w "other=%{http_code}\n" "http://other.test:'"$PORT"'/other" -H "Authorization: Bearer $GH_TOKEN"
		curl -sS -o /dev/null -w "query=%{http_code}\n" "https://api.test:'"$PORT"'/q?t=$GH_TOKEN"
		curl -sS -o /dev/null -w "body=%{http_code}\n" "https://api.test:'"$PORT"'/b" --data "token=$GH_TOKEN"
		getent hosts "$GH_TOKEN.api.test" >/dev/null && echo dns=resolved || echo dns=refused
		true')
	assert_contains "$out" "other=403"
	assert_contains "$out" "query=403"
	assert_contains "$out" "body=403"
	assert_contains "$out" "dns=refused"
	local seen
	seen=$(cat "$PKI/seen" 2>/dev/null || true)
	assert_not_contains "$seen" "/other" "other.test received the request"
	assert_not_contains "$seen" "$REAL"
	assert_not_contains "$seen" "moat-ph-" "a placeholder reached an upstream"
	local alerts
	alerts=$(grep '"type":"alert"' "$T_OUT/log2.jsonl" || true)
	assert_contains "$alerts" "GH_TOKEN"
	assert_not_contains "$(cat "$T_OUT/log2.jsonl")" "$REAL"
}

t_bad_upstream_cert() {
	setup
	PKI2=$(mktemp -d "$T_OUT/pki2.XXXXXX")
	make_ca "$PKI2" api.test
	local out
	out=$(GH_TOKEN=$REAL "$MOAT" run --quiet --allow-host "api.test:$PORT" --resolve api.test=127.0.0.2 \
		--upstream-ca "$PKI2/ca.pem" --secret GH_TOKEN@api.test -- sh -c '
		curl -sS -o /dev/null -w "code=%{http_code}\n" "https://api.test:'"$PORT"'/x" -H "Authorization: Bearer $GH_TOKEN" 2>&1; true')
	assert_contains "$out" "502"
	assert_not_contains "$(cat "$PKI/seen" 2>/dev/null || true)" "$REAL" "sent to an unverified upstream"
}

t_source_failures() {
	local rc=0 err
	err=$(env -u GH_TOKEN "$MOAT" run --quiet --secret GH_TOKEN@api.test -- true 2>&1) || rc=$?
	assert_eq 125 "$rc" "missing variable"
	assert_contains "$err" "GH_TOKEN"
	printf '{"version":1,"secrets":[{"name":"T","from_file":"%s","hosts":["a.test"]}]}' "$T_OUT/nope" >"$T_OUT/p1.json"
	rc=0
	err=$("$MOAT" run --quiet --policy "$T_OUT/p1.json" -- true 2>&1) || rc=$?
	assert_eq 125 "$rc" "unreadable file"
	printf '{"version":1,"secrets":[{"name":"T","from_command":"echo partial; exit 3","hosts":["a.test"]}]}' >"$T_OUT/p2.json"
	rc=0
	err=$("$MOAT" run --quiet --policy "$T_OUT/p2.json" -- true 2>&1) || rc=$?
	assert_eq 125 "$rc" "command failing"
	assert_not_contains "$err" "partial" "the command's output in the error"
}

# --inspect-tls all: placeholder detection on a host without a secret. The
# positive control is the default run, where TLS to other.test is a tunnel and
# the placeholder reaches it unseen. --no-inspect passes a host through (its
# own certificate), and may not cover a secret's host.
t_inspect_tls_all() {
	setup
	local out seen
	out=$(GH_TOKEN=$REAL "$MOAT" run --quiet "${COMMON[@]}" --ro "$PKI" -- sh -c '
		curl -sS -o /dev/null -w "tunnel=%{http_code}\n" --cacert "'"$PKI"'/ca.pem" \
			"https://other.test:'"$PORT"'/tunnel" -H "Authorization: Bearer $GH_TOKEN"')
	assert_contains "$out" "tunnel=200"
	assert_contains "$(cat "$PKI/seen")" "GET /tunnel	Bearer moat-ph-GH_TOKEN-" "control: unseen by default"
	out=$(GH_TOKEN=$REAL "$MOAT" run --quiet "${COMMON[@]}" --inspect-tls all \
		--log "$T_OUT/log3.jsonl" -- sh -c '
		curl -sS -o /dev/null -w "inspected=%{http_code}\n" \
			"https://other.test:'"$PORT"'/inspected" -H "Authorization: Bearer $GH_TOKEN"
		curl -sS -o /dev/null -w "clean=%{http_code}\n" "https://other.test:'"$PORT"'/clean"')
	assert_contains "$out" "inspected=403"
	assert_contains "$out" "clean=200"
	seen=$(cat "$PKI/seen")
	assert_not_contains "$seen" "/inspected"
	assert_contains "$seen" "GET /clean"
	assert_contains "$(grep '"type":"alert"' "$T_OUT/log3.jsonl")" "placeholder sent to a host it is not approved for"
	# --no-inspect: the upstream's own certificate, i.e. not intercepted
	out=$(GH_TOKEN=$REAL "$MOAT" run --quiet "${COMMON[@]}" --inspect-tls all \
		--no-inspect other.test --ro "$PKI" -- sh -c '
		curl -sS -o /dev/null -w "pinned=%{http_code}\n" --cacert "'"$PKI"'/ca.pem" \
			"https://other.test:'"$PORT"'/pinned"')
	assert_contains "$out" "pinned=200"
	assert_contains "$(cat "$PKI/seen")" "GET /pinned"
	# ... but never for a secret's host
	local rc=0
	GH_TOKEN=$REAL "$MOAT" run --quiet "${COMMON[@]}" --inspect-tls all --no-inspect API.test. \
		-- true 2>"$T_OUT/err" || rc=$?
	assert_eq 2 "$rc" "--no-inspect over a secret's host (a policy error)"
	assert_contains "$(cat "$T_OUT/err")" "a host of secret GH_TOKEN"
}

# One HTTP/1 grammar on every path: a request smuggled behind a CL/TE
# disagreement is refused with its reason inside an intercepted stream and on
# the plain proxy path alike; the smuggled request reaches no upstream.
t_smuggling_refused_on_every_path() {
	setup
	local out
	out=$(GH_TOKEN=$REAL "$MOAT" run --quiet "${COMMON[@]}" --log "$T_OUT/log3.jsonl" -- python3 -c '
import os, socket, ssl, sys
port = int(sys.argv[1])
def smuggle(path):
    return ("POST %s HTTP/1.1\r\nHost: api.test:%d\r\nContent-Length: 4\r\n"
            "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n"
            "GET /smuggled HTTP/1.1\r\nHost: api.test:%d\r\n\r\n" % (path, port, port)).encode()
def read_all(s):
    data = b""
    while True:
        try:
            b = s.recv(4096)
        except (ConnectionError, ssl.SSLError):
            break
        if not b:
            break
        data += b
    return data.decode(errors="replace")
# intercepted: CONNECT, TLS with the run CA, then the raw bytes
px = socket.create_connection(("127.0.0.1", int(os.environ["https_proxy"].rsplit(":", 1)[1].strip("/"))))
px.sendall(b"CONNECT api.test:%d HTTP/1.1\r\nHost: api.test:%d\r\n\r\n" % (port, port))
hello = b""
while b"\r\n\r\n" not in hello:
    hello += px.recv(1)
ctx = ssl.create_default_context(cafile=os.environ.get("SSL_CERT_FILE"))
t = ctx.wrap_socket(px, server_hostname="api.test")
t.sendall(smuggle("/icpt"))
print("INTERCEPTED<<" + read_all(t) + ">>")
# plain: the same bytes in absolute-form to the proxy port
pl = socket.create_connection(("127.0.0.1", int(os.environ["http_proxy"].rsplit(":", 1)[1].strip("/"))))
pl.sendall(smuggle("http://api.test:%d/plain" % port))
print("PLAIN<<" + read_all(pl) + ">>")
' "$PORT")
	local icpt plain
	icpt=$(printf '%s' "$out" | sed -n '/INTERCEPTED<</,/>>/p')
	plain=$(printf '%s' "$out" | sed -n '/PLAIN<</,/>>/p')
	assert_contains "$icpt" "HTTP/1.1 400 Bad Request" "intercepted: refused"
	assert_contains "$icpt" "X-Moat-Denied: cl-and-te" "intercepted: the reason is named"
	assert_contains "$plain" "HTTP/1.1 400 Bad Request" "plain: refused"
	assert_contains "$plain" "X-Moat-Denied: cl-and-te" "plain: the same reason"
	local seen log
	seen=$(cat "$PKI/seen" 2>/dev/null || true)
	assert_not_contains "$seen" "/smuggled" "the smuggled request reached the upstream"
	assert_not_contains "$seen" "/icpt" "the ambiguous request reached the upstream"
	log=$(cat "$T_OUT/log3.jsonl")
	[ "$(grep -c '"reason":"cl-and-te"' <<<"$log")" -ge 2 ] ||
		fail "both refusals logged with reason cl-and-te: $(grep '"net"' <<<"$log")"
	# positive control: the same connection shape without the ambiguity is
	# forwarded, so the refusal above is the grammar's, not the setup's
	out=$(GH_TOKEN=$REAL "$MOAT" run --quiet "${COMMON[@]}" -- python3 -c '
import os, socket, ssl, sys
port = int(sys.argv[1])
px = socket.create_connection(("127.0.0.1", int(os.environ["https_proxy"].rsplit(":", 1)[1].strip("/"))))
px.sendall(b"CONNECT api.test:%d HTTP/1.1\r\nHost: api.test:%d\r\n\r\n" % (port, port))
hello = b""
while b"\r\n\r\n" not in hello:
    hello += px.recv(1)
t = ssl.create_default_context(cafile=os.environ.get("SSL_CERT_FILE")).wrap_socket(px, server_hostname="api.test")
t.sendall(b"POST /control HTTP/1.1\r\nHost: api.test:%d\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n0\r\n\r\n" % port)
print(t.recv(4096).decode(errors="replace"))
' "$PORT")
	assert_contains "$out" "200 OK" "control: an unambiguous chunked request passes"
	assert_contains "$(cat "$PKI/seen")" "POST /control" "control: the upstream got it"
}

# run_of LOG: the run id in an audit log.
run_of() { sed -n 's/.*"run":"\([0-9a-f]*\)".*/\1/p' "$1" 2>/dev/null | head -1; }
# ca_dirs ID: the per-run CA bundle directories of run ID
ca_dirs() { ls -d "/tmp/moat-ca-$1."* 2>/dev/null || true; }

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

# No state record to name the CA bundle's directory: the run does not start
# (125 naming the step) and leaves no directory. Positive control: the same
# state directory lets a run without a credential (no temporary) run.
t_no_record_fails_closed() {
	setup
	local out rc=0 id
	out=$(GH_TOKEN=$REAL no_record "$MOAT" run --quiet "${COMMON[@]}" --log "$T_OUT/nr.jsonl" \
		-- true 2>&1) || rc=$?
	assert_eq 125 "$rc" "a run with a credential and no state record: $out"
	assert_contains "$out" "credentials step: cannot record the temporary directory" "names the step"
	id=$(run_of "$T_OUT/nr.jsonl")
	[ -n "$id" ] || fail "no run id in the log"
	gone_or_fail "$(ca_dirs "$id")" "the CA bundle directory of the refused run was left"
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

# killed_run LOG MARK: a run with a credential (so a per-run CA bundle)
# SIGKILLed (moat, the process holding the sandbox) once its command and
# its CA bundle directory are seen (positive control); then no process of
# the sandbox is left. Its run id in RUN_ID.
killed_run() {
	local log=$1 mark=$2 pid left
	# shellcheck disable=SC2016 # expanded inside
	GH_TOKEN=$REAL "$MOAT" run --quiet "${COMMON[@]}" --log "$log" -- \
		sh -c 'sleep 60; echo "$0"' "$mark" &
	pid=$!
	RUN_ID=
	for _ in $(seq 100); do
		RUN_ID=$(run_of "$log")
		[ -n "$RUN_ID" ] && pgrep -f -- "$mark" >/dev/null && break
		sleep 0.1
	done
	pgrep -f -- "$mark" >/dev/null || { kill -9 "$pid"; fail "positive control: the command was not seen running"; }
	[ -n "$(ca_dirs "$RUN_ID")" ] || { kill -9 "$pid"; fail "positive control: the run's CA bundle directory was not found"; }
	kill -9 "$pid"
	wait "$pid" 2>/dev/null || true
	for _ in $(seq 50); do
		left=$(pgrep -f -- "$mark" || true)
		[ -z "$left" ] && break
		sleep 0.1
	done
	[ -z "$left" ] || fail "processes of the sandbox survived moat's SIGKILL: $left"
}

# The per-run CA bundle's directory is named in the run's state record
# before the bundle is written: after a SIGKILL of moat, `moat gc` (or the
# next run's sweep) removes it.
t_sigkill_leaves_no_ca() {
	setup
	local mark="moat-cred-kill-$$-$RANDOM"
	killed_run "$T_OUT/kill.jsonl" "$mark-1"
	"$MOAT" gc --quiet || fail "moat gc failed"
	gone_or_fail "$(ca_dirs "$RUN_ID")" "the CA bundle directory was left after SIGKILL and moat gc"
	killed_run "$T_OUT/kill2.jsonl" "$mark-2"
	"$MOAT" run --quiet -- true || fail "the next run failed"
	gone_or_fail "$(ca_dirs "$RUN_ID")" "the CA bundle directory was left after SIGKILL and the next run"
}

run_test "curl, python and git get the real token to the upstream; the sandbox holds a placeholder" t_injected_for_curl_python_git
run_test "the real value is nowhere inside (environment, files)" t_value_never_inside
run_test "the placeholder to another host, in a URL, a body or DNS is refused and alerted" t_refused_elsewhere
run_test "an upstream certificate from another CA: the request fails, nothing sent" t_bad_upstream_cert
run_test "a secret source that fails stops the run (125)" t_source_failures
run_test "--inspect-tls all sees placeholders on every host; --no-inspect passes through" t_inspect_tls_all
run_test "SIGKILL of moat: no process left, moat gc and the next run remove the per-run CA" t_sigkill_leaves_no_ca
run_test "no state record for the per-run CA: 125 naming the step, nothing left" t_no_record_fails_closed
run_test "a request smuggled behind CL/TE is refused with its reason, intercepted and plain" t_smuggling_refused_on_every_path
t_done
