#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The cost of recording network attempts under --net none (issue 13, item 7):
# per-call time of AF_UNIX connect, sendmsg and send (which stays in the
# kernel) inside one moat binary with the recording rules (--net none) and
# without them (--net host, where the rules are not installed), interleaved.
# Not part of `make bench`; run by hand:  bench/netrec.sh [ROUNDS] [CALLS]
set -euo pipefail
MOAT=${MOAT:-$(dirname "$0")/../build/moat}
ROUNDS=${1:-3}
CALLS=${2:-20000}
code='import socket, time, sys
n = int(sys.argv[2]); m = sys.argv[1]
if m == "connect":
    p = "/tmp/bench-netrec.sock"
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM); srv.bind(p)
else:
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
t = time.perf_counter()
for i in range(n):
    if m == "connect":
        c = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM); c.connect(p); c.close()
    elif m == "sendmsg":
        a.sendmsg([b"x"]); b.recv(10)
    else:
        a.send(b"x"); b.recv(10)
print("%.2f" % ((time.perf_counter() - t) / n * 1e6))'
for m in connect sendmsg send; do
	for net in none host; do
		for _ in $(seq "$ROUNDS"); do
			"$MOAT" run --quiet --net "$net" -- python3 -c "$code" "$m" "$CALLS"
		done | sort -n | sed -n "$(((ROUNDS + 1) / 2))p" | sed "s|^|$m --net $net: |; s|$| us/call (median)|"
	done
done
