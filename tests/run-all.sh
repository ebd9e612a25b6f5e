#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Runs every test suite (unit, fuzz corpus replay, integration and red-team as
# root and as an unprivileged user) and prints one summary line:
#   N passed, N failed, N skipped
# MOAT_TEST_STRICT=1 turns every skip into a failure. MOAT_SUITES="a b" runs
# the unit tests and only the named integration/red-team scripts.
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top" || exit 2
O=${O:-build}
strict=${MOAT_TEST_STRICT:-0}
results=$(mktemp -d /tmp/moat-results.XXXXXX)
trap 'rm -rf "$results"; [ -n "${stage:-}" ] && rm -rf "$stage"' EXIT

suite=0
# run_suite NAME CMD...: runs a TAP-producing command, keeps its output.
run_suite() {
	local name=$1
	shift
	suite=$((suite + 1))
	local out
	out="$results/$(printf '%03d' $suite)-$name.tap"
	echo "== $name"
	local rc=0
	"$@" >"$out" 2>&1 || rc=$?
	# Show failures and skips in full, passes as one line each.
	cat "$out"
	if [ $rc -ne 0 ] && ! grep -q '^not ok' "$out"; then
		echo "not ok - suite $name exited $rc without reporting a failure" | tee -a "$out"
	fi
}

run_suite unit "$O/unit-tests"

# Fuzz corpora replay: every target against its committed corpus.
fuzz_replay() {
	local n=0 f t
	for f in "$O"/fuzz/fuzz_*; do
		[ -x "$f" ] || continue
		t=${f##*/}
		n=$((n + 1))
		if [ ! -d "fuzz/corpus/${t#fuzz_}" ]; then
			echo "not ok $n - replay $t (no corpus fuzz/corpus/${t#fuzz_})"
		elif "$f" "fuzz/corpus/${t#fuzz_}" >/dev/null 2>"$results/fuzz.err"; then
			echo "ok $n - replay $t"
		else
			sed 's/^/#   /' "$results/fuzz.err" | tail -20
			echo "not ok $n - replay $t"
		fi
	done
	echo "1..$n"
}
run_suite fuzz-replay fuzz_replay

# Stage the binaries and tests where an unprivileged user can read them.
stage=$(mktemp -d /tmp/moat-check.XXXXXX)
chmod 755 "$stage"
mkdir -p "$stage/bin"
cp "$O/moat" "$O/moat-serve-front" "$O/moat-net.so" "$O/moat-nft.so" "$stage/bin/"
# The test build and its own plugins (the tests that need a test switch).
mkdir -p "$stage/bin/test"
cp "$O/test/moat-testing" "$O/test/moat-serve-front" "$O/test/moat-net.so" "$O/test/moat-nft.so" "$stage/bin/test/"
[ -d "$O/probes" ] && cp -r "$O/probes" "$stage/probes"
[ -d "$O/testbin" ] && cp -r "$O/testbin" "$stage/testbin"
cp -r tests "$stage/tests"
# serve.sh checks the implementation against the API's document and route table
mkdir -p "$stage/docs" "$stage/src/api"
cp docs/openapi.json "$stage/docs/"
cp src/api/serve_route.c "$stage/src/api/"
cp -r examples "$stage/examples" 2>/dev/null || true
chmod -R a+rX "$stage"

testuser=moat-test
if [ "$(id -u)" -eq 0 ]; then
	if ! id "$testuser" >/dev/null 2>&1; then
		useradd --system --no-create-home --home-dir /nonexistent --shell /bin/bash "$testuser" ||
			echo "warning: could not create $testuser" >&2
	fi
fi

as_user() {
	if [ "$(id -u)" -ne 0 ]; then
		"$@"
	elif id "$testuser" >/dev/null 2>&1; then
		runuser -u "$testuser" -- env -u HOME HOME=/tmp "$@"
	else
		echo "not ok 1 - cannot create unprivileged user $testuser"
		echo "1..1"
		return 1
	fi
}

# The layers' unit tests apply steps in namespaces of their own: once more as
# the unprivileged user (the run above was the caller's, root in CI).
if [ "$(id -u)" -eq 0 ]; then
	cp "$O/unit-tests" "$stage/bin/unit-tests"
	chmod a+rx "$stage/bin/unit-tests"
	run_suite unit-layers-user as_user env MOAT_TEST_DIR="$stage/tests" \
		"$stage/bin/unit-tests" layers_
fi

for t in tests/integration/*.sh tests/redteam/*.sh; do
	[ -f "$t" ] || continue
	name=$(basename "$t" .sh)
	# MOAT_SUITES="network audit": only these integration/red-team scripts
	# (for development; CI runs every one).
	if [ -n "${MOAT_SUITES:-}" ] && [[ " $MOAT_SUITES " != *" $name "* ]]; then
		continue
	fi
	# The vm level runs moat itself as the guest's PID 1, before any /proc:
	# a sanitizer build's runtime cannot start there (the guest ends before
	# its init serves the control port). The vm suite runs in the release
	# check only; the sanitizer run says so instead of counting anything.
	if [ "$name" = vm ] && [ "${BUILD:-release}" = san ]; then
		echo "# vm: not run under BUILD=san (a sanitizer runtime cannot be the guest's PID 1); the release check runs it"
		continue
	fi
	env_common=(MOAT="$stage/bin/moat" MOAT_TESTING_BIN="$stage/bin/test/moat-testing"
		MOAT_TEST_DIR="$stage/tests" MOAT_PROBES="$stage/probes" MOAT_TESTBIN="$stage/testbin"
		MOAT_SRC="$top" MOAT_TEST_STRICT="$strict")
	if [ "$(id -u)" -eq 0 ]; then
		run_suite "$name-root" env "${env_common[@]}" bash "$stage/$t"
	fi
	run_suite "$name-user" as_user env "${env_common[@]}" bash "$stage/$t"
done

cat "$results"/*.tap >"$results/all"
passed=$(grep -c '^ok ' "$results/all" | tr -d ' ')
skipped=$(grep -c '^ok .*# SKIP' "$results/all" | tr -d ' ')
failed=$(grep -c '^not ok' "$results/all" | tr -d ' ')
passed=$((passed - skipped))
if [ "$strict" = 1 ] && [ "$skipped" -gt 0 ]; then
	echo "MOAT_TEST_STRICT=1: $skipped skipped test(s) count as failed:"
	grep '^ok .*# SKIP' "$results/all"
	failed=$((failed + skipped))
	skipped=0
fi
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
