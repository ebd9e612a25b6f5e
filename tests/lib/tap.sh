# SPDX-License-Identifier: LGPL-2.1-or-later
# shellcheck shell=bash
# TAP helpers for the bash integration tests. Each test is a function run in a
# subshell with `set -euo pipefail`; `skip REASON` exits 77 from it.
set -euo pipefail

T_N=0
T_FAILED=0
T_OUT=$(mktemp -d "${TMPDIR:-/tmp}/moat-t.XXXXXX")
trap 'rm -rf "$T_OUT"' EXIT

# moat as root writes --log/--json-status/--output for the user who ran sudo
# (SUDO_UID): the tests must not depend on how make check was started
unset SUDO_UID SUDO_GID SUDO_USER
: "${MOAT:?MOAT must name the moat binary}"
: "${MOAT_TEST_DIR:=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}"
# The test build (-DMOAT_TESTING; the only binary with the test switches):
# next to the shipped one in build/test/, and so in the staged copy.
: "${MOAT_TESTING_BIN:=$(dirname "$MOAT")/test/moat-testing}"
export MOAT MOAT_TEST_DIR MOAT_TESTING_BIN

skip() {
	echo "$*" >"$T_OUT/skip"
	exit 77
}

fail() {
	echo "#   ${BASH_SOURCE[1]##*/}:${BASH_LINENO[0]}: $*"
	exit 1
}

# assert_eq WANT GOT [WHAT]
assert_eq() {
	if [ "$1" != "$2" ]; then
		echo "#   ${BASH_SOURCE[1]##*/}:${BASH_LINENO[0]}: ${3:-value}: want '$1', got '$2'"
		exit 1
	fi
}

# assert_contains HAYSTACK NEEDLE [WHAT]
assert_contains() {
	case "$1" in
	*"$2"*) ;;
	*)
		echo "#   ${BASH_SOURCE[1]##*/}:${BASH_LINENO[0]}: ${3:-output} lacks '$2': $(printf '%s' "$1" | head -c 2000)"
		exit 1
		;;
	esac
}

assert_not_contains() {
	case "$1" in
	*"$2"*)
		echo "#   ${BASH_SOURCE[1]##*/}:${BASH_LINENO[0]}: ${3:-output} must not contain '$2'"
		exit 1
		;;
	esac
}

is_root() { [ "$(id -u)" -eq 0 ]; }

run_test() {
	local name=$1
	shift
	# MOAT_TEST_ONLY=<substring>: run only the matching tests (for development;
	# the unmatched ones are not counted at all, so it is never used by make check).
	if [ -n "${MOAT_TEST_ONLY:-}" ] && [[ $name != *"$MOAT_TEST_ONLY"* ]]; then
		return 0
	fi
	T_N=$((T_N + 1))
	rm -f "$T_OUT/skip"
	local rc=0
	(
		set -euo pipefail
		cd "$T_OUT"
		"$@"
	) >"$T_OUT/log" 2>&1 || rc=$?
	local who
	who=$(id -un 2>/dev/null || id -u)
	if [ $rc -eq 0 ]; then
		echo "ok $T_N - $name [$who]"
	elif [ $rc -eq 77 ]; then
		echo "ok $T_N - $name [$who] # SKIP $(cat "$T_OUT/skip" 2>/dev/null)"
	else
		T_FAILED=$((T_FAILED + 1))
		sed 's/^/#   /' "$T_OUT/log" | tail -n 40
		echo "not ok $T_N - $name [$who] (exit $rc)"
	fi
}

t_done() {
	echo "1..$T_N"
	[ "$T_FAILED" -eq 0 ]
}
