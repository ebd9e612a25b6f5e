# shellcheck shell=bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# An HTTPS upstream for credential tests (isolation.sh, vm.sh): a test CA and
# a certificate for api.test in DIR, and a server on 127.0.0.2 that records
# each request's path and Authorization header in DIR/seen and answers "ok".
# tls_api_start DIR LOG starts it in the background and sets TLS_API_PID; its
# port appears in DIR/port (written whole, by rename) once it listens. Needs
# $PY and openssl. Sourced after tap.sh.

tls_api_start() {
	local d=$1 log=$2
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
		-subj "/CN=moat test CA" -keyout "$d/ca.key" -out "$d/ca.pem" 2>/dev/null
	openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=api.test" \
		-keyout "$d/srv.key" -out "$d/srv.csr" 2>/dev/null
	printf 'subjectAltName=DNS:api.test\nextendedKeyUsage=serverAuth\n' >"$d/ext"
	openssl x509 -req -in "$d/srv.csr" -CA "$d/ca.pem" -CAkey "$d/ca.key" \
		-CAcreateserial -days 2 -extfile "$d/ext" -out "$d/srv.pem" 2>/dev/null
	"$PY" - "$d" >"$log" 2>&1 <<'PYEOF' &
import http.server, ssl, sys, os
d = sys.argv[1]
class H(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a): pass
    def do_GET(self):
        with open(os.path.join(d, "seen"), "a") as f:
            f.write(self.path + "\t" + self.headers.get("Authorization", "") + "\n")
        self.send_response(200); self.send_header("Content-Length", "3"); self.end_headers()
        self.wfile.write(b"ok\n")
srv = http.server.HTTPServer(("127.0.0.2", 0), H)
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(os.path.join(d, "srv.pem"), os.path.join(d, "srv.key"))
srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
open(os.path.join(d, "port.tmp"), "w").write(str(srv.server_address[1]))
os.rename(os.path.join(d, "port.tmp"), os.path.join(d, "port"))
srv.serve_forever()
PYEOF
	# shellcheck disable=SC2034 # read by the caller
	TLS_API_PID=$!
}
