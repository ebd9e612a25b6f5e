# shellcheck shell=bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# A local npm registry for the tests that run the user's `npm install
# express` (risk.sh): express and its dependencies pinned by
# tests/fixtures/npm/package-lock.json. The install step runs on the host,
# never through a sandbox, and talks only to the npm registry (curl, in
# tests/lib/npm_mirror.py fetch): each tarball checked against the lock's
# sha512, each registry document reduced to the versions the lock needs. The
# cache is named by the lock's hash: /var/cache/moat-test/ as root (readable
# by all, so the unprivileged run uses it too) or
# ${XDG_CACHE_HOME:-$HOME/.cache}/moat-test/ as the user. The mirror is
# served on NPM_ADDR (loopback) by a small python3 HTTP server that answers as
# registry.npmjs.org:NPM_PORT. Sourced after tap.sh.

NPM_LIB=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
NPM_LOCK="$NPM_LIB/../fixtures/npm/package-lock.json"
NPM_ADDR=127.0.0.3
NPM_HOST=registry.npmjs.org
NPM_PID=
NPM_PORT=
NPM_WHY=

# npm_mirror_dir: prints the cache directory, fetching it when missing.
npm_mirror_dir() {
	local key shared dir
	key=$(sha256sum "$NPM_LOCK" | cut -c1-16) || return 1
	shared=/var/cache/moat-test/npm-mirror-$key
	if is_root; then
		dir=$shared
	elif [ -r "$shared/complete" ]; then
		echo "$shared"
		return 0
	else
		dir=${XDG_CACHE_HOME:-$HOME/.cache}/moat-test/npm-mirror-$key
	fi
	if [ ! -r "$dir/complete" ]; then
		command -v curl >/dev/null || return 1
		(
			umask 022
			mkdir -p "$(dirname "$dir")"
			python3 "$NPM_LIB/npm_mirror.py" fetch "$NPM_LOCK" "$dir"
		) >"$T_OUT/npm-fetch.log" 2>&1 || return 1
	fi
	# a root run (today's or an older one) leaves nothing the user can't read
	if is_root; then chmod a+rx "$(dirname "$dir")" && chmod -R a+rX "$dir"; fi
	echo "$dir"
}

# start_npm_mirror: sets NPM_PORT and NPM_PID, or NPM_WHY and returns 1.
start_npm_mirror() {
	local dir
	command -v python3 >/dev/null || {
		NPM_WHY="python3 is not installed"
		return 1
	}
	dir=$(npm_mirror_dir) || {
		NPM_WHY="cannot fetch the npm mirror of tests/fixtures/npm/package-lock.json from $NPM_HOST: $(tail -3 "$T_OUT/npm-fetch.log" 2>/dev/null)"
		return 1
	}
	python3 -u "$NPM_LIB/npm_mirror.py" serve "$dir" "$NPM_ADDR" "$NPM_HOST" \
		>"$T_OUT/npm-port" 2>"$T_OUT/npm-requests" &
	NPM_PID=$!
	for _ in $(seq 100); do
		NPM_PORT=$(sed -n 's/^port \([0-9]*\)$/\1/p' "$T_OUT/npm-port")
		[ -n "$NPM_PORT" ] && return 0
		kill -0 "$NPM_PID" 2>/dev/null || break
		sleep 0.1
	done
	NPM_WHY="the npm mirror did not start on $NPM_ADDR: $(cat "$T_OUT/npm-requests")"
	return 1
}

stop_npm_mirror() {
	if [ -n "$NPM_PID" ]; then
		kill "$NPM_PID" 2>/dev/null || true
		wait "$NPM_PID" 2>/dev/null || true
	fi
	NPM_PID=
}

# need_npm_mirror: in a test; under MOAT_TEST_STRICT=1 (CI, where the
# registry is reachable) a missing mirror fails instead of skipping.
need_npm_mirror() {
	command -v npm >/dev/null || skip "npm is not installed (scripts/deps.sh)"
	command -v node >/dev/null || skip "node is not installed (scripts/deps.sh)"
	if [ -z "$NPM_PORT" ]; then
		[ "${MOAT_TEST_STRICT:-0}" = 1 ] && fail "no npm mirror: $NPM_WHY"
		skip "no npm mirror: $NPM_WHY"
	fi
	return 0
}
