#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# `moat selftest` (issue 8): the red-team battery built into the moat binary.
# It must hold everywhere with the default policy, with its positive controls
# showing the paths open, and must report escapes when a layer is switched off
# (test-only switch): a selftest that cannot fail proves nothing.
# shellcheck source=../lib/tap.sh
source "${MOAT_TEST_DIR:-$(dirname "$0")/..}/lib/tap.sh"

# runs directory of this user (where `moat run` keeps its records)
runs_dir() {
	if is_root; then echo /var/lib/moat/runs; else echo "${XDG_STATE_HOME:-$HOME/.local/state}/moat/runs"; fi
}

# jq-like checks with python3: st_json FILE EXPR prints EXPR over the document d.
st_json() {
	python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2"
}

t_full() {
	local rc=0 n held esc open workdir
	touch start.marker
	"$MOAT" selftest --json >st.json 2>st.err || rc=$?
	cat st.err
	[ -s st.json ] || fail "no JSON output (exit $rc)"
	n=$(st_json st.json 'len(d["probes"])')
	held=$(st_json st.json 'd["summary"]["held"]')
	esc=$(st_json st.json 'd["summary"]["escaped"]')
	open=$(st_json st.json 'sum(1 for p in d["probes"] for a in p["attempts"] if a["control"] == "FAIL")')
	echo "# $n probes, $held held, $esc escaped, $open attempts open in the controls"
	st_json st.json '"\n".join("# %s: %s %s" % (p["probe"], p["verdict"], p["reason"][:300]) for p in d["probes"] if p["verdict"] != "held")'
	assert_eq 0 "$esc" "escaped probes"
	assert_eq 0 "$rc" "exit status of moat selftest"
	[ "$n" -ge 30 ] || fail "only $n probes ran"
	# The controls really ran and showed paths open; most probes held.
	[ "$open" -ge 100 ] || fail "only $open attempts open in the controls"
	[ "$held" -ge 30 ] || fail "only $held probes held"
	# Controls never ran as host root.
	[ "$(st_json st.json 'd["control_uid"]')" != 0 ] || fail "a control ran as uid 0"
	# Cleaned up: its temporary directory (named in its output: other
	# selftests may run on this machine at the same time), its runs' records,
	# its processes.
	workdir=$(st_json st.json 'd["workdir"]')
	case $workdir in /tmp/moat-selftest.*) ;; *) fail "selftest names no work directory: '$workdir'" ;; esac
	[ ! -e "$workdir" ] || fail "moat selftest left its work directory $workdir"
	if [ -d "$(runs_dir)" ] &&
		[ -n "$(find "$(runs_dir)" -newer start.marker -name events.jsonl -print0 2>/dev/null |
			xargs -0 -r grep -l 'moat-selftest')" ]; then
		fail "run records of the selftest's runs were left in $(runs_dir)"
	fi
	if pgrep -f 'moat-selftest-[0-9]' >/dev/null; then
		fail "processes of the selftest survived: $(pgrep -af 'moat-selftest-[0-9]')"
	fi
}

t_text() {
	local rc=0
	"$MOAT" selftest --only rt013_keyring,RT-033 >st.txt 2>&1 || rc=$?
	cat st.txt | sed 's/^/# /'
	assert_eq 0 "$rc" "exit status"
	assert_contains "$(cat st.txt)" "ATTEMPT"
	assert_contains "$(cat st.txt)" "RT-013/"
	assert_contains "$(cat st.txt)" "RT-033/append"
	assert_contains "$(cat st.txt)" "2 probe(s): 2 held"
}

# Vacuity: with seccomp switched off, the seccomp-class probes must escape.
t_vacuity_seccomp() {
	local rc=0 esc
	MOAT_TEST_LAYERS=1 "$MOAT_TESTING_BIN" selftest --json --only rt013_keyring,rt014_bpf,rt015_iouring,rt_arch \
		--test-disable-layer seccomp >st.json 2>st.err || rc=$?
	assert_eq 1 "$rc" "exit status with seccomp disabled"
	esc=$(st_json st.json '",".join(sorted(p["probe"] for p in d["probes"] if p["verdict"] == "escaped"))')
	echo "# escaped with seccomp off: $esc"
	assert_contains "$esc" "rt013_keyring"
	assert_contains "$esc" "rt014_bpf"
	assert_contains "$esc" "rt015_iouring"
	assert_eq 4 "$(st_json st.json 'd["summary"]["escaped"]')" "escaped probes"
}

# ... and with Landlock off, the read-only bind must still hold (mount flags),
# while the selftest still runs: the switch reaches `moat run`.
t_vacuity_landlock() {
	local rc=0
	MOAT_TEST_LAYERS=1 "$MOAT_TESTING_BIN" selftest --json --only rt033_robind --test-disable-layer landlock \
		>st.json 2>st.err || rc=$?
	assert_eq held "$(st_json st.json 'd["probes"][0]["verdict"]')" "rt033 with Landlock off"
}

t_gate() {
	local rc=0 out
	out=$(env -u MOAT_TEST_LAYERS "$MOAT_TESTING_BIN" selftest --test-disable-layer seccomp 2>&1) || rc=$?
	assert_eq 2 "$rc" "test build: exit status without MOAT_TEST_LAYERS"
	assert_contains "$out" "MOAT_TEST_LAYERS"
	# the shipped moat has no such option at all, whatever the environment
	rc=0
	out=$(MOAT_TEST_LAYERS=1 "$MOAT" selftest --test-disable-layer seccomp 2>&1) || rc=$?
	assert_eq 2 "$rc" "shipped moat: exit status with MOAT_TEST_LAYERS=1"
	assert_contains "$out" "unknown option --test-disable-layer"
}

t_bad_input() {
	local rc=0 out
	out=$("$MOAT" selftest --pids lots 2>&1) || rc=$?
	assert_eq 2 "$rc" "exit status of a bad policy option"
	assert_contains "$out" "--pids"
	rc=0
	out=$("$MOAT" selftest --only no_such_probe 2>&1) || rc=$?
	assert_eq 2 "$rc" "exit status of an empty selection"
	rc=0
	out=$("$MOAT" selftest --policy /nonexistent/policy.json 2>&1) || rc=$?
	assert_eq 2 "$rc" "exit status of a missing policy file"
	assert_contains "$out" "/nonexistent/policy.json"
}

# Every policy option reaches each inner `moat run` whole: one longer than
# the battery's argument slots is refused (125) instead of shortened; the
# control: the same policy by a short path runs.
t_long_option() {
	local rc=0 d out
	d=$PWD/$(printf 'd%.0s' $(seq 250))/$(printf 'e%.0s' $(seq 250))/$(printf 'f%.0s' $(seq 250))
	mkdir -p "$d"
	echo '{"version": 1}' >"$d/p.json"
	out=$("$MOAT" selftest --only rt013_keyring --policy "$d/p.json" 2>&1) || rc=$?
	assert_eq 125 "$rc" "selftest with a policy option longer than an inner argument"
	assert_contains "$out" "too long"
	cp "$d/p.json" short.json
	rc=0
	out=$("$MOAT" selftest --only rt013_keyring --policy "$PWD/short.json" 2>&1) || rc=$?
	assert_eq 0 "$rc" "control: the same policy by a short path: $out"
}

run_test "selftest --json holds, controls ran, cleaned up" t_full
run_test "selftest text table" t_text
run_test "selftest reports escapes with seccomp disabled (vacuity)" t_vacuity_seccomp
run_test "selftest passes run options through (landlock off, rt033)" t_vacuity_landlock
run_test "selftest layer switch: test build and MOAT_TEST_LAYERS=1 only" t_gate
run_test "selftest bad input: exit 2" t_bad_input
run_test "selftest: a policy option too long for the inner runs is refused, never shortened" t_long_option
t_done
