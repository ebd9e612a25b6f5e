#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""A small client of `moat serve` for tests/integration/serve.sh (standard
library only). Usage: serve_client.py CHECK --socket PATH | --url URL
[--token T] [...]; prints "ok ..." lines and "all ok" at the end, or
"FAIL ..." and exits 1."""
import argparse
import base64
import hashlib
import http.client
import json
import socket
import sys
import threading
import time


class UnixConn(http.client.HTTPConnection):
    def __init__(self, path, timeout=60):
        super().__init__("localhost", timeout=timeout)
        self.path = path

    def connect(self):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(self.timeout)
        s.connect(self.path)
        self.sock = s


class Client:
    def __init__(self, a, token=None):
        self.a = a
        self.token = token if token is not None else a.token

    def conn(self):
        if self.a.socket:
            return UnixConn(self.a.socket)
        host, port = self.a.url.split("//", 1)[1].rsplit(":", 1)
        return http.client.HTTPConnection(host, int(port), timeout=60)

    def req(self, method, path, body=None, raw=None, headers=None):
        """(status, headers, bytes)"""
        c = self.conn()
        h = dict(headers or {})
        if self.token and "Authorization" not in h:
            h["Authorization"] = "Bearer " + self.token
        data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
        c.request(method, path, body=data, headers=h)
        r = c.getresponse()
        out = r.read()
        c.close()
        return r.status, dict(r.getheaders()), out

    def json(self, method, path, body=None, want=None):
        st, h, out = self.req(method, path, body)
        try:
            j = json.loads(out) if out else None
        except ValueError:
            fail(f"{method} {path}: not JSON: {out[:200]!r}")
        if want is not None and st != want:
            fail(f"{method} {path}: want {want}, got {st}: {out[:400]!r}")
        return st, j

    def exec_stream(self, sid, body, on_event=None):
        """The events of an exec, in order."""
        c = self.conn()
        h = {"Content-Type": "application/json"}
        if self.token:
            h["Authorization"] = "Bearer " + self.token
        c.request("POST", f"/v1/sandboxes/{sid}/exec", body=json.dumps(body).encode(), headers=h)
        r = c.getresponse()
        if r.status != 200:
            out = r.read()
            c.close()
            return r.status, json.loads(out)
        evs = []
        while True:
            line = r.readline()
            if not line:
                break
            ev = json.loads(line)
            evs.append(ev)
            if on_event:
                on_event(ev)
        c.close()
        return 200, evs


def fail(msg):
    print("FAIL " + msg, flush=True)
    sys.exit(1)


def ok(msg):
    print("ok " + msg, flush=True)


def check(cond, msg):
    if not cond:
        fail(msg)
    ok(msg)


def output(evs, kind="stdout"):
    return "".join(e.get("data", "") for e in evs if e.get("type") == kind)


def exit_of(evs):
    ex = [e for e in evs if e.get("type") == "exit"]
    return ex[-1] if ex else None


def c_lifecycle(a):
    cl = Client(a)
    _, v = cl.json("GET", "/v1/version", want=200)
    check(v["api"] == "v1", "version")
    _, h = cl.json("GET", "/v1/health", want=200)
    check(h["status"] == "ok", "health")
    t0 = time.monotonic()
    _, sb = cl.json("POST", "/v1/sandboxes", {"name": "life"}, want=201)
    sid = sb["id"]
    check(sb["state"] == "ready", "create returns a ready sandbox")
    # ready means ready: a command runs at once
    st, evs = cl.exec_stream(sid, {"argv": ["sh", "-c", "echo out; echo err >&2; exit 3"]})
    check(st == 200 and output(evs) == "out\n" and output(evs, "stderr") == "err\n", "exec output")
    ex = exit_of(evs)
    check(ex and ex["exit_code"] == 3 and ex["reason"] == "exited", "the exit record")
    check(evs[-1]["type"] == "exit", "the exit record is last")
    print(f"# create+exec {1000 * (time.monotonic() - t0):.1f} ms")
    st, evs = cl.exec_stream(sid, {"argv": ["cat"], "stdin": "from stdin"})
    check(output(evs) == "from stdin", "stdin")
    st, evs = cl.exec_stream(sid, {"argv": ["sh", "-c", "echo $FOO; pwd"], "env": {"FOO": "bar"}, "cwd": "/tmp"})
    check(output(evs) == "bar\n/tmp\n", "env and cwd")
    st, j = cl.exec_stream(sid, {"argv": ["no-such-command-x"]})
    check(st == 422 and j["error"]["code"] == "command_not_found", "a command that is not there: 422")
    _, info = cl.json("GET", f"/v1/sandboxes/{sid}", want=200)
    check(info["execs"] >= 3 and info["name"] == "life", "inspect")
    _, info2 = cl.json("GET", "/v1/sandboxes/life", want=200)
    check(info2["id"] == sid, "inspect by name")
    _, lst = cl.json("GET", "/v1/sandboxes", want=200)
    check([s["id"] for s in lst["sandboxes"]] == [sid], "list")
    st, j = cl.json("POST", "/v1/sandboxes", {"name": "life"})
    check(st == 409 and j["error"]["code"] == "conflict", "a name taken: 409")
    # the audit stream
    st, hd, out = cl.req("GET", f"/v1/sandboxes/{sid}/events")
    lines = [json.loads(x) for x in out.decode().splitlines()]
    types = [e["event"]["type"] for e in lines if e["type"] == "audit"]
    check(st == 200 and "start" in types and "process" in types, "the audit event stream")
    st, hd, out = cl.req("GET", f"/v1/sandboxes/{sid}/events?types=process")
    types = {json.loads(x)["event"]["type"] for x in out.decode().splitlines()}
    check(types == {"process"}, "the audit stream filtered by type")
    cl.req("PUT", f"/v1/sandboxes/{sid}/files?path=/tmp/before-reset", raw=b"x")
    _, r = cl.json("POST", f"/v1/sandboxes/{sid}/reset", {"force": True}, want=200)
    st, _, _ = cl.req("GET", f"/v1/sandboxes/{sid}/files/stat?path=/tmp/before-reset")
    check(r["id"] == sid and st == 404, "reset: the same sandbox, its files back to the start")
    _, d = cl.json("DELETE", f"/v1/sandboxes/{sid}", want=200)
    check(d["deleted"] is True and d["run_id"] == r["run_id"] and "review" in d,
          "delete returns the end summary")
    print(f"run {d['run_id']}")
    st, j = cl.json("GET", f"/v1/sandboxes/{sid}")
    check(st == 404 and j["error"]["code"] == "not_found", "a deleted sandbox is gone")
    st, j = cl.json("GET", "/v1/nothing")
    check(st == 404 and j["error"]["code"] == "not_found", "an unknown path: 404 JSON")
    st, j = cl.json("PATCH", "/v1/sandboxes")
    check(st == 405 and j["error"]["code"] == "method_not_allowed", "a wrong method: 405 JSON")
    st, j = cl.json("POST", "/v1/sandboxes", None)
    check(st == 201, "an empty body is {}")
    cl.json("DELETE", f"/v1/sandboxes/{j['id']}", want=200)
    st, hd, out = cl.req("POST", "/v1/sandboxes", raw=b"{not json")
    check(st == 400 and json.loads(out)["error"]["code"] == "bad_request", "a body that is not JSON: 400")
    st, hd, out = cl.req("GET", "/v1/sandboxes/x/files?path=/" + "a" * 9000)
    check(st == 414, "a request target over 8 KiB: 414, never cut")
    if a.socket:
        # ambiguous framing: refused, the connection closed, the smuggled
        # request never answered; clean pipelining works (control)
        def raw(b):
            s = socket.socket(socket.AF_UNIX)
            s.connect(a.socket)
            s.settimeout(5)
            s.sendall(b)
            out = b""
            try:
                while True:
                    d = s.recv(65536)
                    if not d:
                        break
                    out += d
            except OSError:
                pass
            s.close()
            return out
        get = b"GET /v1/version HTTP/1.1\r\nHost: x\r\n\r\n"
        out = raw(b"POST /v1/sandboxes HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n"
                  b"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n" + get)
        check(out.startswith(b"HTTP/1.1 400") and out.count(b"HTTP/1.1") == 1,
              "Content-Length with Transfer-Encoding: 400, nothing smuggled")
        out = raw(b"GET /v1/version HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nContent-Length: 5\r\n\r\n")
        check(out.startswith(b"HTTP/1.1 400"), "two Content-Length: 400")
        out = raw(get + get.replace(b"\r\n\r\n", b"\r\nConnection: close\r\n\r\n"))
        check(out.count(b"HTTP/1.1 200") == 2, "clean pipelining is served (control)")
        _, lst = cl.json("GET", "/v1/sandboxes", want=200)
        check(lst["sandboxes"] == [], "the refused create made nothing")
    st, hd, out = cl.req("PUT", "/v1/sandboxes/x/files?path=/a", raw=b"x" * (17 << 20))
    check(st == 413, "a body over 16 MiB: 413")
    print("all ok")


def c_snapshots(a):
    cl = Client(a)
    sid = cl.json("POST", "/v1/sandboxes", {}, want=201)[1]["id"]
    cl.req("PUT", f"/v1/sandboxes/{sid}/files?path=/tmp/a", raw=b"one")
    _, sn = cl.json("POST", f"/v1/sandboxes/{sid}/snapshots", {"name": "s1"}, want=201)
    check(sn["name"] == "s1", "snapshot")
    cl.req("PUT", f"/v1/sandboxes/{sid}/files?path=/tmp/a", raw=b"two")
    cl.req("PUT", f"/v1/sandboxes/{sid}/files?path=/tmp/b", raw=b"new")
    # a running process: restore is refused unless force
    c = cl.conn()
    c.request("POST", f"/v1/sandboxes/{sid}/exec", body=json.dumps({"argv": ["sleep", "300"]}).encode())
    r = c.getresponse()
    r.readline()
    st, j = cl.json("POST", f"/v1/sandboxes/{sid}/restore", {"snapshot": "s1"})
    check(st == 409 and j["error"]["code"] == "busy", "restore while a process runs: 409 busy")
    cl.json("POST", f"/v1/sandboxes/{sid}/restore", {"snapshot": "s1", "force": True}, want=200)
    rest = r.read().decode()
    c.close()
    check('"type":"exit"' in rest, "force: the running command ends with its exit record")
    st, _, out = cl.req("GET", f"/v1/sandboxes/{sid}/files?path=/tmp/a")
    check(out == b"one", "restore: the file as it was")
    st, _, out = cl.req("GET", f"/v1/sandboxes/{sid}/files?path=/tmp/b")
    check(st == 404, "restore: a later file is gone")
    cl.json("POST", f"/v1/sandboxes/{sid}/reset", {}, want=200)
    st, _, out = cl.req("GET", f"/v1/sandboxes/{sid}/files?path=/tmp/a")
    check(st == 404, "reset: back to the start")
    _, l = cl.json("GET", f"/v1/sandboxes/{sid}/snapshots", want=200)
    check([x["name"] for x in l["snapshots"]] == ["s1"], "the snapshot outlives a reset")
    cl.json("DELETE", f"/v1/sandboxes/{sid}/snapshots/s1", want=200)
    cl.json("DELETE", f"/v1/sandboxes/{sid}", want=200)
    print("all ok")


def c_concurrent(a):
    cl = Client(a)
    ids = [cl.json("POST", "/v1/sandboxes", {}, want=201)[1]["id"] for _ in range(2)]
    res = {}

    def run(i):
        sid = ids[i % 2]
        res[i] = cl.exec_stream(sid, {"argv": ["sh", "-c", f"sleep 1; echo run{i}"]})

    t0 = time.monotonic()
    th = [threading.Thread(target=run, args=(i,)) for i in range(6)]
    for t in th:
        t.start()
    for t in th:
        t.join()
    el = time.monotonic() - t0
    for i in range(6):
        st, evs = res[i]
        check(st == 200 and output(evs) == f"run{i}\n" and exit_of(evs)["exit_code"] == 0,
              f"concurrent exec {i}: its own output")
    check(el < 4.5, f"6 execs of 1 s ran concurrently ({el:.2f} s)")
    # streaming: the first line arrives before the command ends
    first = {}

    def on_ev(ev):
        if ev.get("type") == "stdout" and "t" not in first:
            first["t"] = time.monotonic()

    t0 = time.monotonic()
    st, evs = cl.exec_stream(ids[0], {"argv": ["sh", "-c", "echo early; sleep 2; echo late"]}, on_ev)
    end = time.monotonic()
    check(output(evs) == "early\nlate\n", "streamed output complete")
    check(first["t"] - t0 < 1.5 and end - t0 >= 2, f"output is streamed ({first['t'] - t0:.2f} s before the end)")
    # the client going away kills its command
    c = cl.conn()
    c.request("POST", f"/v1/sandboxes/{ids[1]}/exec",
              body=json.dumps({"argv": ["sh", "-c", "echo started; exec sleep 300"]}).encode())
    r = c.getresponse()
    r.readline()
    r.readline()
    c.sock.shutdown(socket.SHUT_RDWR)
    c.close()
    for _ in range(50):
        _, info = cl.json("GET", f"/v1/sandboxes/{ids[1]}", want=200)
        if info["running"] == 0:
            break
        time.sleep(0.1)
    check(info["running"] == 0, "a client that goes away: its command is killed")
    for sid in ids:
        cl.json("DELETE", f"/v1/sandboxes/{sid}", want=200)
    print("all ok")


def c_stall(a):
    """A sandbox whose new exec is held stopped before its command (a
    process of the same sandbox stops every other one) must not stall the
    server: another sandbox's exec and a health request are answered while
    it is pending; the stalled one ends with the bound's message. The
    order of completion is asserted, not a time. With --expect-stall (the
    control: the test build's blocking start) the other requests complete
    only after the stalled one: the check fails there."""
    cl = Client(a)
    a_id = cl.json("POST", "/v1/sandboxes", {}, want=201)[1]["id"]
    b_id = cl.json("POST", "/v1/sandboxes", {}, want=201)[1]["id"]
    st, evs = cl.exec_stream(a_id, {"argv": ["/bin/true"]})
    check(st == 200 and exit_of(evs)["exit_code"] == 0, "control: an exec before the stopper")
    # one stopper: kill -1 spares only the caller (sessions.sh t_exec_stopped)
    st, evs = cl.exec_stream(a_id, {"argv": ["sh", "-c", 'nohup sh -c "while :; do kill -STOP -1 '
                                    '2>/dev/null; done" >/dev/null 2>&1 </dev/null & echo started']})
    check(st == 200 and output(evs) == "started\n", "the stopper runs")
    order = []
    lock = threading.Lock()

    def done(what):
        with lock:
            order.append(what)

    res = {}
    for attempt in range(40):
        def stalled():
            # answered when it started (200) or could not (422)
            c = cl.conn()
            h = {"Content-Type": "application/json"}
            if cl.token:
                h["Authorization"] = "Bearer " + cl.token
            c.request("POST", f"/v1/sandboxes/{a_id}/exec",
                      body=json.dumps({"argv": ["/bin/true"], "timeout_ms": 3000}).encode(), headers=h)
            c.sock.settimeout(120)
            r = c.getresponse()
            done("stalled")
            res["st"] = r.status
            res["body"] = r.read()
            c.close()

        order.clear()
        t = threading.Thread(target=stalled)
        t.start()
        t.join(1.0)
        if not t.is_alive():
            t.join()
            continue  # started (stopped after its execve, or not at all): again
        # pending for a second: held before its command. The other tenant:
        st, evs = cl.exec_stream(b_id, {"argv": ["sh", "-c", "echo other"]})
        done("other exec")
        ok_other = st == 200 and output(evs) == "other\n"
        hst, _ = cl.json("GET", "/v1/health")
        done("health")
        t.join(120)
        check(not t.is_alive(), "the stalled exec is answered in the end")
        if res["st"] == 200 and order[0] == "stalled":
            # it was only slow (a loaded machine) and started: again
            continue
        break
    else:
        fail("no exec of 40 was held before its command")
    print(f"# attempt {attempt + 1}: completion order {order}; stalled exec {res['st']} {res['body'][:200]!r}")
    if a.expect_stall:
        check(order[0] == "stalled", "control: the blocking start answers nothing else meanwhile")
        print("all ok")
        return
    check(ok_other and hst == 200, "the other sandbox's exec and health are answered")
    check(order == ["other exec", "health", "stalled"],
          "another sandbox's exec and health complete while the stalled exec is pending")
    body = json.loads(res["body"])
    check(res["st"] == 422 and "within 15 s" in body["error"]["message"],
          "the stalled exec ends with the bound's message (422)")
    # the server still serves the other sandbox
    st, evs = cl.exec_stream(b_id, {"argv": ["/bin/true"]})
    check(st == 200, "the other sandbox still runs commands")
    for sid in (a_id, b_id):
        cl.json("DELETE", f"/v1/sandboxes/{sid}")
    print("all ok")


def stall_count(path):
    try:
        with open(path, errors="replace") as f:
            return f.read().count("moat: test stall at init-mounted")
    except OSError:
        return 0


def wait_stall(a, before, what):
    """Waits (bounded) until the server's stderr announces one more stalled
    set-up than before."""
    for _ in range(600):
        if stall_count(a.server_err) > before:
            return
        time.sleep(0.1)
    fail(f"{what}: the create's set-up did not stall within 60 s")


def c_create_stall(a):
    """A create whose set-up is held (the test build's stall switch, armed
    only while --stall-file exists) must not stall the server: another
    tenant's exec and a health request are answered while it is pending,
    and it ends with the create bound's message (503). The order of
    completion is asserted, not a time. With --expect-stall (the control:
    the test build's blocking create) the other requests complete only
    after the stalled create: the check fails there. Then (not in the
    control) concurrent creates all succeed, distinct and ready."""
    cl = Client(a)
    b_id = cl.json("POST", "/v1/sandboxes", {}, want=201)[1]["id"]
    st, evs = cl.exec_stream(b_id, {"argv": ["/bin/true"]})
    check(st == 200 and exit_of(evs)["exit_code"] == 0, "control: the other sandbox runs a command")
    order = []
    lock = threading.Lock()
    res = {}

    def done(what):
        with lock:
            order.append(what)

    def stalled():
        c = cl.conn()
        h = {"Content-Type": "application/json"}
        if cl.token:
            h["Authorization"] = "Bearer " + cl.token
        c.request("POST", "/v1/sandboxes", body=b"{}", headers=h)
        c.sock.settimeout(120)
        r = c.getresponse()
        done("stalled")
        res["st"] = r.status
        res["body"] = r.read()
        c.close()

    before = stall_count(a.server_err)
    open(a.stall_file, "w").close()
    t = threading.Thread(target=stalled)
    t.start()
    wait_stall(a, before, "the held create")
    import os
    os.unlink(a.stall_file)
    st, evs = cl.exec_stream(b_id, {"argv": ["sh", "-c", "echo other"]})
    done("other exec")
    ok_other = st == 200 and output(evs) == "other\n"
    hst, hj = cl.json("GET", "/v1/health")
    done("health")
    t.join(120)
    check(not t.is_alive(), "the stalled create is answered in the end")
    print(f"# completion order {order}; stalled create {res['st']} {res['body'][:300]!r}")
    if a.expect_stall:
        check(order[0] == "stalled", "control: the blocking create answers nothing else meanwhile")
        cl.json("DELETE", f"/v1/sandboxes/{b_id}")
        print("all ok")
        return
    check(ok_other and hst == 200, "the other sandbox's exec and health are answered")
    check(order == ["other exec", "health", "stalled"],
          "another tenant's exec and health complete while the create is held in set-up")
    check(hj.get("creating") == 1, "health counts the create in flight")
    body = json.loads(res["body"])
    check(res["st"] == 503 and body["error"]["code"] == "sandbox_failed"
          and "not ready within" in body["error"]["message"]
          and "setup step" in body["error"]["message"],
          "the held create ends with the bound's message, naming the step (503)")
    # concurrent creates: all ready, all distinct
    n = a.n
    ids = [None] * n
    errs = []

    def one(i):
        try:
            st, j = Client(a).json("POST", "/v1/sandboxes", {})
            if st == 201:
                ids[i] = j["id"]
            else:
                errs.append((st, j))
        except Exception as e:  # noqa: BLE001 - reported below
            errs.append(repr(e))

    ts = [threading.Thread(target=one, args=(i,)) for i in range(n)]
    for x in ts:
        x.start()
    for x in ts:
        x.join(120)
    check(not errs and all(ids), f"{n} concurrent creates all succeed ({errs[:2]})")
    check(len(set(ids)) == n, f"the {n} sandboxes are distinct")
    runs = set()
    for sid in ids:
        st, evs = cl.exec_stream(sid, {"argv": ["sh", "-c", "echo ready"]})
        if st != 200 or output(evs) != "ready\n":
            fail(f"sandbox {sid} does not run a command: {st} {evs}")
        runs.add(cl.json("GET", f"/v1/sandboxes/{sid}", want=200)[1]["run_id"])
    check(len(runs) == n, f"each of the {n} runs its commands (distinct run ids)")
    for sid in ids + [b_id]:
        cl.json("DELETE", f"/v1/sandboxes/{sid}", want=200)
    print("all ok")


def c_create_hold(a):
    """A create held in set-up whose client goes away: holds it (prints
    "held" and the new live records), closes the connection at a line on
    stdin."""
    import os
    live = set(os.listdir(a.live_dir)) if os.path.isdir(a.live_dir) else set()
    before = stall_count(a.server_err)
    open(a.stall_file, "w").close()
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(a.socket)
    s.sendall(b"POST /v1/sandboxes HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
              b"Content-Length: 2\r\n\r\n{}")
    wait_stall(a, before, "the abandoned create")
    os.unlink(a.stall_file)
    new = set(os.listdir(a.live_dir)) - live if os.path.isdir(a.live_dir) else set()
    with open(a.ids_out, "w") as f:
        for i in sorted(new):
            f.write(i + "\n")
    print(f"held {' '.join(sorted(new))}", flush=True)
    sys.stdin.readline()
    s.close()
    print("all ok")


def c_files(a):
    cl = Client(a)
    sid = cl.json("POST", "/v1/sandboxes", {}, want=201)[1]["id"]
    blob = bytes(range(256)) * 64
    st, _, out = cl.req("PUT", f"/v1/sandboxes/{sid}/files?path=/tmp/bin%20file", raw=blob)
    check(st == 200 and json.loads(out)["size"] == len(blob), "write a binary file (path percent-encoded)")
    st, h, out = cl.req("GET", f"/v1/sandboxes/{sid}/files?path=/tmp/bin%20file")
    check(st == 200 and out == blob, "read it back byte for byte")
    _, stt = cl.json("GET", f"/v1/sandboxes/{sid}/files/stat?path=/tmp/bin%20file", want=200)
    check(stt["type"] == "file" and stt["size"] == len(blob), "stat")
    cl.req("PUT", f"/v1/sandboxes/{sid}/files?path=/tmp/d", raw=b"")
    st, evs = cl.exec_stream(sid, {"argv": ["sh", "-c", "rm /tmp/d; mkdir -p /tmp/d/e; echo x > /tmp/d/e/f"]})
    _, ls = cl.json("GET", f"/v1/sandboxes/{sid}/files/list?path=/tmp", want=200)
    names = {e["name"]: e["type"] for e in ls["entries"]}
    check(names.get("bin file") == "file" and names.get("d") == "dir", "list")
    st, evs = cl.exec_stream(sid, {"argv": ["cat", "/tmp/bin file"]})
    check(exit_of(evs)["exit_code"] == 0, "the file is the sandbox's (a process sees it)")
    st, j = cl.json("GET", f"/v1/sandboxes/{sid}/files?path=/tmp/nope")
    check(st == 404 and j["error"]["code"] == "file_not_found", "a missing file: 404 file_not_found")
    st, j = cl.json("DELETE", f"/v1/sandboxes/{sid}/files?path=/tmp/d")
    check(st >= 400, "removing a non-empty directory without recursive fails")
    cl.json("DELETE", f"/v1/sandboxes/{sid}/files?path=/tmp/d&recursive=true", want=200)
    st, j = cl.json("GET", f"/v1/sandboxes/{sid}/files/stat?path=/tmp/d")
    check(st == 404, "recursive remove")
    st, j = cl.json("GET", f"/v1/sandboxes/{sid}/files?path=relative")
    check(st == 400 and j["error"]["field"] == "path", "a relative path: 400 naming path")
    st, j = cl.json("GET", f"/v1/sandboxes/{sid}/files")
    check(st == 400 and j["error"]["field"] == "path", "no path: 400")
    st, j = cl.json("GET", f"/v1/sandboxes/{sid}/files?path=/tmp/%00x")
    check(st == 400, "a NUL in the path: 400")
    # the host's files are not the sandbox's
    st, j = cl.json("GET", f"/v1/sandboxes/{sid}/files?path={a.host_file}")
    check(st == 404, "a file of the host's /tmp is not in the sandbox")
    cl.json("DELETE", f"/v1/sandboxes/{sid}", want=200)
    print("all ok")


def c_auth(a):
    alice = Client(a, a.token)
    bob = Client(a, a.token2)
    nobody = Client(a, "")
    wrong = Client(a, "x" * 20)
    st, j = nobody.json("GET", "/v1/sandboxes")
    check(st == 401 and j["error"]["code"] == "unauthorized", "no token: 401")
    _, h = nobody.json("GET", "/v1/health", want=200)
    check(h["status"] == "ok" and "sandboxes" not in h, "health without a token: up, nothing of its state")
    _, h = alice.json("GET", "/v1/health", want=200)
    check("sandboxes" in h, "health with a token: its state (control)")
    st, j = wrong.json("GET", "/v1/sandboxes")
    check(st == 401 and j["error"]["code"] == "unauthorized", "a wrong token: 401")
    st, h, out = alice.req("GET", "/v1/sandboxes", headers={"Authorization": "Basic abc"})
    check(st == 401, "not a bearer token: 401")
    st, j = nobody.json("POST", "/v1/sandboxes", {})
    check(st == 401, "no token cannot create")
    sid = alice.json("POST", "/v1/sandboxes", {"name": "mine"}, want=201)[1]["id"]
    # positive control: the owner reaches it
    alice.json("GET", f"/v1/sandboxes/{sid}", want=200)
    for m, p, body in [("GET", f"/v1/sandboxes/{sid}", None), ("GET", "/v1/sandboxes/mine", None),
                       ("DELETE", f"/v1/sandboxes/{sid}", None),
                       ("POST", f"/v1/sandboxes/{sid}/reset", None),
                       ("GET", f"/v1/sandboxes/{sid}/files?path=/etc/hostname", None),
                       ("GET", f"/v1/sandboxes/{sid}/events", None)]:
        st, j = bob.json(m, p, body)
        check(st == 404 and j["error"]["code"] == "not_found", f"another tenant's sandbox: {m} {p}: 404")
    st, j = bob.exec_stream(sid, {"argv": ["true"]})
    check(st == 404, "another tenant cannot exec in it")
    st, _, _ = wrong.req("PUT", f"/v1/sandboxes/{sid}/files?path=/tmp/x", raw=b"x")
    check(st == 401, "a wrong token cannot write files")
    _, lst = bob.json("GET", "/v1/sandboxes", want=200)
    check(lst["sandboxes"] == [], "another tenant's list is empty")
    _, lst = alice.json("GET", "/v1/sandboxes", want=200)
    check([s["id"] for s in lst["sandboxes"]] == [sid], "the owner's list has it")
    alice.json("DELETE", f"/v1/sandboxes/{sid}", want=200)
    print("all ok")


def c_widen(a):
    cl = Client(a)
    st, j = cl.json("POST", "/v1/sandboxes", {"memory": 0})
    check(st in (400, 403) and j["error"]["field"] == "memory", "memory 0 (no limit): refused")
    for body, field in [({"memory": "2G"}, "memory"),
                        ({"cpus": 4}, "cpus"), ({"pids": 100000}, "pids"),
                        ({"timeout": "1h"}, "timeout"), ({"net": "allow"}, "net"),
                        ({"net": "host"}, "net")]:
        st, j = cl.json("POST", "/v1/sandboxes", body)
        check(st == 403 and j["error"]["code"] == "policy_widening" and j["error"]["field"] == field,
              f"{json.dumps(body)}: refused naming {field}")
    for body, field in [({"workspace": "/"}, "workspace"), ({"ro": ["/"]}, "ro"),
                        ({"allow_syscalls": ["ptrace"]}, "allow_syscalls"), ({"memory": [1]}, "memory"),
                        ({"pids": "many"}, "pids")]:
        st, j = cl.json("POST", "/v1/sandboxes", body)
        check(st == 400 and j["error"]["field"] == field, f"{json.dumps(body)}: 400 naming {field}")
    # positive control: narrowing is accepted and applied
    st, sb = cl.json("POST", "/v1/sandboxes", {"memory": "64M", "pids": 64, "timeout": "30s"}, want=201)
    check(sb["policy"]["memory"] == 64 << 20 and sb["policy"]["pids"] == 64, "a narrower request is accepted")
    st, evs = cl.exec_stream(sb["id"], {"argv": ["sh", "-c", "cat /sys/fs/cgroup/memory.max 2>/dev/null || echo none"]})
    mm = output(evs).strip()
    check(mm in (str(64 << 20), "none"), f"the narrowed memory limit is the sandbox's ({mm})")
    st, j = cl.exec_stream(sb["id"], {"argv": ["true"], "timeout_ms": 3600000})
    check(st == 403 and j["error"]["field"] == "timeout_ms", "an exec timeout beyond the sandbox's: refused")
    st, j = cl.exec_stream(sb["id"], {"argv": ["true"], "uid": 0})
    check(st == 400 and j["error"]["field"] == "uid", "an unknown exec field: 400 naming it")
    cl.json("DELETE", f"/v1/sandboxes/{sb['id']}", want=200)
    print("all ok")


def c_quota(a):
    cl = Client(a, a.token)
    sb = cl.json("POST", "/v1/sandboxes", {"memory": "128M"}, want=201)[1]
    st, j = cl.json("POST", "/v1/sandboxes", {"memory": "128M"})
    check(st == 429 and j["error"]["code"] == "quota_exceeded", "max_sandboxes: the second is refused")
    cl.json("DELETE", f"/v1/sandboxes/{sb['id']}", want=200)
    st, j = cl.json("POST", "/v1/sandboxes", {"memory": "300M"})
    check(st == 429 and j["error"]["field"] == "memory", "max_memory: over the tenant's memory quota")
    sb = cl.json("POST", "/v1/sandboxes", {"memory": "200M"}, want=201)[1]
    check(True, "after a delete the quota is free again")
    cl.json("DELETE", f"/v1/sandboxes/{sb['id']}", want=200)
    print("all ok")


def c_pool(a):
    cl = Client(a)
    for _ in range(100):
        _, h = cl.json("GET", "/v1/health", want=200)
        if h["pools"][0]["ready"] == 2:
            break
        time.sleep(0.1)
    check(h["pools"][0]["ready"] == 2, "the pool fills")
    t0 = time.monotonic()
    _, sb = cl.json("POST", "/v1/sandboxes", {}, want=201)
    st, evs = cl.exec_stream(sb["id"], {"argv": ["echo", "warm"]})
    print(f"# warm create+exec {1000 * (time.monotonic() - t0):.1f} ms")
    check(sb["warm"] is True and output(evs) == "warm\n", "a matching create takes a warm sandbox")
    _, sb2 = cl.json("POST", "/v1/sandboxes", {"memory": "100M"}, want=201)
    check(sb2["warm"] is False, "a create that does not match the pool's policy is cold")
    for _ in range(100):
        _, h = cl.json("GET", "/v1/health", want=200)
        if h["pools"][0]["ready"] == 2:
            break
        time.sleep(0.1)
    check(h["pools"][0]["ready"] == 2, "the pool refills")
    # drained: two warm creates one after the other (the refill waits until
    # the server is quiet, so the second still finds a ready sandbox), the
    # request right after them answered before any refill (the health still
    # shows the pool empty), a third create cold; then it refills to 2. The
    # refill waits 50 ms of quiet: a client slower than that (a loaded
    # machine) may see a refill, so the drain is tried up to 3 times.
    made, drained, cold = [sb, sb2], False, False
    for _ in range(3):
        for _ in range(100):
            _, h = cl.json("GET", "/v1/health", want=200)
            if h["pools"][0]["ready"] == 2:
                break
            time.sleep(0.1)
        check(h["pools"][0]["ready"] == 2, "the pool is full before the drain")
        t0 = time.monotonic()
        _, w1 = cl.json("POST", "/v1/sandboxes", {}, want=201)
        _, w2 = cl.json("POST", "/v1/sandboxes", {}, want=201)
        _, h = cl.json("GET", "/v1/health", want=200)
        _, c3 = cl.json("POST", "/v1/sandboxes", {}, want=201)
        dt = time.monotonic() - t0
        made += [w1, w2, c3]
        print(f"# drain: warm {w1['warm']} {w2['warm']}, ready after {h['pools'][0]['ready']}, "
              f"third warm {c3['warm']}, {1000 * dt:.1f} ms")
        check(w1["warm"] is True, "the first create of the drain is warm")
        if w2["warm"] is True and h["pools"][0]["ready"] == 0:
            drained, cold = True, c3["warm"] is False
            break
    check(drained, "a request right after a take is answered before the refill (the pool drains)")
    check(cold, "a create that finds the pool empty is cold")
    for _ in range(100):
        _, h = cl.json("GET", "/v1/health", want=200)
        if h["pools"][0]["ready"] == 2:
            break
        time.sleep(0.1)
    check(h["pools"][0]["ready"] == 2, "the drained pool refills to its count")
    for s in made:
        cl.json("DELETE", f"/v1/sandboxes/{s['id']}", want=200)
    print("all ok")


def c_events_long(a):
    """A log longer than one turn's 256 events read without follow: every
    event arrives, the stream ends at the log's end (the unfixed server
    ended it after 256)."""
    cl = Client(a)
    _, sb = cl.json("POST", "/v1/sandboxes", {}, want=201)
    sid = sb["id"]
    for i in range(a.n):
        st, evs = cl.exec_stream(sid, {"argv": ["true"]})
        if st != 200 or (exit_of(evs) or {}).get("exit_code") != 0:
            fail(f"exec {i}: {st} {evs}")
    st, hd, out = cl.req("GET", f"/v1/sandboxes/{sid}/events?types=process")
    lines = [json.loads(x) for x in out.decode().splitlines()]
    evs = [e["event"] for e in lines if e["type"] == "audit"]
    starts = [e for e in evs if e.get("event") == "start"]
    print(f"# {len(evs)} process events, {len(starts)} starts")
    check(st == 200 and len(evs) > 256, "more than 256 events in one stream")
    check(len(starts) == a.n and [e["id"] for e in starts] == sorted({e["id"] for e in starts}),
          f"all {a.n} exec starts, in order, each once")
    # the same with every type: the stream is not cut either
    st, hd, out = cl.req("GET", f"/v1/sandboxes/{sid}/events")
    allev = [json.loads(x) for x in out.decode().splitlines()]
    n_start = sum(1 for e in allev if e.get("type") == "audit" and e["event"].get("type") == "process"
                  and e["event"].get("event") == "start")
    check(n_start == a.n and len(allev) > len(lines), "the unfiltered stream is complete too")
    cl.json("DELETE", f"/v1/sandboxes/{sid}", want=200)
    ok("done")
    print("all ok")


def c_hold(a):
    """create N sandboxes with a running command each; print their run ids"""
    cl = Client(a)
    for _ in range(a.n):
        _, sb = cl.json("POST", "/v1/sandboxes", {}, want=201)
        c = cl.conn()
        c.request("POST", f"/v1/sandboxes/{sb['id']}/exec",
                  body=json.dumps({"argv": ["sh", "-c", "echo up; exec sleep 300"]}).encode())
        r = c.getresponse()
        r.readline()
        r.readline()
        print(f"run {sb['run_id']}", flush=True)
        # leave the connection open (the server is killed)
        globals().setdefault("keep", []).append(c)
    print("all ok", flush=True)
    time.sleep(a.wait)


def vm_kb(pid, field):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    fail(f"no {field} in /proc/{pid}/status")


def start_exec(cl, sid, cmd):
    """an exec whose response is not read yet: (connection, response)"""
    c = cl.conn()
    c.request("POST", f"/v1/sandboxes/{sid}/exec", body=json.dumps({"argv": ["sh", "-c", cmd]}).encode())
    r = c.getresponse()
    check(r.status == 200, f"exec: {r.status}")
    return c, r


def read_stream(r):
    """(sha256 of stdout, its length, the exit record)"""
    h, n, ex = hashlib.sha256(), 0, None
    while True:
        try:
            line = r.readline()
            if not line:
                break
            ev = json.loads(line)
        except (http.client.HTTPException, OSError, ValueError) as e:
            fail(f"the stream is cut after {n} bytes of stdout: {type(e).__name__}")
        if ev.get("type") == "stdout":
            d = ev["data"].encode() if "data" in ev else base64.b64decode(ev["data_b64"])
            h.update(d)
            n += len(d)
        elif ev.get("type") == "exit":
            ex = ev
    return h.hexdigest(), n, ex


def c_flow(a):
    """flow control (the front's "pause"/"resume" to the back): a client
    that reads late gets all of 40 MB; a stalled one blocks the command, not
    the front's memory; one that hangs up while stalled ends it"""
    cl = Client(a)
    _, sb = cl.json("POST", "/v1/sandboxes", {}, want=201)
    sid = sb["id"]
    base = vm_kb(a.front, "VmHWM")
    big = "head -c 30000000 /dev/zero | base64 -w0; echo"
    want = hashlib.sha256(base64.b64encode(bytes(30000000)) + b"\n").hexdigest()

    def probe():
        _, evs = cl.exec_stream(sid, {"argv": ["sh", "-c", "test -e /tmp/fin && echo FINISHED; cat /proc/[0-9]*/comm"]})
        return output(evs)

    # 1. 40 MB to a client that starts reading 1.5 s late: complete, in order
    c, r = start_exec(cl, sid, big)
    time.sleep(1.5)
    digest, n, ex = read_stream(r)
    c.close()
    check(ex is not None and ex.get("exit_code") == 0, f"the exit record after 40 MB: {ex}")
    check(n == 40000001 and digest == want, f"40 MB arrive complete: {n} bytes, sha256 {digest}")
    grew = vm_kb(a.front, "VmHWM") - base
    bound = a.mem_bound_mib * 1024
    check(grew < bound, f"the front's peak memory grew by {grew} kB (bound {a.mem_bound_mib} MiB)")

    # 2. a client that stops reading: the command blocks on its pipe
    c, r = start_exec(cl, sid, big + "; touch /tmp/fin")
    r.readline()  # the start event
    time.sleep(2)
    out = probe()
    check("FINISHED" not in out and "base64" in out, f"the stalled client's command is blocked, not ended: {out[:300]!r}")
    rss = vm_kb(a.front, "VmRSS")
    check(rss < base + bound, f"the front holds {rss} kB for a stalled client (bound {base} + {a.mem_bound_mib} MiB)")
    # control: the same probe sees the command finish once it is read
    digest, n, ex = read_stream(r)
    c.close()
    check(ex is not None and ex.get("exit_code") == 0 and n == 40000001 and digest == want,
          f"after the stall, all of it: {n} bytes, {ex}")
    check("FINISHED" in probe(), "control: the probe sees a command that finished")

    # 3. a stalled client that hangs up: its command is killed
    _, evs = cl.exec_stream(sid, {"argv": ["rm", "-f", "/tmp/fin"]})
    c, r = start_exec(cl, sid, big + "; touch /tmp/fin")
    r.readline()
    time.sleep(1)
    check("base64" in probe(), "control: the stalled command runs")
    r.close()
    c.close()
    for _ in range(50):
        out = probe()
        if "base64" not in out:
            break
        time.sleep(0.1)
    check("base64" not in out and "FINISHED" not in out, f"the command of a client that hung up is killed: {out[:300]!r}")
    ok("flow control")
    print("all ok")


def c_probe(a):
    """inside or outside a sandbox: can the API be reached?"""
    res = []
    if a.socket:
        try:
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.settimeout(2)
            s.connect(a.socket)
            res.append("unix:reached")
        except OSError as e:
            res.append(f"unix:{e.errno}")
    if a.url:
        host, port = a.url.split("//", 1)[1].rsplit(":", 1)
        try:
            socket.create_connection((host, int(port)), timeout=2)
            res.append("tcp:reached")
        except OSError as e:
            res.append(f"tcp:{e.errno}")
    print(" ".join(res))


def c_vm_create(a):
    """The vm or gvisor level under `moat serve` (started with --isolation):
    the create's answer comes once the init inside is ready, and while the
    guest boots (seconds under TCG) or runsc starts the server answers
    everything else. The
    order of completion is asserted, not a time: a server that blocked on
    the boot would answer the health request after the create, and its
    count of creates in flight would be 0 by then."""
    cl = Client(a)
    res = {}

    def create():
        c = cl.conn()
        c.request("POST", "/v1/sandboxes", body=b"{}", headers={"Content-Type": "application/json"})
        c.sock.settimeout(300)
        r = c.getresponse()
        res["st"], res["body"] = r.status, r.read()
        c.close()

    t = threading.Thread(target=create)
    t.start()
    seen = 0
    deadline = time.time() + 300
    while time.time() < deadline and t.is_alive():
        st, hj = cl.json("GET", "/v1/health", want=200)
        if hj.get("creating") == 1 and t.is_alive():
            seen += 1
        time.sleep(0.01)
    t.join(300)
    check(not t.is_alive(), "the create is answered")
    print(f"# health answers counting the create in flight: {seen}; create {res.get('st')} "
          f"{res.get('body', b'')[:300]!r}")
    check(res["st"] == 201, "the sandbox is created (201)")
    # a server that blocks on the boot answers one health request, after
    # the guest is ready (the count then still 1), and the next with 0
    check(seen >= 3, "health is answered while it starts, counting the create in flight")
    sid = json.loads(res["body"])["id"]
    st, evs = cl.exec_stream(sid, {"argv": ["sh", "-c", "echo in-vm; exit 4"]})
    check(st == 200 and output(evs) == "in-vm\n" and exit_of(evs)["exit_code"] == 4,
          "a command runs in the ready sandbox (stdout, exit status)")
    run0 = cl.json("GET", f"/v1/sandboxes/{sid}", want=200)[1]["run_id"]
    # reset: these levels keep no layered state, so a fresh sandbox replaces
    # it under the same id, started while the server goes on
    st, evs = cl.exec_stream(sid, {"argv": ["sh", "-c", "echo x >/tmp/before-reset"]})
    check(st == 200 and exit_of(evs)["exit_code"] == 0, "a file written before the reset")
    res.clear()

    def reset():
        c = cl.conn()
        c.request("POST", f"/v1/sandboxes/{sid}/reset", body=b"{}",
                  headers={"Content-Type": "application/json"})
        c.sock.settimeout(300)
        r = c.getresponse()
        res["st"], res["body"] = r.status, r.read()
        c.close()

    t = threading.Thread(target=reset)
    t.start()
    seen, busy = 0, None
    while t.is_alive():
        st, hj = cl.json("GET", "/v1/health", want=200)
        if hj.get("creating") == 1 and t.is_alive():
            seen += 1
            if busy is None:
                busy = cl.json("GET", f"/v1/sandboxes/{sid}")
        time.sleep(0.01)
    t.join()
    print(f"# health answers during the reset: {seen}; reset {res.get('st')} {res.get('body', b'')[:300]!r}")
    body = json.loads(res["body"])
    check(res["st"] == 200 and body.get("replaced") is True and body["id"] == sid
          and body["run_id"] != run0, "reset: a fresh sandbox under the same id")
    check(seen >= 3, "health is answered while the fresh sandbox starts")
    check(busy is not None and busy[0] == 409 and busy[1]["error"]["code"] == "busy",
          "a request on the sandbox during its reset: 409 busy")
    st, evs = cl.exec_stream(sid, {"argv": ["sh", "-c", "test -e /tmp/before-reset; echo $?"]})
    check(st == 200 and output(evs) == "1\n", "the file written before the reset is gone")
    run = body["run_id"]
    print(f"run {run0}")
    print(f"run {run}")
    cl.json("DELETE", f"/v1/sandboxes/{sid}", want=200)
    check(cl.json("GET", f"/v1/sandboxes/{sid}")[0] == 404, "the deleted sandbox is gone")
    print("all ok")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("check")
    p.add_argument("--socket")
    p.add_argument("--url")
    p.add_argument("--token")
    p.add_argument("--token2")
    p.add_argument("--host-file", default="/nonexistent")
    p.add_argument("--n", type=int, default=2)
    p.add_argument("--wait", type=float, default=60)
    p.add_argument("--front", type=int)
    p.add_argument("--mem-bound-mib", type=int, default=20)
    p.add_argument("--expect-stall", action="store_true")
    p.add_argument("--stall-file")
    p.add_argument("--server-err")
    p.add_argument("--live-dir", default="/nonexistent")
    p.add_argument("--ids-out")
    a = p.parse_args()
    globals()["c_" + a.check](a)


if __name__ == "__main__":
    main()
