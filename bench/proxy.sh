#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Egress proxy benchmark (issue 5), loopback only, in one run:
#   bulk transfer: direct loopback vs CONNECT tunnel vs HTTP proxy vs transparent
#   request rate:  small requests on one keep-alive connection, direct vs proxy
#   start-up:      `moat run --net none -- true` vs `--net allow`
#   the same transfer, request rate and CONCURRENT connections held open at
#   once through srt's proxy (Anthropic's sandbox-runtime, when installed by
#   bench/peers.sh) next to moat's and direct
# Usage: bench/proxy.sh [MOAT]   (env SIZE_MB=4096 REQS=2000 RUNS=20 CONC=1000
#                                 SRT=path/to/srt)
set -euo pipefail

MOAT=${1:-${MOAT:-build/moat}}
SIZE_MB=${SIZE_MB:-4096}
REQS=${REQS:-2000}
RUNS=${RUNS:-20}
CONC=${CONC:-1000}
SRT=${SRT:-$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/.peers/node_modules/.bin/srt}
PY=/usr/bin/python3
ADDR=127.0.0.3
dir=$(mktemp -d /tmp/moat-bench.XXXXXX)
chmod 755 "$dir"
srv_pid=
trap '[ -n "$srv_pid" ] && kill "$srv_pid" 2>/dev/null; rm -rf "$dir"' EXIT

truncate -s "${SIZE_MB}M" "$dir/big"
echo small >"$dir/small"
chmod 644 "$dir/big" "$dir/small"

# A threaded keep-alive server that sends files with sendfile(2), so the
# server is not what is measured.
cat >"$dir/srv.py" <<'PY'
import os, socket, sys, threading
root, addr = sys.argv[1], sys.argv[2]
ls = socket.socket()
ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
ls.bind((addr, 0)); ls.listen(1024)
print(ls.getsockname()[1], flush=True)
def serve(c):
    buf = b''
    with c:
        while True:
            while b'\r\n\r\n' not in buf:
                d = c.recv(65536)
                if not d: return
                buf += d
            head, buf = buf.split(b'\r\n\r\n', 1)
            path = head.split(b' ')[1].decode()
            name = os.path.basename(path.split('?')[0]) or 'small'
            with open(os.path.join(root, name), 'rb') as f:
                n = os.fstat(f.fileno()).st_size
                c.sendall(b'HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n' % n)
                off = 0
                while off < n:
                    off += os.sendfile(c.fileno(), f.fileno(), off, n - off)
while True:
    c, _ = ls.accept()
    c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    threading.Thread(target=serve, args=(c,), daemon=True).start()
PY
"$PY" "$dir/srv.py" "$dir" "$ADDR" >"$dir/port" &
srv_pid=$!
for _ in $(seq 50); do [ -s "$dir/port" ] && break; sleep 0.1; done
port=$(cat "$dir/port")
allow=(--allow-host "bench.test:$port" --resolve "bench.test=$ADDR")

# MB/s of one download (curl reports bytes/s)
speed() { awk '{printf "%.0f", $1 / 1048576}'; }
dl() { curl -s -o /dev/null -w '%{speed_download}\n' "$@"; }

echo "# moat proxy benchmark: $(uname -r), $(nproc) CPUs, ${SIZE_MB} MiB transfers, best of 3"
dl "http://$ADDR:$port/big" >/dev/null # warm the page cache
# best of three downloads: CMD... prints bytes/s once per run
best() {
	local b=0 v
	for _ in 1 2 3; do
		v=$("$@")
		b=$(awk -v a="$b" -v v="$v" 'BEGIN { print (v > a ? v : a) }')
	done
	echo "$b" | speed
}
inside() { "$MOAT" run --quiet "${allow[@]}" -- curl -s -o /dev/null -w '%{speed_download}\n' "$@"; }
direct=$(best dl --noproxy '*' "http://$ADDR:$port/big")
tunnel=$(best inside -p -x http://127.0.0.1:3128 "http://bench.test:$port/big")
httpp=$(best inside "http://bench.test:$port/big")
transp=$(best inside --noproxy '*' "http://bench.test:$port/big")
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
printf '%-34s %8s MiB/s\n' "direct loopback" "$direct"
printf '%-34s %8s MiB/s  %sx direct\n' "CONNECT tunnel (splice)" "$tunnel" "$(ratio "$tunnel" "$direct")"
printf '%-34s %8s MiB/s  %sx direct\n' "HTTP proxy (absolute-form)" "$httpp" "$(ratio "$httpp" "$direct")"
printf '%-34s %8s MiB/s  %sx direct\n' "transparent capture" "$transp" "$(ratio "$transp" "$direct")"

# Request rate: REQS small requests on one keep-alive connection.
urls="http://$ADDR:$port/small?[1-$REQS]"
t0=$(date +%s%N)
curl -s -o /dev/null "$urls"
t1=$(date +%s%N)
"$MOAT" run --quiet "${allow[@]}" -- curl -s -o /dev/null "http://bench.test:$port/small?[1-$REQS]"
t2=$(date +%s%N)
"$MOAT" run --quiet --net none -- true
t3=$(date +%s%N)
rd=$(awk -v n="$REQS" -v ns=$((t1 - t0)) 'BEGIN { printf "%.0f", n / (ns / 1e9) }')
# the proxied run includes one sandbox start-up: subtract it
rp=$(awk -v n="$REQS" -v ns=$((t2 - t1 - (t3 - t2))) 'BEGIN { printf "%.0f", n / (ns / 1e9) }')
printf '%-34s %8s req/s\n' "requests direct (keep-alive)" "$rd"
printf '%-34s %8s req/s  %sx direct\n' "requests via HTTP proxy" "$rp" "$(ratio "$rp" "$rd")"

# Concurrent connections: CONC connections opened and held at once, then one
# small request on each (HTTP proxy absolute-form, or direct), every response
# read; connections per second and how many succeeded.
cat >"$dir/conc.py" <<'PY'
import base64, os, socket, sys, time, urllib.parse
n, host, port = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
proxy = os.environ.get("BENCH_PROXY", "")
hdr = b""
if proxy:
    u = urllib.parse.urlsplit(proxy)
    peer = (u.hostname, u.port)
    if u.username:
        cred = urllib.parse.unquote(u.username) + ":" + urllib.parse.unquote(u.password or "")
        hdr = b"Proxy-Authorization: Basic " + base64.b64encode(cred.encode()) + b"\r\n"
    target = ("http://%s:%d/small" % (host, port)).encode()
else:
    peer = (host, port)
    target = b"/small"
req = b"GET " + target + b" HTTP/1.1\r\nHost: %s:%d\r\n" % (host.encode(), port) + hdr + b"Connection: close\r\n\r\n"
t0 = time.monotonic()
deadline = t0 + 30  # for everything: a stuck peer cannot stall the run
socks = []
for _ in range(n):
    try:
        socks.append(socket.create_connection(peer, timeout=max(0.01, deadline - time.monotonic())))
    except OSError:
        pass
for s in socks:
    try:
        s.sendall(req)
    except OSError:
        pass
def response(s):
    # headers, then Content-Length bytes of body (the server keeps the
    # connection open)
    s.settimeout(max(0.01, deadline - time.monotonic()))
    data = b""
    while b"\r\n\r\n" not in data:
        d = s.recv(65536)
        if not d:
            return data
        data += d
    head, body = data.split(b"\r\n\r\n", 1)
    n = 0
    for line in head.split(b"\r\n")[1:]:
        k, _, v = line.partition(b":")
        if k.strip().lower() == b"content-length":
            n = int(v)
    while len(body) < n:
        d = s.recv(65536)
        if not d:
            break
        body += d
    return head if len(body) >= n else b""
ok = 0
for s in socks:
    try:
        r = response(s)
    except (OSError, ValueError):
        r = b""
    ok += r.startswith(b"HTTP/1.1 200") or r.startswith(b"HTTP/1.0 200")
    s.close()
dt = time.monotonic() - t0
print("%d %d %.0f" % (ok, len(socks), n / dt))
PY
chmod 644 "$dir/conc.py"
conc_line() { # LABEL "OK OPENED RATE"
	local label=$1
	# shellcheck disable=SC2086 # three numbers
	set -- $2
	printf '%-34s %8s conn/s  %s of %s answered, %s held at once\n' "$label" "${3:-0}" "${1:-0}" "$CONC" "${2:-0}"
}
conc_line "concurrent: direct" "$("$PY" "$dir/conc.py" "$CONC" "$ADDR" "$port")"
# (the script goes in on stdin: the sandbox has its own /tmp)
conc_line "concurrent: moat HTTP proxy" "$("$MOAT" run --quiet "${allow[@]}" -- env \
	BENCH_PROXY=http://127.0.0.1:3128 "$PY" - "$CONC" bench.test "$port" <"$dir/conc.py")"

# srt's proxy (a Node.js HTTP proxy on the host, bridged into its sandbox),
# allowed to the server's address, measured the same way.
if [ -x "$SRT" ] && command -v node >/dev/null; then
	mkdir -p "$dir/srt-home"
	printf '{ "network": { "allowedDomains": [ "%s" ], "deniedDomains": [] },\n  "filesystem": { "denyRead": [], "allowWrite": [ "/tmp" ], "denyWrite": [] } }\n' \
		"$ADDR" >"$dir/srt.json"
	srt_run() { HOME="$dir/srt-home" "$SRT" -s "$dir/srt.json" "$@"; }
	# srt takes one command line: each measurement is a script it runs with sh
	printf 'exec curl -s -o /dev/null -w "%%{speed_download}\\n" "http://%s:%s/big"\n' "$ADDR" "$port" >"$dir/srt-dl.sh"
	# the request loop times itself inside srt: its ~300 ms start-up, which
	# varies by tens of ms, would swamp the difference
	printf 't0=$(date +%%s%%N); curl -s -o /dev/null "http://%s:%s/small?[1-%s]"; t1=$(date +%%s%%N); echo $((t1 - t0))\n' \
		"$ADDR" "$port" "$REQS" >"$dir/srt-req.sh"
	printf 'BENCH_PROXY=$HTTP_PROXY exec %s %s %s %s %s\n' "$PY" "$dir/conc.py" "$CONC" "$ADDR" "$port" >"$dir/srt-conc.sh"
	chmod 644 "$dir"/srt-*.sh
	srt_dl() { srt_run sh "$dir/srt-dl.sh"; }
	srtp=$(best srt_dl)
	printf '%-34s %8s MiB/s  %sx direct\n' "srt's HTTP proxy" "$srtp" "$(ratio "$srtp" "$direct")"
	ns=$(srt_run sh "$dir/srt-req.sh" | tail -n 1)
	rs=$(awk -v n="$REQS" -v ns="${ns:-0}" 'BEGIN { printf "%.0f", (ns > 0 ? n / (ns / 1e9) : 0) }')
	printf '%-34s %8s req/s  %sx direct, moat %sx srt\n' "requests via srt's proxy" "$rs" \
		"$(ratio "$rs" "$rd")" "$(ratio "$rp" "$rs")"
	conc_line "concurrent: srt's proxy" "$(srt_run sh "$dir/srt-conc.sh")"
else
	echo "srt's proxy: missing ($SRT not installed: bench/peers.sh --install)"
fi

# Start-up: mean wall time of RUNS runs of `true`.
startup() {
	local t0 t1
	t0=$(date +%s%N)
	for _ in $(seq "$RUNS"); do "$MOAT" run --quiet "$@" -- true; done
	t1=$(date +%s%N)
	awk -v ns=$((t1 - t0)) -v n="$RUNS" 'BEGIN { printf "%.1f", ns / n / 1e6 }'
}
none=$(startup --net none)
allowed=$(startup "${allow[@]}")
printf '%-34s %8s ms\n' "start-up --net none" "$none"
printf '%-34s %8s ms  %sx --net none\n' "start-up --net allow" "$allowed" "$(ratio "$allowed" "$none")"

# TLS-terminating path (issue 6): a secret's host is intercepted (leaf minted by
# the per-run CA, upstream verified, placeholder replaced on every request).
# Keep-alive request rate direct TLS vs through the intercepting proxy, and the
# first request's TLS set-up (which includes minting the leaf for a new name).
TLSADDR=127.0.0.4
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj "/CN=bench CA" \
	-keyout "$dir/ca.key" -out "$dir/ca.pem" 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=tls.bench.test" \
	-keyout "$dir/srv.key" -out "$dir/srv.csr" 2>/dev/null
printf 'subjectAltName=DNS:tls.bench.test\nextendedKeyUsage=serverAuth\n' >"$dir/ext"
openssl x509 -req -in "$dir/srv.csr" -CA "$dir/ca.pem" -CAkey "$dir/ca.key" -CAcreateserial -days 1 \
	-extfile "$dir/ext" -out "$dir/srv.pem" 2>/dev/null
chmod 644 "$dir"/*.pem
# the direct client trusts a bundle of the same size as the sandbox's (system
# roots + a CA): loading ~200 KB of roots costs curl ~40 ms, on both sides
cat /etc/ssl/certs/ca-certificates.crt "$dir/ca.pem" >"$dir/bundle.pem"
cat >"$dir/tls.py" <<'PY'
import socket, ssl, sys, threading
d, addr = sys.argv[1], sys.argv[2]
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(d + "/srv.pem", d + "/srv.key")
ls = socket.socket(); ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
ls.bind((addr, 0)); ls.listen(128)
print(ls.getsockname()[1], flush=True)
def serve(c):
    try:
        c = ctx.wrap_socket(c, server_side=True)
    except Exception:
        return
    buf = b''
    with c:
        while True:
            while b'\r\n\r\n' not in buf:
                x = c.recv(65536)
                if not x: return
                buf += x
            head, buf = buf.split(b'\r\n\r\n', 1)
            c.sendall(b'HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nsmall\n')
while True:
    c, _ = ls.accept()
    c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    threading.Thread(target=serve, args=(c,), daemon=True).start()
PY
"$PY" "$dir/tls.py" "$dir" "$TLSADDR" >"$dir/tlsport" &
tls_pid=$!
trap '[ -n "$srv_pid" ] && kill "$srv_pid" 2>/dev/null; kill "$tls_pid" 2>/dev/null; rm -rf "$dir"' EXIT
for _ in $(seq 50); do [ -s "$dir/tlsport" ] && break; sleep 0.1; done
tport=$(cat "$dir/tlsport")
tls_allow=(--allow-host "tls.bench.test:$tport" --resolve "tls.bench.test=$TLSADDR"
	--upstream-ca "$dir/ca.pem" --secret "BENCH_TOKEN@tls.bench.test")
export BENCH_TOKEN=bench-secret-value
t0=$(date +%s%N)
curl -s -o /dev/null --cacert "$dir/bundle.pem" --resolve "tls.bench.test:$tport:$TLSADDR" \
	-H "Authorization: Bearer $BENCH_TOKEN" "https://tls.bench.test:$tport/small?[1-$REQS]"
t1=$(date +%s%N)
"$MOAT" run --quiet "${tls_allow[@]}" -- sh -c 'curl -s -o /dev/null -H "Authorization: Bearer $BENCH_TOKEN" "https://tls.bench.test:'"$tport"'/small?[1-'"$REQS"']"'
t2=$(date +%s%N)
"$MOAT" run --quiet "${tls_allow[@]}" -- true
t3=$(date +%s%N)
trd=$(awk -v n="$REQS" -v ns=$((t1 - t0)) 'BEGIN { printf "%.0f", n / (ns / 1e9) }')
trp=$(awk -v n="$REQS" -v ns=$((t2 - t1 - (t3 - t2))) 'BEGIN { printf "%.0f", n / (ns / 1e9) }')
printf '%-34s %8s req/s\n' "TLS requests direct (keep-alive)" "$trd"
printf '%-34s %8s req/s  %sx direct (target >= 0.5)\n' "TLS intercepted + injected" "$trp" "$(ratio "$trp" "$trd")"
first_direct=$(curl -s -o /dev/null -w '%{time_appconnect}' --cacert "$dir/bundle.pem" \
	--resolve "tls.bench.test:$tport:$TLSADDR" "https://tls.bench.test:$tport/small")
first_moat=$("$MOAT" run --quiet "${tls_allow[@]}" -- curl -s -o /dev/null -w '%{time_appconnect}' \
	"https://tls.bench.test:$tport/small")
printf '%-34s %8s ms\n' "first TLS set-up, direct" "$(awk -v s="$first_direct" 'BEGIN { printf "%.2f", s * 1000 }')"
printf '%-34s %8s ms  (CONNECT + leaf minted for a new name)\n' "first TLS set-up, intercepted" "$(awk -v s="$first_moat" 'BEGIN { printf "%.2f", s * 1000 }')"
