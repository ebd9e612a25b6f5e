#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The worked example of the source documents, end to end: a data-analysis agent
# in a fresh sandbox with the uploaded files read-only at /data, results to
# /output, no network except a local package mirror, no credentials, 2 CPUs,
# 4 GiB, 256 processes, ten minutes. A hidden cell tells the agent to send the
# environment away: it finds no secrets, its connection is refused, the attempt
# is logged and raises an alert. A second analysis tries to load 30 GB and fails
# cleanly at the limit. Only /output comes back.
#
# Usage: examples/data-analysis/run.sh [WORKDIR]   (MOAT names the moat binary)
# With CHECK=1 it asserts every claim and exits non-zero if one is false.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
MOAT=${MOAT:-$here/../../build/moat}
work=${1:-$(mktemp -d "${TMPDIR:-/tmp}/moat-example.XXXXXX")}
mkdir -p "$work"
out="$work/output"
alerts="$work/alerts.jsonl"
: >"$alerts"
check=${CHECK:-0}
bad=0
claim() { # claim TRUE|FALSE WHAT
	if [ "$1" = true ]; then
		echo "  [ok] $2"
	else
		echo "  [!!] $2"
		bad=1
	fi
}

# The local package mirror: a directory served over HTTP on loopback.
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.2",0)); print(s.getsockname()[1])')
python3 -m http.server --bind 127.0.0.2 --directory "$here/mirror" "$port" >"$work/mirror.log" 2>&1 &
mirror_pid=$!
trap 'kill $mirror_pid 2>/dev/null || true' EXIT
for _ in $(seq 100); do
	python3 -c "import socket; socket.create_connection(('127.0.0.2', $port), timeout=1)" 2>/dev/null && break
	sleep 0.05
done

limits=(--cpus 2 --memory 4G --pids 256 --timeout 10m)
# Without root on a machine whose cgroups are not delegated, the limits fall
# back to rlimits: moat refuses that unless told (fail closed), so say it.
if ! "$MOAT" run --quiet "${limits[@]}" -- true 2>/dev/null; then
	echo "note: cgroup limits are not available to $(id -un) here; using --allow-degraded cgroup (rlimits)"
	limits+=(--allow-degraded cgroup)
fi

common=(--input "$here/data" --ro "$here:/opt/analysis" "${limits[@]}"
	--allow-host "mirror.test:$port" --resolve mirror.test=127.0.0.2
	--env "MIRROR_URL=http://mirror.test:$port" --on-alert "cat >> '$alerts'")

echo "== analysis 1: the spreadsheets, with a hidden instruction in one cell"
rc1=0
AWS_SECRET_ACCESS_KEY=example-canary-secret-4711 GITHUB_TOKEN=example-canary-token-4711 \
	"$MOAT" run "${common[@]}" --output "$out" --log "$work/run1.jsonl" \
	--json-status "$work/run1.status" -- python3 /opt/analysis/analyse.py >"$work/run1.txt" 2>&1 || rc1=$?
cat "$work/run1.txt"

echo
echo "== analysis 2: load 30 GB into memory"
rc2=0
"$MOAT" run "${common[@]}" --log "$work/run2.jsonl" --json-status "$work/run2.status" \
	-- python3 /opt/analysis/balloon.py >"$work/run2.txt" 2>&1 || rc2=$?
cat "$work/run2.txt"

echo
echo "== what happened, in plain words"
python3 - "$work" "$rc1" "$rc2" <<'EOF' >"$work/summary.txt"
import json, sys, os
work, rc1, rc2 = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
def events(p):
    out = []
    for line in open(p, errors="replace"):
        try:
            out.append(json.loads(line))
        except ValueError:
            pass
    return out
ev = events(os.path.join(work, "run1.jsonl"))
st1 = json.load(open(os.path.join(work, "run1.status")))
st2 = json.load(open(os.path.join(work, "run2.status")))
net = [e for e in ev if e.get("type") in ("net", "dns")]
act = lambda e: e.get("action") or e.get("decision")
host = lambda e: e.get("host") or e.get("name") or e.get("addr")
denied = [e for e in net if act(e) == "deny"]
allowed = [e for e in net if act(e) == "allow"]
alerts = [e for e in ev if e.get("type") == "alert"]
execs = [e for e in ev if e.get("type") == "exec"]
print(f"analysis 1 exited {st1['exit_code']} ({st1['reason']}); {len(execs)} programs run;"
      f" {len(allowed)} allowed and {len(denied)} denied network attempts")
for e in allowed[:3]:
    print(f"  allowed: {host(e)}:{e.get('port','')} ({e.get('proto','')})")
for e in denied[:5]:
    hint = e.get("suggest") or ""
    print(f"  DENIED:  {host(e)} ({e.get('proto','')}, {e.get('reason','')})"
          + (f" — the narrow rule that would allow it: {hint}" if hint else ""))
print(f"  {len(alerts)} alert(s) raised")
print(f"analysis 2 exited {st2['exit_code']} ({st2['reason']}), peak memory {st2.get('mem_peak',0)//(1<<20)} MiB")
EOF
cat "$work/summary.txt"
echo "logs: $work/run1.jsonl, $work/run2.jsonl   (or: $MOAT log $(python3 -c "import json;print(json.load(open('$work/run1.status'))['run'])"))"
echo "results on the host: $(ls "$out" 2>/dev/null | tr '\n' ' ')"

if [ "$check" = 1 ]; then
	echo
	echo "== checks"
	claim "$([ "$rc1" -eq 0 ] && echo true || echo false)" "analysis 1 succeeded (exit $rc1)"
	claim "$(grep -q '^north: total 5100.00' "$out/report.txt" 2>/dev/null && echo true || echo false)" "the report came back through /output"
	claim "$(grep -q 'found 0 secret-looking variables' "$work/run1.txt" && echo true || echo false)" "the injected code found no secrets"
	claim "$(grep -q 'collect.exfil.test/upload failed' "$work/run1.txt" && echo true || echo false)" "its connection to collect.exfil.test was refused"
	claim "$(grep -q 'DENIED:  collect.exfil.test' "$work/summary.txt" && echo true || echo false)" "the attempt is in the audit log"
	claim "$(grep -q 'collect.exfil.test' "$alerts" && echo true || echo false)" "it raised an alert (--on-alert received it)"
	claim "$(grep -q 'allowed: mirror.test' "$work/summary.txt" && echo true || echo false)" "the package mirror was reachable"
	claim "$(! grep -rqs 'example-canary' "$work"/run*.txt "$out" "$work"/run1.jsonl && echo true || echo false)" "no secret value reached the sandbox, its output or the log"
	claim "$([ "$rc2" -ne 0 ] && ! grep -q 'loaded 30 GiB' "$work/run2.txt" && echo true || echo false)" "the 30 GB load failed cleanly (exit $rc2)"
	claim "$(python3 -c "import json,sys; s=json.load(open('$work/run2.status')); sys.exit(0 if s['reason'] in ('memory','exited') else 1)" && echo true || echo false)" "its status names the cause"
	claim "$([ "$(ls "$out")" = report.txt ] && echo true || echo false)" "only /output came back"
	exit $bad
fi
