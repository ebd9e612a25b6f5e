#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Drives `moat mcp` with raw JSON-RPC lines (tests/integration/mcp.sh).

  mcp_raw.py protocol MOAT [OPTIONS...]   every method and tool, malformed input
  mcp_raw.py netallow MOAT [OPTIONS...]   a proxy denial reported with its rule
  mcp_raw.py hold MOAT DIR [OPTIONS...]   one run, then holds the server open until
                                          DIR/release exists (for /proc checks)

Exits 0 when every check held ("all ok N" last), 1 with the failed check.
"""
import json
import os
import select
import subprocess
import sys
import time

N = 0


def check(cond, what, got=None):
    global N
    if not cond:
        print("FAIL %s: %s" % (what, json.dumps(got)[:2000] if got is not None else ""))
        sys.exit(1)
    N += 1
    print("ok %s" % what)


class Server:
    def __init__(self, moat, opts, stderr=None):
        self.p = subprocess.Popen([moat, "mcp"] + opts, stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=stderr)
        self.buf = b""
        self.next_id = 100

    def send_raw(self, data):
        self.p.stdin.write(data)
        self.p.stdin.flush()

    def read_msg(self, timeout=60):
        end = time.time() + timeout
        while b"\n" not in self.buf:
            left = end - time.time()
            if left <= 0:
                raise SystemExit("FAIL no answer within %ds" % timeout)
            r, _, _ = select.select([self.p.stdout], [], [], left)
            if r:
                chunk = os.read(self.p.stdout.fileno(), 1 << 20)
                if not chunk:
                    raise SystemExit("FAIL the server closed its stdout (exit %s)" % self.p.poll())
                self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)

    def rpc(self, method, params=None, mid=None):
        if mid is None:
            self.next_id += 1
            mid = self.next_id
        m = {"jsonrpc": "2.0", "id": mid, "method": method}
        if params is not None:
            m["params"] = params
        self.send_raw((json.dumps(m) + "\n").encode())
        return self.read_msg()

    def call(self, name, args):
        return self.rpc("tools/call", {"name": name, "arguments": args})

    def alive(self, what):
        r = self.rpc("ping")
        check(r.get("result") == {}, "still answers after " + what, r)

    def close(self):
        self.p.stdin.close()
        return self.p.wait(timeout=60)


def err_code(r):
    return r.get("error", {}).get("code")


def sc(r):
    return r.get("result", {}).get("structuredContent", {})


def protocol(moat, opts):
    s = Server(moat, opts)
    # version negotiation: the client's revision if supported, else the newest
    r = s.rpc("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                             "clientInfo": {"name": "raw", "version": "1"}})
    check(r["result"]["protocolVersion"] == "2025-06-18", "initialize: the client's revision", r)
    check(r["result"]["serverInfo"]["name"] == "moat", "initialize: serverInfo", r)
    check("tools" in r["result"]["capabilities"], "initialize: tools capability", r)
    r = s.rpc("initialize", {"protocolVersion": "1999-01-01", "capabilities": {},
                             "clientInfo": {"name": "raw", "version": "1"}})
    check(r["result"]["protocolVersion"] == "2025-11-25", "initialize: unknown revision -> newest", r)
    s.send_raw(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
    r = s.rpc("ping")
    check(r.get("result") == {} and r["id"] == s.next_id, "ping (no answer to the notification)", r)
    r = s.rpc("ping", mid="a-string-id")
    check(r.get("id") == "a-string-id", "string ids are echoed", r)

    tools = s.rpc("tools/list")["result"]["tools"]
    names = sorted(t["name"] for t in tools)
    check(names == sorted(["run", "read_file", "write_file", "list_dir", "reset",
                           "create_sandbox", "destroy_sandbox"]), "tools/list", names)
    for t in tools:
        props = t["inputSchema"].get("properties", {})
        check(not any(k in props for k in ("net", "allow_host", "policy", "ro", "rw", "mount")),
              "tool %s has no policy field" % t["name"], props)

    # run: argv and shell, exit status, both streams
    r = s.call("run", {"argv": ["sh", "-c", "echo out; echo err >&2; exit 3"]})
    c = sc(r)
    check(c.get("exit_code") == 3 and c.get("stdout") == "out\n" and c.get("stderr") == "err\n",
          "run argv: stdout, stderr, exit_code", r)
    check(c.get("sandbox_started") is True and len(c.get("run_id", "")) > 0,
          "run: the default sandbox was created lazily", c)
    run_id = c["run_id"]
    r = s.call("run", {"shell": "cat; printf '%s' \"$PWD\"", "stdin": "from-stdin:", "cwd": "/tmp"})
    c = sc(r)
    check(c.get("stdout") == "from-stdin:/tmp" and c.get("exit_code") == 0, "run shell, stdin, cwd", r)
    check("sandbox_started" not in c and c.get("run_id") == run_id, "run: the same sandbox again", c)
    # output cap: 3 MiB of stdout is cut at 1 MiB, and says so
    r = s.call("run", {"shell": "head -c 3145728 /dev/zero | tr '\\0' a"})
    c = sc(r)
    check(len(c.get("stdout", "")) == 1 << 20 and c.get("stdout_truncated") is True,
          "run: stdout cut at 1 MiB, stdout_truncated", {k: c.get(k) for k in ("exit_code", "stdout_truncated")})
    r = s.call("run", {"argv": ["no-such-command-moat-test"]})
    check(r["result"]["isError"] is True and "exec" in sc(r).get("error", ""),
          "run: a missing command is a tool error", r)
    # files
    r = s.call("write_file", {"path": "/tmp/mcp-file", "content": "line one\nline two\n"})
    check(sc(r).get("written") is True, "write_file", r)
    r = s.call("read_file", {"path": "/tmp/mcp-file"})
    check(sc(r).get("content") == "line one\nline two\n" and sc(r).get("encoding") == "utf-8",
          "read_file", r)
    r = s.call("write_file", {"path": "/tmp/bin", "content": "AP8A/w==", "encoding": "base64"})
    r = s.call("read_file", {"path": "/tmp/bin"})
    check(sc(r).get("content") == "AP8A/w==" and sc(r).get("encoding") == "base64",
          "binary content round-trips as base64", r)
    r = s.call("list_dir", {"path": "/tmp"})
    ents = {e["name"]: e for e in sc(r).get("entries", [])}
    check("mcp-file" in ents and ents["mcp-file"]["type"] == "file" and ents["mcp-file"]["size"] == 18,
          "list_dir", r)
    r = s.call("read_file", {"path": "/tmp/no-such-file"})
    check(r["result"]["isError"] is True, "read_file of a missing file: a tool error", r)
    # a denied network destination: the narrow rule the operator could add
    r = s.call("run", {"argv": ["python3", "-c",
                                "import socket\ntry: socket.getaddrinfo('denied.example', 80)\nexcept Exception: pass"]})
    den = sc(r).get("denied", [])
    check(any("denied.example" in d.get("destination", "") and
              "--allow-host denied.example" in d.get("rule", "") for d in den),
          "run: a denied destination with its narrow rule", r)
    # several sandboxes
    r = s.call("create_sandbox", {})
    sb = sc(r).get("sandbox", "")
    check(sb.startswith("sb-") and sc(r).get("run_id") not in ("", run_id), "create_sandbox", r)
    r = s.call("run", {"shell": "cat /tmp/mcp-file 2>/dev/null || echo none", "sandbox": sb})
    check(sc(r).get("stdout") == "none\n", "another sandbox does not see the default's files", r)
    r = s.call("destroy_sandbox", {"sandbox": sb})
    check(sc(r).get("destroyed") is True and sc(r).get("log"), "destroy_sandbox", r)
    r = s.call("run", {"argv": ["true"], "sandbox": sb})
    check(r["result"]["isError"] is True and "no sandbox" in sc(r).get("error", ""),
          "a destroyed sandbox is gone", r)
    # reset: the default sandbox is destroyed, the next call starts afresh
    r = s.call("reset", {})
    c = sc(r)
    check(c.get("destroyed") is True and c.get("run_id") == run_id and c.get("log"), "reset", r)
    print("log %s %s" % (run_id, c.get("log")))
    r = s.call("read_file", {"path": "/tmp/mcp-file"})
    check(r["result"]["isError"] is True and sc(r).get("sandbox_started") is True,
          "after reset: a fresh sandbox without the old files", r)

    # notifications/cancelled: a run in progress is killed, no response for it
    t0 = time.time()
    s.send_raw((json.dumps({"jsonrpc": "2.0", "id": "slow", "method": "tools/call",
                            "params": {"name": "run", "arguments": {"argv": ["sleep", "2"]}}}) + "\n").encode())
    r = s.call("run", {"argv": ["echo", "queued"]})
    r2 = s.read_msg()
    check(r.get("id") == "slow" and sc(r2).get("stdout") == "queued\n" and time.time() - t0 >= 1.9,
          "control: without a cancel, the next call waits for the run", [r, r2])
    t0 = time.time()
    s.send_raw((json.dumps({"jsonrpc": "2.0", "id": "long", "method": "tools/call",
                            "params": {"name": "run", "arguments": {"argv": ["sleep", "30"]}}}) + "\n").encode())
    time.sleep(0.3)
    s.send_raw((json.dumps({"jsonrpc": "2.0", "method": "notifications/cancelled",
                            "params": {"requestId": "long", "reason": "test"}}) + "\n").encode())
    r = s.call("run", {"argv": ["echo", "after"]})
    check(r.get("id") != "long" and sc(r).get("stdout") == "after\n" and time.time() - t0 < 5,
          "cancelled: the run is killed, no response for it", {"r": r, "s": time.time() - t0})

    # malformed input: JSON-RPC errors, and the server goes on
    s.send_raw(b"this is not json\n")
    r = s.read_msg()
    check(err_code(r) == -32700 and r.get("id") is None, "not JSON: parse error", r)
    s.alive("not JSON")
    s.send_raw(b'{"jsonrpc":"2.0","id":1,"method":"ping"' + b"\n")
    check(err_code(s.read_msg()) == -32700, "truncated JSON: parse error")
    s.send_raw(b"[" + json.dumps({"jsonrpc": "2.0", "id": 5, "method": "ping"}).encode() + b"]\n")
    check(err_code(s.read_msg()) == -32600, "a batch: invalid request")
    s.send_raw(b'"a string"\n')
    check(err_code(s.read_msg()) == -32600, "not an object: invalid request")
    s.send_raw(b'{"jsonrpc":"1.0","id":7,"method":"ping"}\n')
    check(err_code(s.read_msg()) == -32600, "jsonrpc 1.0: invalid request")
    s.send_raw(b'{"jsonrpc":"2.0","id":{"x":1},"method":"ping"}\n')
    check(err_code(s.read_msg()) == -32600, "an object id: invalid request")
    s.send_raw(b'{"jsonrpc":"2.0","id":8,"method":"ping","extra":1}\n')
    check(err_code(s.read_msg()) == -32600, "an unknown member: invalid request")
    s.send_raw(b'{"jsonrpc":"2.0","id":9,"method":"ping","id":10}\n')
    check(err_code(s.read_msg()) == -32700, "a duplicate key: parse error")
    r = s.rpc("no/such/method")
    check(err_code(r) == -32601, "unknown method", r)
    r = s.rpc("tools/call", {"name": "no_such_tool", "arguments": {}})
    check(err_code(r) == -32602 and "no_such_tool" in r["error"]["message"], "unknown tool", r)
    r = s.call("run", {"argv": "echo hi"})
    check(err_code(r) == -32602 and "argv" in r["error"]["message"], "wrong type: argv a string", r)
    r = s.call("run", {"argv": ["echo", 5]})
    check(err_code(r) == -32602 and "argv[1]" in r["error"]["message"], "wrong type: argv[1] a number", r)
    r = s.call("run", {"argv": ["echo"], "shell": "echo"})
    check(err_code(r) == -32602, "argv and shell together", r)
    r = s.call("run", {"argv": ["echo", "a\u0000b"]})
    # \u0000 is refused by the parser itself (content with NUL bytes goes as base64)
    check(err_code(r) == -32700, "a NUL in a string: parse error", r)
    r = s.call("run", {"argv": ["curl", "http://x.test"], "allow_host": "x.test"})
    check(err_code(r) == -32602 and "allow_host" in r["error"]["message"] and
          "policy" in r["error"]["message"], "a policy field is refused with its name", r)
    r = s.call("run", {"argv": ["true"], "net": "allow"})
    check(err_code(r) == -32602 and "'net'" in r["error"]["message"], "net is refused with its name", r)
    r = s.call("run", {"argv": ["true"], "timeout_ms": 20000})
    check(r.get("result", {}).get("isError") is True and "timeout_ms" in sc(r).get("error", ""),
          "timeout_ms beyond the operator's --timeout is refused, the field named", r)
    r = s.call("run", {"argv": ["true"], "timeout_ms": "5"})
    check(err_code(r) == -32602 and "timeout_ms" in r["error"]["message"], "timeout_ms a string", r)
    r = s.call("read_file", {"path": "relative/path"})
    check(err_code(r) == -32602 and "absolute" in r["error"]["message"], "a relative path", r)
    r = s.call("read_file", {})
    check(err_code(r) == -32602 and "path" in r["error"]["message"], "a missing path", r)
    r = s.call("read_file", {"path": "/" + "a" * 5000})
    check(err_code(r) == -32602 and "path" in r["error"]["message"], "a path longer than 4096", r)
    r = s.call("run", {"argv": ["true"], "sandbox": "sb-x"})
    check(err_code(r) == -32602 and "sandbox" in r["error"]["message"], "a malformed sandbox id", r)
    r = s.rpc("tools/call", {"name": "run", "arguments": [1, 2]})
    check(err_code(r) == -32602, "arguments an array", r)
    r = s.rpc("tools/call", {"name": "run", "arguments": {}, "bogus": 1})
    check(err_code(r) == -32602 and "bogus" in r["error"]["message"], "unknown params field", r)
    r = s.call("run", {"argv": ["x"] * 300})
    check(err_code(r) == -32602 and "argv" in r["error"]["message"], "too many arguments", r)
    # oversized: write_file content over 1 MiB, a line over 8 MiB
    r = s.call("write_file", {"path": "/tmp/big", "content": "a" * ((1 << 20) + 1)})
    check(err_code(r) == -32602 and "content" in r["error"]["message"], "content over 1 MiB refused", r)
    r = s.call("write_file", {"path": "/tmp/big", "content": "a" * (1 << 20)})
    check(sc(r).get("written") is True, "content of exactly 1 MiB accepted", r)
    s.send_raw(b'{"jsonrpc":"2.0","id":77,"method":"ping","params":{"_meta":{"x":"' +
               b"a" * (9 << 20) + b'"}}}\n')
    r = s.read_msg()
    check(err_code(r) == -32600 and "larger" in r["error"]["message"], "a 9 MiB line refused", r)
    s.alive("a 9 MiB line")
    s.send_raw(b"\xff\xfe not utf-8\n")
    check(err_code(s.read_msg()) == -32700, "invalid UTF-8: parse error")
    s.alive("everything malformed")
    # the client's shutdown (stdin closed) while a run goes on: it is killed
    s.send_raw((json.dumps({"jsonrpc": "2.0", "id": "last", "method": "tools/call",
                            "params": {"name": "run", "arguments": {"argv": ["sleep", "30"]}}}) + "\n").encode())
    time.sleep(0.3)
    t0 = time.time()
    rc = s.close()
    check(rc == 0 and time.time() - t0 < 5, "the server exits 0 soon when stdin closes, even in a run",
          [rc, time.time() - t0])
    print("all ok %d" % N)


def netallow(moat, opts):
    """--net allow: the proxy's denial with its rule, in the run's result and
    in reset's totals (the request never leaves: the proxy refuses it)."""
    s = Server(moat, opts)
    s.rpc("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                         "clientInfo": {"name": "net", "version": "1"}})
    r = s.call("run", {"argv": ["curl", "-sS", "-m", "5", "http://denied.test/"]})
    den = sc(r).get("denied", [])
    check(any(d.get("destination") == "denied.test:80" and d.get("rule") == "--allow-host denied.test:80"
              for d in den), "run: the proxy's denial and the narrow rule", r)
    r = s.call("run", {"argv": ["true"]})
    check("denied" not in sc(r), "the next run reports only its own denials", r)
    r = s.call("reset", {})
    check(sc(r).get("net_denied") == 1 and any(d.get("rule") == "--allow-host denied.test:80"
                                               for d in sc(r).get("denied", [])),
          "reset: the sandbox's totals", r)
    check(s.close() == 0, "exit 0")
    print("all ok %d" % N)


def hold(moat, d, opts):
    with open(os.path.join(d, "server.err"), "wb") as err:
        s = Server(moat, opts, stderr=err)
        s.rpc("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                             "clientInfo": {"name": "hold", "version": "1"}})
        r = s.call("run", {"shell": "for f in 0 1 2; do readlink /proc/self/fd/$f; done"})
        with open(os.path.join(d, "sandbox.fds"), "w") as f:
            f.write(sc(r).get("stdout", ""))
        with open(os.path.join(d, "info"), "w") as f:
            f.write("server %d\n" % s.p.pid)
            f.write("to_server pipe:[%d]\n" % os.fstat(s.p.stdin.fileno()).st_ino)
            f.write("from_server pipe:[%d]\n" % os.fstat(s.p.stdout.fileno()).st_ino)
        end = time.time() + 60
        while not os.path.exists(os.path.join(d, "release")) and time.time() < end:
            time.sleep(0.05)
        s.alive("the /proc checks")
        print("rc %d" % s.close())


if __name__ == "__main__":
    if sys.argv[1] == "protocol":
        protocol(sys.argv[2], sys.argv[3:])
    elif sys.argv[1] == "netallow":
        netallow(sys.argv[2], sys.argv[3:])
    elif sys.argv[1] == "hold":
        hold(sys.argv[2], sys.argv[3], sys.argv[4:])
