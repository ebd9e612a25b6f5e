#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The worked example of the source documents (examples/data-analysis/run.sh)
# as an end-to-end test: every claim it makes is asserted (CHECK=1).
# shellcheck source=tests/lib/tap.sh
. "$(dirname "$0")/../lib/tap.sh"

t_worked_example() {
	local ex="$MOAT_TEST_DIR/../examples/data-analysis/run.sh"
	[ -f "$ex" ] || fail "missing $ex"
	local out rc=0
	out=$(CHECK=1 bash "$ex" "$T_OUT/example" 2>&1) || rc=$?
	echo "$out" | sed -n '/== what happened/,$p'
	assert_eq 0 "$rc" "worked example checks"
	assert_not_contains "$out" "[!!]"
}

run_test "the worked example: injected exfiltration refused and logged, 30 GB load stopped" t_worked_example
t_done
