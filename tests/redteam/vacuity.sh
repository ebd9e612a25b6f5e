#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# shellcheck disable=SC2317 # test functions are called indirectly by run_test
#
# The battery must not pass vacuously: run it against tests/redteam/nosandbox
# (a `moat run` that applies no sandbox at all, as the unprivileged user) and
# check that every test whose attack an unprivileged user can carry out on a
# bare host FAILs there. The remaining tests (listed below with the reason) are
# ones where being an unprivileged host user already stops the attempt, so
# they can only tell moat apart from root or from a namespace.
# shellcheck source=../lib/tap.sh
. "${MOAT_TEST_DIR:-$(cd "$(dirname "$0")/.." && pwd)}/lib/tap.sh"

: "${MOAT_PROBES:?MOAT_PROBES must name the directory of built probes}"

# Not expected to fail without a sandbox, and why:
#   environment and sandbox sanity: not an attack
#   RT-011: a host user has no CAP_NET_ADMIN in the host netns
#   RT-024, RT-073: the real /proc/sys and cgroup files belong to host root
#   RT-031: the target is the host's pid 1, not the user's
#   RT-037: depends on whether the host's own mounts are shared
exempt='environment and sandbox sanity|RT-011 |RT-024 |RT-031 |RT-037 |RT-073 '

t_battery_fails_without_sandbox() {
	local out bad
	out=$(MOAT="$MOAT_TEST_DIR/redteam/nosandbox" bash "$MOAT_TEST_DIR/redteam/battery.sh" 2>&1 || true)
	grep -E '^(ok|not ok) ' <<<"$out" | sed 's/^/# /' || true
	bad=$(grep -E '^ok ' <<<"$out" | grep -vE " - ($exempt)" || true)
	[ -z "$bad" ] || fail "passed without any sandbox (vacuous): $bad"
	grep -q '^not ok ' <<<"$out" || fail "nothing failed without a sandbox"
}

run_test "battery fails without a sandbox" t_battery_fails_without_sandbox
t_done
