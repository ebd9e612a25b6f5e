#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""A local npm registry mirror for the tests (risk.sh): one pinned tree.

  npm_mirror.py fetch LOCK DIR
      Reads a package-lock.json (v3) and, with curl from the npm registry
      only, fetches every package's tarball and its abbreviated registry
      document (packument). Each tarball's sha512 must be the lock's
      integrity, and the packument's dist.integrity the same; the packument
      is reduced to the versions the lock needs (dist-tags.latest: the
      highest of them). Written into DIR.tmp, then renamed to DIR: a cache
      is whole or absent.
  npm_mirror.py serve DIR ADDR NAME
      Serves DIR on ADDR (port chosen by the kernel, printed as
      "port N" on stdout) as the registry NAME: GET /PKG is the packument
      with every tarball URL rewritten to http://NAME:PORT/..., GET
      /PKG/-/FILE.tgz the tarball. Anything else is 404. One line per
      request on stderr ("GET PATH STATUS").
"""
import base64
import hashlib
import http.server
import json
import os
import shutil
import subprocess
import sys
import urllib.parse

REGISTRY = "https://registry.npmjs.org/"
ABBREV = "application/vnd.npm.install-v1+json"


def curl(url, dest, accept=None):
    cmd = ["curl", "-sSfL", "--retry", "2", "-m", "60", "-o", dest]
    if accept:
        cmd += ["-H", "Accept: " + accept]
    subprocess.run(cmd + [url], check=True)


def sri_sha512(path):
    h = hashlib.sha512()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 16), b""):
            h.update(chunk)
    return "sha512-" + base64.b64encode(h.digest()).decode()


def vkey(v):
    # the lock's versions are plain x.y.z here; a pre-release sorts lower
    core = v.split("-", 1)[0].split("+", 1)[0]
    return tuple(int(p) for p in core.split(".")), "-" not in v


def fetch(lock_path, out):
    try:
        fetch_into(lock_path, out)
    except BaseException:
        shutil.rmtree(out + ".tmp", ignore_errors=True)
        raise


def fetch_into(lock_path, out):
    with open(lock_path) as f:
        lock = json.load(f)
    want = {}  # name -> {version: (resolved, integrity)}
    for key, ent in lock.get("packages", {}).items():
        if not key:
            continue
        name = ent.get("name") or key.rsplit("node_modules/", 1)[1]
        integ = ent.get("integrity")
        if not integ or ent.get("resolved", REGISTRY)[: len(REGISTRY)] != REGISTRY:
            sys.exit("lock entry %s: no integrity, or not from %s" % (key, REGISTRY))
        want.setdefault(name, {})[ent["version"]] = integ
    tmp = out + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp + "/pkg")
    for name, versions in sorted(want.items()):
        qname = urllib.parse.quote(name, safe="@")
        raw = tmp + "/pkg/" + qname + ".full"
        curl(REGISTRY + qname, raw, ABBREV)
        with open(raw) as f:
            doc = json.load(f)
        os.unlink(raw)
        kept = {}
        for v, integ in versions.items():
            meta = doc.get("versions", {}).get(v)
            if meta is None:
                sys.exit("%s@%s: not in the registry's document" % (name, v))
            if meta.get("dist", {}).get("integrity") != integ:
                sys.exit("%s@%s: the registry's integrity differs from the lock's" % (name, v))
            url = meta["dist"].get("tarball", "")
            if not url.startswith(REGISTRY):
                sys.exit("%s@%s: tarball %s is not on %s" % (name, v, url, REGISTRY))
            rel = url[len(REGISTRY):]
            dest = tmp + "/tar/" + rel
            os.makedirs(os.path.dirname(dest), exist_ok=True)
            curl(url, dest)
            got = sri_sha512(dest)
            if got != integ:
                sys.exit("%s: sha512 %s, the lock says %s" % (url, got, integ))
            kept[v] = meta
        latest = max(kept, key=vkey)
        small = {"name": name, "dist-tags": {"latest": latest}, "versions": kept}
        if "modified" in doc:
            small["modified"] = doc["modified"]
        with open(tmp + "/pkg/" + qname + ".json", "w") as f:
            json.dump(small, f, sort_keys=True)
    with open(tmp + "/complete", "w") as f:
        f.write("%d packages\n" % len(want))
    shutil.rmtree(out, ignore_errors=True)
    os.rename(tmp, out)


class Mirror(http.server.BaseHTTPRequestHandler):
    root = ""
    base = ""

    def log_message(self, fmt, *args):
        pass

    def reply(self, status, body=b"", ctype="application/json"):
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)
        sys.stderr.write("%s %s %d\n" % (self.command, self.path, status))
        sys.stderr.flush()

    def do_GET(self):
        path = urllib.parse.urlsplit(self.path).path
        name = urllib.parse.unquote(path.lstrip("/"))
        if ".." in name.split("/") or not name:
            return self.reply(404)
        if "/-/" in name and name.endswith(".tgz"):
            f = os.path.join(self.root, "tar", name)
            if os.path.isfile(f):
                with open(f, "rb") as fh:
                    return self.reply(200, fh.read(), "application/octet-stream")
            return self.reply(404)
        f = os.path.join(self.root, "pkg", urllib.parse.quote(name, safe="@") + ".json")
        if not os.path.isfile(f):
            return self.reply(404, b'{"error":"Not found"}')
        with open(f) as fh:
            doc = json.load(fh)
        for meta in doc["versions"].values():
            meta["dist"]["tarball"] = meta["dist"]["tarball"].replace(REGISTRY, self.base)
        return self.reply(200, json.dumps(doc).encode())

    do_HEAD = do_GET


def serve(root, addr, name):
    srv = http.server.ThreadingHTTPServer((addr, 0), Mirror)
    port = srv.server_address[1]
    Mirror.root = root
    Mirror.base = "http://%s:%d/" % (name, port)
    print("port %d" % port, flush=True)
    srv.serve_forever()


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "fetch":
        fetch(sys.argv[2], sys.argv[3])
    elif len(sys.argv) == 5 and sys.argv[1] == "serve":
        serve(sys.argv[2], sys.argv[3], sys.argv[4])
    else:
        sys.exit(__doc__)
