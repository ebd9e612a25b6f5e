#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Writes a small OCI image for the tests (tests/integration/image.sh), nothing
pulled from a registry:

  mkimage.py OUT --format oci|oci-archive|docker-archive [--gzip]
             [--config JSON] [--corrupt N] LAYER...

Each LAYER is a directory (its tree, as a tar layer) or @JSON, a list of
entries written as they are (hostile layers):
  {"name": "../x", "type": "file|dir|symlink|hardlink|chr|fifo",
   "data": "...", "mode": 420, "target": "...", "uid": 0, "gid": 0,
   "xattrs": {"security.capability": "hex:0100000200200000..."}}
(a layer with xattrs is written in the pax format, each one a
SCHILY.xattr.NAME record as GNU tar and libarchive write them; "hex:" values
are raw bytes)
--config: the image config's "config" object (Env, Cmd, User, ...).
--corrupt N: after the digests are taken, one byte of layer N is changed.
--layer-type T: the layers' media type in the manifest (default: tar or tar+gzip).
--save-layers: each layer's tar also as OUT.N.tar (for the tests' controls).
"""
import argparse
import gzip
import hashlib
import io
import json
import os
import shutil
import sys
import tarfile


def tar_dir(path):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as t:
        for root, dirs, files in os.walk(path):
            dirs.sort()
            for n in sorted(dirs) + sorted(files):
                full = os.path.join(root, n)
                rel = os.path.relpath(full, path)
                ti = t.gettarinfo(full, arcname=rel)
                ti.uid = ti.gid = 0
                ti.uname = ti.gname = "root"
                ti.mtime = 1700000000
                if ti.isreg():
                    with open(full, "rb") as f:
                        t.addfile(ti, f)
                else:
                    t.addfile(ti)
    return buf.getvalue()


TYPES = {"file": tarfile.REGTYPE, "dir": tarfile.DIRTYPE, "symlink": tarfile.SYMTYPE,
         "hardlink": tarfile.LNKTYPE, "chr": tarfile.CHRTYPE, "fifo": tarfile.FIFOTYPE}


def xattr_value(v):
    raw = bytes.fromhex(v[4:]) if v.startswith("hex:") else v.encode()
    return raw.decode("utf-8", "surrogateescape")


def tar_entries(entries):
    buf = io.BytesIO()
    pax = any("xattrs" in e for e in entries)
    fmt = tarfile.PAX_FORMAT if pax else tarfile.GNU_FORMAT
    with tarfile.open(fileobj=buf, mode="w", format=fmt) as t:
        for e in entries:
            ti = tarfile.TarInfo(e["name"])
            ti.uid, ti.gid = e.get("uid", 0), e.get("gid", 0)
            for k, v in e.get("xattrs", {}).items():
                ti.pax_headers["SCHILY.xattr." + k] = xattr_value(v)
            ti.type = TYPES[e.get("type", "file")]
            ti.mode = e.get("mode", 0o755 if ti.type == tarfile.DIRTYPE else 0o644)
            ti.mtime = 1700000000
            ti.linkname = e.get("target", "")
            if ti.type == tarfile.CHRTYPE:
                ti.devmajor, ti.devminor = 1, 3
            data = e.get("data", "").encode()
            ti.size = len(data) if ti.type == tarfile.REGTYPE else 0
            t.addfile(ti, io.BytesIO(data) if ti.size else None)
    return buf.getvalue()


def sha(b):
    return "sha256:" + hashlib.sha256(b).hexdigest()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--format", default="oci", choices=["oci", "oci-archive", "docker-archive"])
    ap.add_argument("--gzip", action="store_true")
    ap.add_argument("--config", default="{}")
    ap.add_argument("--corrupt", type=int, default=-1)
    ap.add_argument("--layer-type")
    ap.add_argument("--save-layers", action="store_true")
    ap.add_argument("layers", nargs="+")
    a = ap.parse_args()

    tars = []
    for spec in a.layers:
        tars.append(tar_entries(json.loads(spec[1:])) if spec.startswith("@") else tar_dir(spec))
    config = {"architecture": "amd64", "os": "linux", "config": json.loads(a.config),
              "rootfs": {"type": "layers", "diff_ids": [sha(t) for t in tars]}}
    cfg = json.dumps(config, sort_keys=True).encode()
    if a.save_layers:
        for i, t in enumerate(tars):
            with open("%s.%d.tar" % (a.out, i), "wb") as f:
                f.write(t)
    blobs = [gzip.compress(t, mtime=0) if a.gzip else t for t in tars]
    digests = [sha(b) for b in blobs]
    if 0 <= a.corrupt < len(blobs):
        b = bytearray(blobs[a.corrupt])
        b[len(b) // 2] ^= 0x01
        blobs[a.corrupt] = bytes(b)

    stage = a.out + ".d" if a.format != "oci" else a.out
    shutil.rmtree(stage, ignore_errors=True)
    os.makedirs(stage)

    def put(name, data):
        p = os.path.join(stage, name)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "wb") as f:
            f.write(data)

    if a.format == "docker-archive":
        names = []
        for t, b in zip(tars, blobs):
            names.append(sha(t)[7:] + ".tar")
            put(names[-1], b)
        put(sha(cfg)[7:] + ".json", cfg)
        # podman's legacy directory per layer: layer.tar a symlink to the file
        for i, n in enumerate(names):
            legacy = os.path.join(stage, "%064x" % (i + 1))
            os.makedirs(legacy)
            os.symlink("../" + n, os.path.join(legacy, "layer.tar"))
            put(os.path.join(os.path.basename(legacy), "VERSION"), b"1.0")
        put("repositories", b"{}")
        put("manifest.json", json.dumps([{"Config": sha(cfg)[7:] + ".json",
                                          "RepoTags": ["localhost/moat-test:latest"],
                                          "Layers": names}]).encode())
    else:
        lt = a.layer_type or "application/vnd.oci.image.layer.v1.tar" + ("+gzip" if a.gzip else "")
        manifest = {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
                    "config": {"mediaType": "application/vnd.oci.image.config.v1+json",
                               "digest": sha(cfg), "size": len(cfg)},
                    "layers": [{"mediaType": lt, "digest": d, "size": len(b)}
                               for d, b in zip(digests, blobs)]}
        man = json.dumps(manifest, sort_keys=True).encode()
        for d, b in zip(digests, blobs):
            put("blobs/sha256/" + d[7:], b)
        put("blobs/sha256/" + sha(cfg)[7:], cfg)
        put("blobs/sha256/" + sha(man)[7:], man)
        put("oci-layout", b'{"imageLayoutVersion": "1.0.0"}')
        put("index.json", json.dumps({"schemaVersion": 2, "manifests": [
            {"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": sha(man),
             "size": len(man),
             "annotations": {"org.opencontainers.image.ref.name": "moat-test"}}]}).encode())
    if a.format != "oci":
        with tarfile.open(a.out, "w") as t:
            for n in sorted(os.listdir(stage)):
                t.add(os.path.join(stage, n), arcname=n)
        shutil.rmtree(stage)
    print(sha(man) if a.format != "docker-archive" else sha(cfg))


if __name__ == "__main__":
    sys.exit(main())
