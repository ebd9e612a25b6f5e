#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Paths, flags and messages (issue 18): the user's exact command lines, the
# exit status and the message text. Run as root and as an unprivileged user by
# tests/run-all.sh.
# shellcheck source=tests/lib/tap.sh
. "$(dirname "$0")/../lib/tap.sh"

# expect_usage WANT-TEXT CMD...: exit 2, the message contains WANT-TEXT
expect_usage() {
	local want=$1 rc=0 out
	shift
	out=$("$@" 2>&1 </dev/null) || rc=$?
	assert_eq 2 "$rc" "exit status of: $*  ($out)"
	assert_contains "$out" "$want"
}

# The README's own example, with a relative workspace, from the project
# directory; the plan and the audit start event show the absolute path.
t_relative_workspace() {
	local proj="$T_OUT/proj" out
	mkdir -p "$proj/sub"
	echo hello >"$proj/in.txt"
	cd "$proj"
	out=$("$MOAT" run --quiet --workspace . -- /bin/sh -c 'pwd; cat in.txt')
	assert_eq "$proj
hello" "$out"
	out=$("$MOAT" run --quiet --workspace=./sub/../ --apply all -- /bin/sh -c 'pwd; echo w > new.txt')
	assert_eq "$proj" "$out"
	assert_eq w "$(cat "$proj/new.txt")" "a change made through a relative workspace lands"
	out=$("$MOAT" policy show --workspace . --ro sub)
	assert_contains "$out" "\"path\": \"$proj\""
	assert_contains "$out" "$proj/sub"
	assert_not_contains "$out" '"."'
	"$MOAT" run --quiet --workspace . --log "$T_OUT/audit.jsonl" -- /bin/true
	grep '"type":"start"' "$T_OUT/audit.jsonl" | grep -q "\"workspace\":\"$proj\"" ||
		fail "the audit start event does not name $proj: $(head -c 600 "$T_OUT/audit.jsonl")"
	# '~' that no shell expanded
	out=$(HOME="$proj" "$MOAT" policy show --workspace=~/sub)
	assert_contains "$out" "\"path\": \"$proj/sub\""
	expect_usage "'~NAME' is not expanded" "$MOAT" policy show --workspace '~nobody/x'
	# '..' across a symlink would mean another directory to the kernel
	ln -s /usr "$proj/lnk"
	expect_usage "lnk is a symlink: moat resolves '..' by name" "$MOAT" policy show --ro lnk/../sub
}

# A project can commit its policy: relative paths are relative to the file.
t_policy_file_relative() {
	local proj="$T_OUT/proj2" out
	mkdir -p "$proj/.moat" "$proj/data"
	echo '{"version":1,"filesystem":{"workspace":"..","mounts":[{"type":"ro","src":"../data","dest":"/data2"}]}}' >"$proj/.moat/policy.json"
	cd /
	out=$("$MOAT" policy show --policy "$proj/.moat/policy.json")
	assert_contains "$out" "\"path\": \"$proj\""
	assert_contains "$out" "$proj/data"
	cd "$proj/data"
	out=$("$MOAT" run --quiet --policy ../.moat/policy.json -- /bin/sh -c 'pwd; ls -d /data2')
	assert_eq "$proj
/data2" "$out"
}

# A nonexistent workspace or --ro source: exit 2 before anything starts; a
# planted symlink stays 125 (issue 13).
t_missing_paths() {
	expect_usage "--workspace $T_OUT/nope: No such file or directory" "$MOAT" run --workspace "$T_OUT/nope" -- /bin/true
	expect_usage "--ro $T_OUT/nope: No such file or directory" "$MOAT" run --ro "$T_OUT/nope" -- /bin/true
	: >"$T_OUT/file"
	expect_usage "Not a directory" "$MOAT" run --workspace "$T_OUT/file" -- /bin/true
	mkdir -p "$T_OUT/real"
	ln -s "$T_OUT/real" "$T_OUT/link"
	local rc=0 out
	out=$("$MOAT" run --workspace "$T_OUT/link" -- /bin/true 2>&1) || rc=$?
	assert_eq 125 "$rc" "a symlinked workspace is refused for safety"
	assert_contains "$out" "is a symlink"
	# positive control: the real directory runs
	"$MOAT" run --quiet --workspace "$T_OUT/real" -- /bin/true
}

# Flag values: bounds and units, with the flag, the value and the range.
t_flag_values() {
	expect_usage "--memory 1Gb: not a size" "$MOAT" run --memory 1Gb -- /bin/true
	expect_usage "--memory 16E: out of range: from 4.0 MiB to 16.0 TiB" "$MOAT" run --memory 16E -- /bin/true
	expect_usage "--cpus 1000: out of range: from 0.01 to" "$MOAT" run --cpus 1000 -- /bin/true
	expect_usage "--timeout 99999999999h: out of range: from 1ms to 30d" "$MOAT" run --timeout 99999999999h -- /bin/true
	expect_usage "--disk 100T: out of range: from 1.0 MiB to 16.0 TiB" "$MOAT" run --disk 100T -- /bin/true
	# positive controls: the documented spellings
	local out
	out=$("$MOAT" policy show --memory 1g --disk 64MiB --timeout 1h30m --cpus 0.5)
	assert_contains "$out" '"memory": 1073741824'
	assert_contains "$out" '"disk": 67108864'
	out=$("$MOAT" policy show --memory 256MB --fsize 1GiB --tmpfs /scratch:64m)
	assert_contains "$out" '"memory": 268435456'
	"$MOAT" run --quiet --timeout 1m --kill-grace 1s -- /bin/true
}

# policy show prints the whole plan (golden texts: tests/unit/test_plan.c),
# never a secret's value
t_policy_show_plan() {
	local out s
	out=$(MOAT_T_SECRET=plan-secret-value-xyz "$MOAT" policy show --net allow --allow-host a.example \
		--secret MOAT_T_SECRET@a.example --memory 256m --timeout 10s)
	for s in mounts identity network credentials landlock seccomp limits audit; do
		assert_contains "$out" "## $s"
	done
	assert_contains "$out" "bind     /etc/ssl/certs/ca-certificates.crt <- (made at run time) ro"
	assert_contains "$out" "secret       MOAT_T_SECRET: placeholder"
	assert_contains "$out" "memory       256.0 MiB (asked)"
	assert_contains "$out" "timeout      10s"
	assert_not_contains "$out" "plan-secret-value-xyz"
}

# Repeated single-value flags, and --net none with --allow-host either way.
t_repeats_and_conflicts() {
	expect_usage "--workspace given twice" "$MOAT" run --workspace . --workspace /tmp -- /bin/true
	expect_usage "--memory given twice (1G, then 2G)" "$MOAT" run --memory 1G --memory=2G -- /bin/true
	expect_usage "--net none conflicts with --allow-host example.com" "$MOAT" run --net none --allow-host example.com -- /bin/true
	expect_usage "--net none conflicts with --allow-host example.com" "$MOAT" run --allow-host example.com --net none -- /bin/true
	# positive control: list options repeat
	"$MOAT" policy show --ro /usr --ro /etc/hostname --allow-host a.example --allow-host b.example >/dev/null
}

# did you mean, --help everywhere, -V
t_help_and_typos() {
	expect_usage "unknown option --worksapce (did you mean --workspace?)" "$MOAT" run --worksapce . -- /bin/true
	expect_usage "unknown command 'rnu' (did you mean run?)" "$MOAT" rnu
	expect_usage "unknown subcommand 'shwo' (did you mean show?)" "$MOAT" policy shwo
	local c out
	for c in "run --help" "policy show --help" "policy check --help" "ps --help" "help run" \
		"log --help" "diff --help" "apply --help" "gc --help" "doctor --help" "selftest --help"; do
		# shellcheck disable=SC2086
		out=$("$MOAT" $c 2>/dev/null) || fail "moat $c: exit $?"
		local want=${c#help }
		assert_contains "$out" "usage: moat ${want%% *}"
	done
	out=$("$MOAT" run --help)
	assert_contains "$out" "--workspace DIR[:MODE]"
	assert_eq "$("$MOAT" --version)" "$("$MOAT" -V)"
}

run_test "relative workspace, '..', '~': absolute in plan and audit" t_relative_workspace
run_test "policy file paths are relative to its directory" t_policy_file_relative
run_test "missing workspace/--ro: exit 2; planted symlink: 125" t_missing_paths
run_test "flag values: bounds, units, messages" t_flag_values
run_test "policy show: every part of the plan, no secret value" t_policy_show_plan
run_test "repeated single-value flags, --net none conflicts" t_repeats_and_conflicts
run_test "did you mean, --help on every subcommand, -V" t_help_and_typos
t_done
