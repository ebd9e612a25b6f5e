#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Checks `moat serve` against docs/openapi.json (tests/integration/serve.sh):
every route of the implementation's table (src/api/serve_route.c) is in the
document and every operation of the document is in the table; a request to
every operation; each response's status must be one the operation documents
and its body must match the schema of that status and content type (a small
validator of the JSON Schema subset the document uses: $ref, type, enum,
properties, required, additionalProperties, items, minItems, maxLength).
Usage: openapi_check.py OPENAPI.json SOCKET serve_route.c"""
import json
import re
import sys

sys.path.insert(0, __import__("os").path.dirname(__file__))
import serve_client as sc  # noqa: E402

doc = json.load(open(sys.argv[1]))
SOCK = sys.argv[2]
ROUTES = sys.argv[3]
covered = set()
problems = []


def resolve(s):
    while "$ref" in s:
        name = s["$ref"].rsplit("/", 1)[1]
        s = doc["components"]["schemas"][name]
    return s


TYPES = {"object": dict, "array": list, "string": str, "boolean": bool, "null": type(None)}


def type_ok(v, t):
    if t == "integer":
        return isinstance(v, int) and not isinstance(v, bool)
    if t == "number":
        return isinstance(v, (int, float)) and not isinstance(v, bool)
    return isinstance(v, TYPES[t])


def validate(v, s, where):
    s = resolve(s)
    errs = []
    if "type" in s:
        ts = s["type"] if isinstance(s["type"], list) else [s["type"]]
        if not any(type_ok(v, t) for t in ts):
            return [f"{where}: {json.dumps(v)[:80]} is not {ts}"]
    if "enum" in s and v not in s["enum"]:
        errs.append(f"{where}: {v!r} not in {s['enum']}")
    if isinstance(v, str) and "maxLength" in s and len(v) > s["maxLength"]:
        errs.append(f"{where}: longer than {s['maxLength']}")
    if isinstance(v, dict):
        for r in s.get("required", []):
            if r not in v:
                errs.append(f"{where}: required {r} missing")
        props = s.get("properties", {})
        for k, x in v.items():
            if k in props:
                errs += validate(x, props[k], f"{where}.{k}")
            elif s.get("additionalProperties") is False:
                errs.append(f"{where}: {k} is not in the schema")
            elif isinstance(s.get("additionalProperties"), dict):
                errs += validate(x, s["additionalProperties"], f"{where}.{k}")
    if isinstance(v, list):
        if len(v) < s.get("minItems", 0):
            errs.append(f"{where}: fewer than {s['minItems']} items")
        for i, x in enumerate(v):
            errs += validate(x, s.get("items", {}), f"{where}[{i}]")
    return errs


def template_of(path):
    """the document's path template of a concrete path"""
    p = path.split("?", 1)[0]
    for t in doc["paths"]:
        rx = "^" + re.sub(r"\{[^}]+\}", "[^/]+", t) + "$"
        if re.match(rx, p):
            return t
    return None


def call(cl, method, path, body=None, raw=None, want=None):
    st, hd, out = cl.req(method, path, body, raw)
    t = template_of(path)
    if t is None:
        problems.append(f"{method} {path}: not in the document")
        return st, out
    o = doc["paths"][t].get(method.lower())
    if o is None:
        problems.append(f"{method} {t}: not in the document")
        return st, out
    covered.add((method, t))
    r = o["responses"].get(str(st))
    if r is None:
        problems.append(f"{method} {t}: status {st} is not documented: {out[:200]!r}")
        return st, out
    ctype = hd.get("Content-Type", "").split(";")[0]
    content = r.get("content", {})
    if ctype not in content:
        problems.append(f"{method} {t} {st}: content type {ctype} is not documented ({list(content)})")
        return st, out
    schema = content[ctype].get("schema", {})
    if ctype == "application/json":
        errs = validate(json.loads(out), schema, f"{method} {t} {st}")
    elif ctype == "application/x-ndjson":
        errs = []
        for i, line in enumerate(out.decode().splitlines()):
            errs += validate(json.loads(line), schema, f"{method} {t} {st} line {i + 1}")
    else:
        errs = []
    problems.extend(errs)
    if want is not None and st != want:
        problems.append(f"{method} {path}: want {want}, got {st}: {out[:200]!r}")
    print(f"ok {method} {path} -> {st}")
    return st, out


def main():
    # the validator can fail (control): objects that break the schemas
    E = {"$ref": "#/components/schemas/Error"}
    for bad in ({"error": {"message": "x"}}, {"error": {"code": "nope", "message": "x"}},
                {"error": {"code": "not_found", "message": 1}}, {"error": {"code": "not_found", "message": "", "x": 1}}):
        if not validate(bad, E, "control"):
            problems.append(f"control: the validator accepts {bad}")
    # the implementation's routes and the document's operations: the same
    src = open(ROUTES).read()
    table = set(re.findall(r'\{"(GET|POST|PUT|DELETE)", "(/v1[^"]*)"', src))
    ops = {(m.upper(), p) for p, item in doc["paths"].items() for m in item if m in ("get", "post", "put", "delete")}
    for r in sorted(table - ops):
        problems.append(f"route {r} is not in the document")
    for r in sorted(ops - table):
        problems.append(f"operation {r} is not in the route table")

    class A:
        socket = SOCK
        url = None
        token = None

    cl = sc.Client(A)
    call(cl, "GET", "/v1/health", want=200)
    call(cl, "GET", "/v1/version", want=200)
    st, out = call(cl, "POST", "/v1/sandboxes", {"name": "oa"}, want=201)
    sid = json.loads(out)["id"]
    call(cl, "POST", "/v1/sandboxes", {"name": "oa"}, want=409)
    call(cl, "POST", "/v1/sandboxes", {"memory": "2G"}, want=403)
    call(cl, "POST", "/v1/sandboxes", {"nope": 1}, want=400)
    call(cl, "GET", "/v1/sandboxes", want=200)
    call(cl, "GET", f"/v1/sandboxes/{sid}", want=200)
    call(cl, "GET", "/v1/sandboxes/sb-0000000000000000", want=404)
    call(cl, "POST", f"/v1/sandboxes/{sid}/exec", {"argv": ["sh", "-c", "echo out; printf '\\377' >&2; exit 2"]}, want=200)
    call(cl, "POST", f"/v1/sandboxes/{sid}/exec", {"argv": ["no-such-cmd"]}, want=422)
    call(cl, "POST", f"/v1/sandboxes/{sid}/exec", {"argv": []}, want=400)
    call(cl, "POST", f"/v1/sandboxes/{sid}/exec", {"argv": ["true"], "timeout_ms": 10 ** 9}, want=400)
    call(cl, "PUT", f"/v1/sandboxes/{sid}/files?path=/tmp/f", raw=b"abc", want=200)
    call(cl, "PUT", f"/v1/sandboxes/{sid}/files?path=/nonexistent-dir/f", raw=b"abc")
    call(cl, "GET", f"/v1/sandboxes/{sid}/files?path=/tmp/f", want=200)
    call(cl, "GET", f"/v1/sandboxes/{sid}/files?path=/tmp/none", want=404)
    call(cl, "GET", f"/v1/sandboxes/{sid}/files?path=rel", want=400)
    call(cl, "GET", f"/v1/sandboxes/{sid}/files/stat?path=/tmp/f", want=200)
    call(cl, "GET", f"/v1/sandboxes/{sid}/files/list?path=/tmp", want=200)
    call(cl, "GET", f"/v1/sandboxes/{sid}/files/list?path=/tmp/f")
    call(cl, "DELETE", f"/v1/sandboxes/{sid}/files?path=/tmp/f", want=200)
    call(cl, "POST", f"/v1/sandboxes/{sid}/snapshots", {"name": "s1"}, want=201)
    call(cl, "POST", f"/v1/sandboxes/{sid}/snapshots", {"name": "s1"}, want=409)
    call(cl, "POST", f"/v1/sandboxes/{sid}/snapshots", {"name": 7}, want=400)
    call(cl, "GET", f"/v1/sandboxes/{sid}/snapshots", want=200)
    call(cl, "POST", f"/v1/sandboxes/{sid}/restore", {"snapshot": "s1"}, want=200)
    call(cl, "POST", f"/v1/sandboxes/{sid}/restore", {"snapshot": "none"}, want=404)
    call(cl, "DELETE", f"/v1/sandboxes/{sid}/snapshots/s1", want=200)
    call(cl, "DELETE", f"/v1/sandboxes/{sid}/snapshots/s1", want=404)
    call(cl, "POST", f"/v1/sandboxes/{sid}/restore", {}, want=400)
    call(cl, "GET", f"/v1/sandboxes/{sid}/events", want=200)
    call(cl, "GET", f"/v1/sandboxes/{sid}/events?types=process&denied=false", want=200)
    call(cl, "GET", f"/v1/sandboxes/{sid}/events?follow=maybe", want=400)
    call(cl, "POST", f"/v1/sandboxes/{sid}/reset", want=200)
    call(cl, "DELETE", f"/v1/sandboxes/{sid}", want=200)
    call(cl, "DELETE", f"/v1/sandboxes/{sid}", want=404)
    for m, p in sorted(ops - covered):
        problems.append(f"operation {m} {p} was not exercised")
    for p in problems:
        print("FAIL " + p)
    if problems:
        sys.exit(1)
    print(f"all ok ({len(covered)} operations)")


main()
