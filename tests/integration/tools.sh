#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Tools people reach for (issue 18): npm under --net none gives up at once
# (no minute of retries) and moat says which flag would allow the registry.
# As root and as the unprivileged user (tests/run-all.sh). No packet leaves:
# --net none.
# shellcheck source=tests/lib/tap.sh
. "$(dirname "$0")/../lib/tap.sh"

t_net_none_no_retries_env() {
	local out
	out=$("$MOAT" run --quiet -- /bin/sh -c 'echo "npm=$npm_config_fetch_retries pip=$PIP_RETRIES"')
	assert_eq "npm=0 pip=0" "$out"
	# the user's --env wins
	out=$("$MOAT" run --quiet --env npm_config_fetch_retries=3 -- /bin/sh -c 'echo "$npm_config_fetch_retries"')
	assert_eq 3 "$out"
	# with network access the package managers keep their own defaults
	out=$("$MOAT" policy show --allow-host registry.npmjs.org 2>/dev/null | grep -c npm_config_fetch_retries || true)
	assert_eq 0 "$out"
}

t_npm_net_none_fails_fast() {
	command -v npm >/dev/null || skip "npm not installed"
	local ws="$T_OUT/proj" out rc=0 t0 t1
	mkdir -p "$ws"
	echo '{"name":"p","version":"1.0.0"}' >"$ws/package.json"
	t0=$(date +%s)
	out=$(timeout 60 "$MOAT" run --workspace "$ws" -- npm view express version 2>&1) || rc=$?
	t1=$(date +%s)
	assert_eq 1 "$rc" "npm under --net none: $out"
	[ $((t1 - t0)) -lt 30 ] || fail "npm took $((t1 - t0)) s to give up under --net none"
	assert_contains "$out" "--net none refused it"
	assert_contains "$out" "to allow: --allow-host registry.npmjs.org"
}

run_test "--net none: npm and pip told not to retry; --env overrides" t_net_none_no_retries_env
run_test "npm under --net none fails in seconds with the flag to allow" t_npm_net_none_fails_fast
t_done
