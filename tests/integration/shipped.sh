#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# shellcheck disable=SC2317 # test functions are called indirectly by run_test
#
# No test switches in what users run (issue 13, item 8). The shipped moat has
# no way to switch a layer off but --allow-degraded, and no environment
# variable changes what it does: the test switches (--test-disable-layer, the
# MOAT_TEST_STALL_AT stall hook, both behind MOAT_TEST_LAYERS=1) exist only in
# the test build moat-testing (-DMOAT_TESTING), and probes run only by an
# explicit `moat __probe NAME`. Every check has its positive control on
# moat-testing (or on a doctored copy), so a scan that cannot see cannot pass.
# shellcheck source=../lib/tap.sh
source "${MOAT_TEST_DIR:-$(dirname "$0")/..}/lib/tap.sh"

[ -x "$MOAT_TESTING_BIN" ] || {
	echo "not ok 1 - the test build $MOAT_TESTING_BIN is missing (make all builds it)"
	echo "1..1"
	exit 1
}

# Test-only names by convention: MOAT_TEST_* / MOAT_SELFTEST_* environment
# variables, --test-* options, the stall hook's message, the layers' "(test)"
# degradation marks, the policy fields test_no_*. Anything matching in the
# shipped binary (code, data or debug information) fails, whatever it is: the
# whole class, not a list.
STR_RE='MOAT_TEST_[A-Z0-9_]+|MOAT_SELFTEST_[A-Z0-9_]+|--test-[a-z-]+|test stall at|(landlock|seccomp)\(test\)|test_no_[a-z]+'
SYM_RE='moat_test_|test_stall|set_test_disable'

# scan FILE: prints every test-only string and symbol found in FILE.
scan() {
	grep -aoE -- "$STR_RE" "$1" | sort -u | sed 's/^/string /' || true
	{ nm "$1" 2>/dev/null || true; nm -D "$1" 2>/dev/null || true; } | awk '{print $NF}' |
		grep -E -- "$SYM_RE" | sort -u | sed 's/^/symbol /' || true
}

t_scan_shipped() {
	local found
	# the symbol scan needs a symbol table: a stripped binary would pass it vacuously
	local syms
	syms=$(nm "$MOAT" 2>&1 || true)
	grep -qw moat_run <<<"$syms" || fail "no symbol table in $MOAT: cannot scan its symbols"
	found=$(scan "$MOAT")
	[ -z "$found" ] || fail "test-only code in the shipped $MOAT: $(tr "\n" " " <<<"$found")"
}

# Control: the same scan finds every switch in the test build...
t_scan_control_testing() {
	local found want
	found=$(scan "$MOAT_TESTING_BIN")
	echo "# in moat-testing: $(tr "\n" " " <<<"$found")"
	for want in "string --test-disable-layer" "string MOAT_TEST_LAYERS" "string MOAT_TEST_STALL_AT" \
		"string test stall at" "string landlock(test)" "string seccomp(test)" \
		"string test_no_seccomp" "string test_no_landlock" \
		"symbol moat_test_stall" "symbol moat_test_stall_arm" "symbol set_test_disable"; do
		grep -qxF -- "$want" <<<"$found" || fail "the scan misses '$want' in $MOAT_TESTING_BIN"
	done
}

# ... and the one name no binary has any more (the old probe mode's variable)
# in a copy of the shipped moat with that string appended.
t_scan_control_doctored() {
	local found
	cp "$MOAT" doctored
	printf 'x\0MOAT_SELFTEST_PROBE\0' >>doctored
	found=$(scan doctored)
	assert_contains "$found" "string MOAT_SELFTEST_PROBE" "scan of a doctored copy"
}

# The layer switch is an unknown option (exit 2), whatever the environment and
# the spelling; the control: the test build accepts it with the gate.
t_no_layer_switch() {
	local rc out layer
	for layer in seccomp landlock; do
		rc=0
		out=$(MOAT_TEST_LAYERS=1 "$MOAT" run --quiet --test-disable-layer "$layer" -- /bin/true 2>&1) ||
			rc=$?
		assert_eq 2 "$rc" "moat run --test-disable-layer $layer with MOAT_TEST_LAYERS=1"
		assert_contains "$out" "unknown option --test-disable-layer"
		rc=0
		MOAT_TEST_LAYERS=1 "$MOAT" run --quiet "--test-disable-layer=$layer" -- /bin/true 2>/dev/null ||
			rc=$?
		assert_eq 2 "$rc" "moat run --test-disable-layer=$layer"
		rc=0
		MOAT_TEST_LAYERS=1 "$MOAT" policy show --test-disable-layer "$layer" >/dev/null 2>&1 || rc=$?
		assert_eq 2 "$rc" "moat policy show --test-disable-layer $layer"
	done
	out=$("$MOAT" run --help 2>&1 || true)
	assert_contains "$out" "--allow-degraded" "moat run --help"
	assert_not_contains "$out" "--test-" "moat run --help"
	# control: the same command line is a working switch in the test build
	out=$(MOAT_TEST_LAYERS=1 "$MOAT_TESTING_BIN" run --quiet --json-status "$PWD/st.json" \
		--test-disable-layer seccomp -- /bin/echo ran 2>&1) || fail "moat-testing refused the switch: $out"
	assert_eq ran "$out"
	assert_contains "$(cat st.json)" "seccomp(test)"
}

# The stall hook's variables change nothing in the shipped moat (every stage);
# the control: the test build stalls at the first one.
t_no_stall_hook() {
	local stage out pid
	for stage in prepared cloned child init-go init-mounted init-restricted started; do
		out=$(MOAT_TEST_LAYERS=1 MOAT_TEST_STALL_AT=$stage timeout 20 "$MOAT" run --quiet -- /bin/echo ran 2>&1) ||
			fail "moat run with MOAT_TEST_STALL_AT=$stage failed or stalled: $out"
		assert_eq ran "$out" "output with MOAT_TEST_STALL_AT=$stage"
	done
	MOAT_TEST_LAYERS=1 MOAT_TEST_STALL_AT=prepared "$MOAT_TESTING_BIN" run --quiet -- /bin/echo ran \
		>ctl.out 2>ctl.err &
	pid=$!
	for _ in $(seq 100); do grep -q "test stall at prepared" ctl.err && break; sleep 0.1; done
	local stalled=0
	grep -q "test stall at prepared" ctl.err && stalled=1
	kill -9 "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
	"$MOAT_TESTING_BIN" gc --quiet >/dev/null 2>&1 || true
	assert_eq 1 "$stalled" "control: moat-testing stalled at prepared"
}

# Probes run only through `moat __probe NAME` (argv); an environment variable
# never turns another command line into a probe. The control: the same probe
# runs by name, also in the shape a probe uses to start itself again
# (argv[0] = a marker, then `__probe NAME`). rt072_orphan --sleep --seconds 0
# only sleeps 0 s: harmless on the host.
t_probe_by_argv_only() {
	local rc=0 out
	out=$(MOAT_SELFTEST_PROBE=rt072_orphan "$MOAT" --sleep --seconds 0 2>&1) || rc=$?
	assert_eq 2 "$rc" "an unknown command with MOAT_SELFTEST_PROBE set"
	assert_contains "$out" "unknown command '--sleep'"
	rc=0
	out=$("$MOAT" __probe no_such_probe 2>&1) || rc=$?
	assert_eq 2 "$rc" "__probe of an unknown name"
	assert_contains "$out" "no probe 'no_such_probe'"
	timeout 20 "$MOAT" __probe rt072_orphan --sleep --seconds 0 || fail "__probe rt072_orphan failed"
	(exec -a moat-shipped-marker "$MOAT" __probe rt072_orphan --sleep --seconds 0) ||
		fail "__probe with argv[0] a marker failed"
}

# Each flavour loads only its own plugins: the shipped moat refuses the test
# build's (and the reverse); each with its own runs --net allow (the control).
t_plugin_flavours() {
	mkdir -p ship test
	cp "$MOAT" ship/moat
	cp "$(dirname "$MOAT_TESTING_BIN")/moat-net.so" "$(dirname "$MOAT_TESTING_BIN")/moat-nft.so" ship/
	cp "$MOAT_TESTING_BIN" test/moat-testing
	cp "$(dirname "$MOAT")/moat-net.so" "$(dirname "$MOAT")/moat-nft.so" test/
	local rc=0 out
	out=$(ship/moat run --quiet --net allow -- /bin/true 2>&1) || rc=$?
	assert_eq 125 "$rc" "shipped moat with the test build's plugins"
	assert_contains "$out" "another build"
	rc=0
	out=$(test/moat-testing run --quiet --net allow -- /bin/true 2>&1) || rc=$?
	assert_eq 125 "$rc" "moat-testing with the shipped plugins"
	assert_contains "$out" "another build"
	out=$("$MOAT" run --quiet --net allow -- /bin/echo ok 2>&1) || fail "shipped moat --net allow: $out"
	assert_eq ok "$out"
	out=$("$MOAT_TESTING_BIN" run --quiet --net allow -- /bin/echo ok 2>&1) ||
		fail "moat-testing --net allow: $out"
	assert_eq ok "$out"
}

# A plugin of the same flavour but another ABI (its ABI string changed in
# place, as another build would have it) is refused before clone, for each
# plugin; the control: the same copy, unchanged, runs --net allow.
t_plugin_other_abi() {
	local so rc out
	for so in moat-net.so moat-nft.so; do
		rm -rf abi && mkdir abi
		cp "$MOAT" abi/moat
		cp "$(dirname "$MOAT")/moat-net.so" "$(dirname "$MOAT")/moat-nft.so" abi/
		out=$(abi/moat run --quiet --net allow -- /bin/echo ok 2>&1) ||
			fail "control: the copied moat with its own plugins: $out"
		assert_eq ok "$out" "control: the copied moat with its own plugins"
		grep -qa 'moat-plugin [0-9.]* [0-9]' "abi/$so" || fail "no ABI string in $so"
		LC_ALL=C sed -i 's/moat-plugin \([0-9.]*\) \([0-9]\)/moat-plugin \1 9/g' "abi/$so"
		rc=0
		out=$(abi/moat run --quiet --net allow -- /bin/true 2>&1) || rc=$?
		assert_eq 125 "$rc" "moat with a $so of another ABI"
		assert_contains "$out" "$so is from another build"
	done
}

# A moat-net.so marked for this build in its .moat_abi section but whose
# table is not (a damaged file; the same path as one that cannot load) is
# refused by the supervisor after clone, before the command runs; the
# control: the same copy with the plugin unchanged runs the command.
t_plugin_bad_table() {
	local rc=0 out
	rm -rf tab && mkdir -p tab/ws
	cp "$MOAT" tab/moat
	cp "$(dirname "$MOAT")/moat-net.so" "$(dirname "$MOAT")/moat-nft.so" tab/
	python3 - tab/moat-net.so "$(readelf -S -W tab/moat-net.so)" <<'EOF' || fail "cannot patch the table's ABI string"
import re, sys
path, sections = sys.argv[1], sys.argv[2]
m = re.search(r"\.moat_abi\s+\S+\s+\S+\s+([0-9a-f]+)\s+([0-9a-f]+)", sections)
off, size = int(m.group(1), 16), int(m.group(2), 16)
b = bytearray(open(path, "rb").read())
n, i = 0, 0
while (i := b.find(b"moat-plugin ", i)) >= 0:
    if not off <= i < off + size:
        j = b.index(b"\0", i) - 1
        b[j] = ord("9") if b[j] != ord("9") else ord("8")
        n += 1
    i += 1
open(path, "wb").write(b)
sys.exit(0 if n else 1)
EOF
	out=$(tab/moat run --quiet --net allow --workspace "$PWD/tab/ws:rw" -- /bin/sh -c 'echo ran >ran.txt' 2>&1) || rc=$?
	assert_eq 125 "$rc" "moat with a moat-net.so whose table is of another build"
	assert_contains "$out" "moat-net.so is from another build"
	[ ! -e tab/ws/ran.txt ] || fail "the command ran although the plugin was refused"
	cp "$(dirname "$MOAT")/moat-net.so" tab/
	tab/moat run --quiet --net allow --workspace "$PWD/tab/ws:rw" -- /bin/sh -c 'echo ran >ran.txt' >/dev/null 2>&1 ||
		fail "control: the same copy with its plugin unchanged"
	[ -e tab/ws/ran.txt ] || fail "control: the command did not run"
}

run_test "no test-only string or symbol in the shipped moat" t_scan_shipped
run_test "control: the scan finds the switches in moat-testing" t_scan_control_testing
run_test "control: the scan finds MOAT_SELFTEST_PROBE in a doctored copy" t_scan_control_doctored
run_test "shipped moat: --test-disable-layer is unknown (exit 2), even with MOAT_TEST_LAYERS=1" t_no_layer_switch
run_test "shipped moat: MOAT_TEST_STALL_AT changes nothing (control: moat-testing stalls)" t_no_stall_hook
run_test "probes run by argv only, never by environment" t_probe_by_argv_only
run_test "each build loads only its own network plugins" t_plugin_flavours
run_test "a network plugin of another ABI is refused (control: the same copy unchanged)" t_plugin_other_abi
run_test "a moat-net.so with a foreign table is refused before the command runs (control)" t_plugin_bad_table
t_done
