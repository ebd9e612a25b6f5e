#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# History and retention (issue 18): moat runs, moat log --last, the runs
# directory pruned as runs start, moat ps --json, moat apply of a refused
# path, moat policy import --from srt. As root and as the unprivileged user.
# Every test has a runs directory of its own: the unprivileged user's through
# XDG_STATE_HOME; root's (/var/lib/moat/runs, fixed) is a tmpfs in a mount
# namespace of this script's own, so no other run on the machine is touched.
if [ "$(id -u)" -eq 0 ] && [ -z "${MOAT_HISTORY_NS:-}" ]; then
	exec env MOAT_HISTORY_NS=1 unshare -m --propagation private -- \
		sh -c 'mkdir -p /var/lib/moat/runs && mount -t tmpfs -o mode=0700 moat-t /var/lib/moat/runs && exec bash "$0"' "$0"
fi
# shellcheck source=tests/lib/tap.sh
. "$(dirname "$0")/../lib/tap.sh"

export XDG_STATE_HOME="$T_OUT/state"
if is_root; then
	RUNS=/var/lib/moat/runs
else
	RUNS=$XDG_STATE_HOME/moat/runs
fi

newest() { ls -t "$RUNS" | head -1; }

t_runs_lists_recent() {
	local ws="$T_OUT/ws" out id rc=0
	mkdir -p "$ws"
	"$MOAT" run --quiet -- /bin/sh -c 'exit 3' || rc=$?
	assert_eq 3 "$rc"
	"$MOAT" run --quiet --workspace "$ws" -- /bin/sh -c 'echo x > .bashrc; echo y > ok.txt' ||
		fail "run with a workspace"
	out=$("$MOAT" runs)
	assert_contains "$out" "RUN"
	assert_contains "$out" "COMMAND"
	# newest first: the workspace run, 1 held (.bashrc), exit 0
	id=$(newest)
	echo "$out" | sed -n 2p | grep -E "^$id +[0-9-]+ [0-9:]+ +0 +1 +/bin/sh -c echo x > .bashrc" >/dev/null ||
		fail "first row: $(echo "$out" | sed -n 2p) (want $id, exit 0, 1 held)"
	echo "$out" | sed -n 3p | grep -E " +3 +0 +/bin/sh -c exit 3$" >/dev/null ||
		fail "second row: $(echo "$out" | sed -n 3p)"
	out=$("$MOAT" runs -n 1 --json)
	python3 -c '
import json, sys
d = json.load(sys.stdin)
assert len(d) == 1, d
r = d[0]
assert r["id"] == sys.argv[1] and r["exit_code"] == 0 and r["files_held"] == 1, r
assert r["argv"][0] == "/bin/sh" and r["started"].endswith("Z"), r
' "$id" <<<"$out" || fail "runs --json: $out"
	expect_rc 2 "$MOAT" runs -n 0
	expect_rc 2 "$MOAT" runs --bogus
}

expect_rc() {
	local want=$1 rc=0
	shift
	"$@" >/dev/null 2>&1 || rc=$?
	assert_eq "$want" "$rc" "exit status of: $*"
}

t_log_last() {
	local out
	"$MOAT" run --quiet -- /bin/echo last-one >/dev/null
	out=$("$MOAT" log --last)
	assert_contains "$out" "last-one"
	out=$("$MOAT" log --last --type exit --json)
	assert_contains "$out" '"type":"exit"'
	assert_contains "$out" "\"run\":\"$(newest)\""
}

t_log_last_none() {
	local out rc=0
	out=$(XDG_STATE_HOME="$T_OUT/empty" "$MOAT" log --last 2>&1) || rc=$?
	if is_root; then
		return 0 # root's runs directory is this script's tmpfs, shared by its tests
	fi
	assert_eq 1 "$rc" "log --last with no run: $out"
	assert_contains "$out" "no run has been recorded yet"
}

# fake_run ID AGE-DATE [KIB]: a finished run's directory, dated
fake_run() {
	mkdir -p "$RUNS/$1"
	printf '{"v":1,"seq":1,"ts":"2020-01-01T00:00:00Z","run":"%s","type":"start","argv":["old"]}\n' "$1" >"$RUNS/$1/events.jsonl"
	[ -n "${3:-}" ] && head -c "$(($3 * 1024))" /dev/urandom >"$RUNS/$1/held"
	touch -d "$2" "$RUNS/$1/events.jsonl" "$RUNS/$1"/* "$RUNS/$1"
}

t_runs_pruned_by_age_and_size() {
	mkdir -p "$RUNS"
	rm -f "$RUNS/.pruned"
	fake_run old1 '30 days ago'
	fake_run old2 '15 days ago'
	fake_run recent1 '2 days ago'
	"$MOAT" run --quiet -- /bin/true
	[ ! -e "$RUNS/old1" ] && [ ! -e "$RUNS/old2" ] || fail "runs past 14 days were kept: $(ls "$RUNS")"
	[ -d "$RUNS/recent1" ] || fail "a 2-day-old run was pruned"
	[ -f "$RUNS/.pruned" ] || fail "no prune stamp"
	# at most hourly: a second run does not prune again
	fake_run old3 '30 days ago'
	"$MOAT" run --quiet -- /bin/true
	[ -d "$RUNS/old3" ] || fail "pruned again within the hour"
	# the stamp an hour old: pruned by age, and by size (oldest first)
	touch -d '2 hours ago' "$RUNS/.pruned"
	fake_run big1 '3 days ago' 700
	fake_run big2 '1 day ago' 700
	"$MOAT" run --quiet --runs-max 1M -- /bin/true
	[ ! -e "$RUNS/old3" ] || fail "old3 kept"
	[ ! -e "$RUNS/big1" ] || fail "over the total cap, the oldest (big1) was kept: $(du -sk "$RUNS")"
	[ -d "$RUNS/big2" ] || fail "the newest big run went too (only what is needed goes)"
}

# Control: with a retention longer than the run's age, the same set-up keeps
# it: the check above sees a removal by the policy, not a directory that was
# never there.
t_control_no_prune() {
	mkdir -p "$RUNS"
	rm -f "$RUNS/.pruned"
	fake_run keep1 '300 days ago'
	"$MOAT" run --quiet --retention 400d -- /bin/true
	[ -d "$RUNS/keep1" ] || fail "pruned though younger than the retention"
	[ -f "$RUNS/.pruned" ] || fail "the prune did not run"
	rm -rf "$RUNS/keep1"
}

t_ps_json() {
	local out pid id
	"$MOAT" run --quiet --nofile 777 --timeout 5m -- /bin/sleep 30 &
	pid=$!
	for _ in $(seq 50); do
		out=$("$MOAT" ps --json)
		grep -q '"sleep 30"\|/bin/sleep 30' <<<"$out" && break
		sleep 0.1
	done
	python3 -c '
import json, sys
d = [r for r in json.load(sys.stdin) if r.get("command") == "/bin/sleep 30"]
assert len(d) == 1, d
r = d[0]
assert r["pid"] > 0 and r["argv"] == ["/bin/sleep", "30"], r
assert r["limits"]["nofile"] == 777 and r["limits"]["timeout"] in ("300000ms", 300000), r
' <<<"$out" || fail "ps --json: $out"
	kill "$pid"
	wait "$pid" 2>/dev/null || true
}

t_apply_refused() {
	local ws="$T_OUT/wsr" out id rc=0
	mkdir -p "$ws"
	"$MOAT" run --quiet --workspace "$ws" -- /bin/sh -c 'mkfifo pipe; echo ok > plain.txt' >/dev/null 2>&1 || true
	id=$(newest)
	[ -e "$ws/pipe" ] && fail "the FIFO reached the host"
	out=$("$MOAT" apply "$id" pipe 2>&1) || rc=$?
	assert_eq 1 "$rc" "moat apply of a refused path: $out"
	assert_contains "$out" "refused"
	assert_contains "$out" "pipe"
	[ ! -e "$ws/pipe" ] || fail "the refused FIFO was applied"
}

# moat diff RUN: the content of what the run holds, as a unified diff;
# binary files marked; the agent's bytes escaped before the terminal.
t_diff_content() {
	local ws="$T_OUT/wsd" out id raw
	mkdir -p "$ws"
	printf 'a\nb\nc\n' >"$ws/f.txt"
	printf 'x\0y' >"$ws/blob"
	out=$("$MOAT" run --workspace "$ws" --apply never -- /usr/bin/python3 -c '
open("f.txt", "w").write("a\nB\nc\nd\n")
open("blob", "wb").write(b"x\0z")
open("n.txt", "wb").write(b"new\x1b[31mred\n")
print(open("n.txt", "rb").read()[3])' 2>&1)
	assert_contains "$out" "27" # the sandbox wrote a raw ESC (control for the escaping)
	id=$(sed -n 's/.*moat diff \([0-9a-f]*\).*/\1/p' <<<"$out" | head -1)
	[ -n "$id" ] || fail "no run id in: $out"
	out=$("$MOAT" diff "$id")
	assert_contains "$out" "~ modified file    f.txt"
	assert_contains "$out" "--- a/f.txt
+++ b/f.txt
@@ -1,3 +1,4 @@
 a
-b
+B
 c
+d"
	assert_contains "$out" "--- a/blob
+++ b/blob
Binary file differs (3 -> 3 bytes)"
	assert_contains "$out" '+new\u001b[31mred'
	raw=$(printf '\033')
	assert_not_contains "$out" "$raw"
	# the workspace is untouched (--apply never)
	assert_eq "a b c" "$(tr '\n' ' ' <"$ws/f.txt" | sed 's/ $//')"
}

# srt settings (the sandbox-runtime README's format), as the user writes them.
t_import_srt() {
	local d="$T_OUT/proj" out err rc=0
	mkdir -p "$d/secrets" "$d/build"
	cd "$d"
	cat >srt.json <<'EOF'
{
  "network": {
    "allowedDomains": ["github.com", "*.npmjs.org"],
    "deniedDomains": ["evil.npmjs.org"],
    "allowUnixSockets": ["/var/run/docker.sock"],
    "allowLocalBinding": true
  },
  "filesystem": {
    "denyRead": ["~/.ssh", "./secrets"],
    "allowWrite": [".", "/tmp/moat-import-x", "src/**/*.gen"],
    "denyWrite": ["./.git/hooks"]
  },
  "ignoreViolations": {"*": ["/usr/bin"]}
}
EOF
	out=$("$MOAT" policy import --from srt srt.json 2>err.txt)
	err=$(cat err.txt)
	python3 -c '
import json, sys
p = json.load(sys.stdin)
d = sys.argv[1]
n = p["network"]
assert n["mode"] == "allow" and n["allow_hosts"] == ["github.com", "*.npmjs.org"], n
assert n["deny_hosts"] == ["evil.npmjs.org"], n
fs = p["filesystem"]
assert fs["workspace"] == d, fs
m = fs["mounts"]
assert {"type": "hide", "dest": d + "/secrets"} in m, m
assert {"type": "hide", "dest": d + "/.git/hooks"} in m, m
assert {"type": "rw", "src": "/tmp/moat-import-x", "dest": "/tmp/moat-import-x"} in m, m
assert not any("gen" in x.get("src", "") for x in m), m
' "$d" <<<"$out" || fail "imported policy: $out"
	assert_contains "$err" "allowUnixSockets"
	assert_contains "$err" "src/**/*.gen"
	assert_contains "$err" "ignoreViolations: no equivalent"
	assert_contains "$err" '"~/.ssh": hidden, though outside what moat shows'
	echo "$out" >imported.json
	mkdir -p /tmp/moat-import-x 2>/dev/null || true
	"$MOAT" policy check imported.json || fail "moat policy check of the import"
	# Claude Code's settings.json: the same objects under "sandbox"
	echo '{"permissions":{"allow":["Bash(ls)"]},"sandbox":{"enabled":true,"network":{"allowedDomains":["example.com"]},"excludedCommands":["docker"]}}' >cc.json
	out=$("$MOAT" policy import --from srt cc.json 2>err.txt)
	assert_contains "$out" '"example.com"'
	assert_contains "$(cat err.txt)" "sandbox.excludedCommands: no equivalent"
	# -o refuses to overwrite
	"$MOAT" policy import --from srt cc.json -o out.json 2>/dev/null
	rc=0
	"$MOAT" policy import --from srt cc.json -o out.json 2>/dev/null || rc=$?
	assert_eq 1 "$rc" "-o over an existing file"
	expect_rc 2 "$MOAT" policy import --from docker cc.json
	echo '{"network": {"allowedDomains": "github.com"}}' >bad.json
	expect_rc 2 "$MOAT" policy import --from srt bad.json
}

# Never wider: a deny moat cannot express inside a writable path drops the
# path; "*" is not imported as "any host"; no domains means --net none.
t_import_never_wider() {
	local d="$T_OUT/proj2" out
	mkdir -p "$d"
	cd "$d"
	echo '{"network":{"allowedDomains":["*"]},"filesystem":{"allowWrite":["."],"denyWrite":["*.env"]}}' >s.json
	out=$("$MOAT" policy import --from srt s.json 2>err.txt)
	python3 -c '
import json, sys
p = json.load(sys.stdin)
assert p["network"]["mode"] == "none" and "allow_hosts" not in p["network"], p
assert "workspace" not in p["filesystem"], p
assert "mounts" not in p["filesystem"], p
' <<<"$out" || fail "wider than the input: $out"
	assert_contains "$(cat err.txt)" "the writable path is left out"
	# a denyRead pattern over what every sandbox sees cannot be expressed:
	# refused, not imported wider; one rooted elsewhere is fine
	echo '{"filesystem":{"denyRead":["/etc/**/*.key"]}}' >s3.json
	expect_rc 2 "$MOAT" policy import --from srt s3.json
	echo '{"filesystem":{"denyRead":["/srv/keys/*.pem"],"allowWrite":["."]}}' >s4.json
	out=$("$MOAT" policy import --from srt s4.json 2>/dev/null)
	assert_contains "$out" "\"workspace\": \"$d\""
	# control: the same input without the deny keeps the workspace
	echo '{"filesystem":{"allowWrite":["."]}}' >s2.json
	out=$("$MOAT" policy import --from srt s2.json 2>/dev/null)
	assert_contains "$out" "\"workspace\": \"$d\""
}

run_test "moat runs: recent runs newest first, exit, held, command; --json" t_runs_lists_recent
run_test "moat log --last: the newest run's log" t_log_last
run_test "moat log --last with no run says so" t_log_last_none
run_test "the runs directory is pruned by age and total size, at most hourly" t_runs_pruned_by_age_and_size
run_test "control: a run younger than the retention is kept" t_control_no_prune
run_test "moat ps --json: command and limits of a live run" t_ps_json
run_test "moat apply of a refused path says so and exits 1" t_apply_refused
run_test "moat diff RUN: content diffs, binary marked, bytes escaped" t_diff_content
run_test "moat policy import --from srt: srt and Claude Code settings" t_import_srt
run_test "moat policy import never produces something wider" t_import_never_wider
t_done
