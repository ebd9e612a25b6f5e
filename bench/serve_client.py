#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Timings of `moat serve` over its unix socket for bench/serve.sh (standard
library only). Usage: serve_client.py SOCKET MODE N [POOL]

  cold  N times: create a sandbox, exec `echo x`, until the first stdout
        event (create-to-first-output), then delete it (not timed)
  warm  the same with a server started with --pool POOL: waits until the
        pool is full before each create, counts the creates that were warm
  exec  one sandbox, N execs of /bin/true until the exit record
  idle  N sandboxes created and held until a line on stdin; prints
        "idle_created N in_us T"; with POOL (here: C), C clients create
        at once (C requests in flight), else one request after the other

Prints "MODE_us median M p90 P n N warm W [create_only_median C]"
(microseconds; C: the create request alone)."""
import http.client
import json
import socket
import sys
import time


class UnixConn(http.client.HTTPConnection):
    def __init__(self, path, timeout=60):
        super().__init__("localhost", timeout=timeout)
        self.unix_path = path

    def connect(self):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(self.timeout)
        s.connect(self.unix_path)
        self.sock = s


def call(sock, method, path, body=None):
    c = UnixConn(sock)
    data = json.dumps(body).encode() if body is not None else None
    c.request(method, path, body=data, headers={"Content-Type": "application/json"})
    r = c.getresponse()
    out = r.read()
    c.close()
    if r.status >= 300:
        sys.exit(f"{method} {path}: {r.status} {out[:300]!r}")
    return json.loads(out) if out else None


def exec_until(sock, sid, argv, until):
    """Runs argv; returns when an event of type `until` arrived (then reads
    the stream to its end)."""
    c = UnixConn(sock)
    c.request("POST", f"/v1/sandboxes/{sid}/exec", body=json.dumps({"argv": argv}).encode(),
              headers={"Content-Type": "application/json"})
    r = c.getresponse()
    if r.status != 200:
        sys.exit(f"exec: {r.status} {r.read()[:300]!r}")
    t = None
    while True:
        line = r.readline()
        if not line:
            break
        ev = json.loads(line)
        if t is None and ev.get("type") == until:
            t = time.monotonic()
    c.close()
    if t is None:
        sys.exit(f"exec {argv}: no {until} event")
    return t


def pool_ready(sock):
    h = call(sock, "GET", "/v1/health")
    pools = h.get("pools") or []
    return pools[0].get("ready", 0) if pools else 0


def stats(v):
    v = sorted(v)
    return v[len(v) // 2], v[len(v) * 9 // 10]


def main():
    sock, mode, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    pool = int(sys.argv[4]) if len(sys.argv) > 4 else 0
    times, creates, warm = [], [], 0
    if mode in ("cold", "warm"):
        for _ in range(n):
            if mode == "warm":
                for _ in range(600):
                    if pool_ready(sock) >= pool:
                        break
                    time.sleep(0.01)
            t0 = time.monotonic()
            sb = call(sock, "POST", "/v1/sandboxes", {})
            creates.append(int((time.monotonic() - t0) * 1e6))
            t1 = exec_until(sock, sb["id"], ["echo", "x"], "stdout")
            times.append(int((t1 - t0) * 1e6))
            warm += bool(sb.get("warm"))
            call(sock, "DELETE", f"/v1/sandboxes/{sb['id']}")
    elif mode == "exec":
        sb = call(sock, "POST", "/v1/sandboxes", {})
        for i in range(n + 5):
            t0 = time.monotonic()
            t1 = exec_until(sock, sb["id"], ["/bin/true"], "exit")
            if i >= 5:  # warm-up
                times.append(int((t1 - t0) * 1e6))
        call(sock, "DELETE", f"/v1/sandboxes/{sb['id']}")
    elif mode == "idle":
        # N sandboxes created one after the other and held until a line
        # comes on stdin (the bench reads the server's PSS meanwhile)
        t0 = time.monotonic()
        if pool > 1:
            import threading
            ids, lock = [], threading.Lock()

            def worker(k):
                for _ in range(k):
                    try:
                        sid = call(sock, "POST", "/v1/sandboxes", {})["id"]
                    except BaseException as e:  # noqa: BLE001 - counted below (sys.exit too)
                        print(f"idle: a create failed: {e!r}", file=sys.stderr, flush=True)
                        return
                    with lock:
                        ids.append(sid)

            ts = [threading.Thread(target=worker, args=(n // pool + (i < n % pool),))
                  for i in range(pool)]
            for t in ts:
                t.start()
            for t in ts:
                t.join()
            if len(ids) != n:
                for sid in ids:
                    call(sock, "DELETE", f"/v1/sandboxes/{sid}")
                sys.exit(f"idle: only {len(ids)} of {n} created")
        else:
            ids = [call(sock, "POST", "/v1/sandboxes", {})["id"] for _ in range(n)]
        print(f"idle_created {n} in_us {int((time.monotonic() - t0) * 1e6)}", flush=True)
        sys.stdin.readline()
        for sid in ids:
            call(sock, "DELETE", f"/v1/sandboxes/{sid}")
        return
    else:
        sys.exit("usage: serve_client.py SOCKET cold|warm|exec|idle N [POOL]")
    med, p90 = stats(times)
    line = f"{mode}_us median {med} p90 {p90} n {len(times)} warm {warm}"
    if creates:
        line += f" create_only_median {stats(creates)[0]}"
    print(line)


if __name__ == "__main__":
    main()
