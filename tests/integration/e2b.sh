#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# `moat serve --e2b` (issue 15, docs/E2B.md) against the official E2B
# JavaScript SDK from the npm registry (e2b, pinned below), unmodified and
# configured only by its environment variables (E2B_API_URL,
# E2B_SANDBOX_URL: the one --listen address; E2B_API_KEY: a tenant's token
# in E2B's e2b_<hex> form):
#  - the scenario (e2b_client.mjs): create, a command with streamed output
#    (the first line before the end), exit codes, a background command
#    waited for and one killed, files written, read and listed, seen by the
#    sandbox's commands and through moat's own /v1 API in both directions;
#    kill; afterwards the sandbox is gone for the SDK, for /v1, and in the
#    process tree (no process of it under the server).
#  - negative controls: a wrong key is refused (401 for create and kill;
#    the server started no sandbox for it); another tenant's key does not
#    find the first tenant's sandbox; without --e2b the E2B paths are 404.
# Bounded: each client run has a timeout; the whole suite takes ~10 s.
# shellcheck source=tests/lib/tap.sh
. "$(dirname "$0")/../lib/tap.sh"

HERE=$(cd "$(dirname "$0")" && pwd)
E2B_VERSION=2.51.0

# The SDK's cache: root installs into a world-readable directory the
# unprivileged run reuses; a user alone installs into its own cache.
SHARED_CACHE=/var/cache/moat-test/npm
sdk_present() {
	[ -r "$1/node_modules/e2b/package.json" ] &&
		grep -q "\"version\": \"$E2B_VERSION\"" "$1/node_modules/e2b/package.json"
}

sdk_dir() {
	local dir
	if is_root; then
		dir=$SHARED_CACHE
	elif sdk_present "$SHARED_CACHE"; then
		echo "$SHARED_CACHE"
		return 0
	else
		dir=${XDG_CACHE_HOME:-$HOME/.cache}/moat-test/npm
	fi
	if ! sdk_present "$dir"; then
		command -v npm >/dev/null || return 1
		(
			umask 022
			mkdir -p "$dir"
			npm install --prefix "$dir" --cache "$dir/.npm-cache" --no-audit --no-fund \
				--loglevel=error --save-exact "e2b@$E2B_VERSION" >"$dir/install-e2b.log" 2>&1
		) || return 1
		if is_root; then chmod -R a+rX "$dir"; fi
	fi
	echo "$dir"
}

need_sdk() {
	command -v node >/dev/null || skip "node not installed (scripts/deps.sh installs nodejs)"
	command -v curl >/dev/null || skip "curl not installed"
	SDK=$(sdk_dir) || skip "cannot install e2b@$E2B_VERSION from the npm registry"
}

KEY_A=e2b_$(head -c 20 /dev/urandom | od -An -tx1 | tr -d ' \n')
KEY_B=e2b_$(head -c 20 /dev/urandom | od -An -tx1 | tr -d ' \n')
KEY_WRONG=e2b_$(head -c 20 /dev/urandom | od -An -tx1 | tr -d ' \n')

free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# start_serve [OPTIONS...]: moat serve on a free loopback port with two
# tenants; sets PORT and SERVE_PID.
start_serve() {
	umask 077
	printf '{"tenants":[{"name":"a","token":"%s"},{"name":"b","token":"%s"}]}\n' \
		"$KEY_A" "$KEY_B" >tokens.json
	PORT=$(free_port)
	# unprivileged, serve's limits need the rlimit fallback (named, as
	# limits.sh does); root has cgroups
	is_root || set -- "$@" --allow-degraded cgroup
	"$MOAT" serve --listen "127.0.0.1:$PORT" --token-file tokens.json --socket "$PWD/serve.sock" \
		"$@" >serve.out 2>serve.err &
	SERVE_PID=$!
	local _
	for _ in $(seq 1 100); do
		if curl -s -o /dev/null "http://127.0.0.1:$PORT/v1/health" 2>/dev/null; then
			return 0
		fi
		kill -0 "$SERVE_PID" 2>/dev/null || fail "moat serve exited: $(cat serve.err)"
		sleep 0.1
	done
	fail "moat serve did not listen: $(cat serve.err)"
}

stop_serve() {
	[ -n "${SERVE_PID:-}" ] || return 0
	kill "$SERVE_PID" 2>/dev/null || true
	wait "$SERVE_PID" 2>/dev/null || true
	SERVE_PID=
}

# descendants PID: the pids of every process below PID
descendants() {
	local p
	for p in $(cat "/proc/$1/task/"*/children 2>/dev/null); do
		echo "$p"
		descendants "$p"
	done
}

v1() { curl -s -H "Authorization: Bearer $KEY_A" "$@"; }

t_sdk_scenario() {
	need_sdk
	start_serve --e2b
	trap stop_serve EXIT
	local before
	before=$(descendants "$SERVE_PID" | wc -l)
	export E2B_API_URL="http://127.0.0.1:$PORT" E2B_SANDBOX_URL="http://127.0.0.1:$PORT" \
		E2B_API_KEY="$KEY_A"
	coproc CLIENT { timeout 120 node "$HERE/e2b_client.mjs" "$SDK" scenario 2>&1; }
	# bash forgets CLIENT_PID once the client ends
	local cpid=$CLIENT_PID line id="" during
	while IFS= read -r -t 90 line <&"${CLIENT[0]}"; do
		echo "$line" >>client.out
		case $line in
		"ready "*)
			id=${line#ready }
			break
			;;
		FAIL*) fail "$line" ;;
		esac
	done
	[ -n "$id" ] || fail "the client did not get ready: $(tail -5 client.out)"
	# the SDK's file through moat's own API, and one the other way
	assert_eq "seen from outside" "$(v1 "http://127.0.0.1:$PORT/v1/sandboxes/$id/files?path=/tmp/keep.txt")" \
		"the SDK's file read through /v1"
	v1 -X PUT --data-binary "written through /v1" -o /dev/null -w '%{http_code}' \
		"http://127.0.0.1:$PORT/v1/sandboxes/$id/files?path=/tmp/from-v1.txt" >put.code
	assert_contains "$(cat put.code)" "20" "a file written through /v1"
	during=$(descendants "$SERVE_PID" | wc -l)
	[ "$during" -gt "$before" ] || fail "no process of the sandbox under the server ($before, $during)"
	echo go >&"${CLIENT[1]}"
	while IFS= read -r -t 90 line <&"${CLIENT[0]}"; do
		echo "$line" >>client.out
	done
	wait "$cpid" || fail "the client failed: $(grep -m1 FAIL client.out || tail -5 client.out)"
	assert_contains "$(tail -1 client.out)" "all ok" "the SDK scenario's checks"
	assert_contains "$(cat client.out)" "ok the SDK reads the file written through /v1" "the /v1 file seen by the SDK"
	# gone: for /v1 and in the process tree
	assert_eq 404 "$(v1 -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/v1/sandboxes/$id")" \
		"the killed sandbox through /v1"
	local after _
	for _ in $(seq 1 50); do
		after=$(descendants "$SERVE_PID" | wc -l)
		[ "$after" -le "$before" ] && break
		sleep 0.1
	done
	assert_eq "$before" "$after" "processes under the server after the kill"
}

t_wrong_key_and_tenants() {
	need_sdk
	start_serve --e2b
	trap stop_serve EXIT
	export E2B_API_URL="http://127.0.0.1:$PORT" E2B_SANDBOX_URL="http://127.0.0.1:$PORT"
	# tenant a's sandbox, made with the raw REST call the SDK makes
	local id
	id=$(curl -s -X POST -H "X-API-KEY: $KEY_A" -H 'Content-Type: application/json' \
		-d '{"templateID":"base"}' "http://127.0.0.1:$PORT/v2/sandboxes" |
		python3 -c 'import json,sys; print(json.load(sys.stdin)["sandboxID"])') ||
		fail "create with tenant a's key"
	[ -n "$id" ] || fail "no sandbox id"
	E2B_API_KEY=$KEY_WRONG MOAT_E2B_OTHER_ID=$id timeout 60 node "$HERE/e2b_client.mjs" "$SDK" wrongkey \
		>wrong.out 2>&1 || fail "$(grep -m1 FAIL wrong.out || tail -5 wrong.out)"
	assert_contains "$(tail -1 wrong.out)" "all ok" "a wrong key is refused"
	E2B_API_KEY=$KEY_B MOAT_E2B_OTHER_ID=$id timeout 60 node "$HERE/e2b_client.mjs" "$SDK" other \
		>other.out 2>&1 || fail "$(grep -m1 FAIL other.out || tail -5 other.out)"
	assert_contains "$(tail -1 other.out)" "all ok" "another tenant does not find it"
	# the envd side: a wrong access token for tenant a's sandbox
	local code
	code=$(curl -s -o envd.out -w '%{http_code}' -X POST -H "E2b-Sandbox-Id: $id" \
		-H "X-Access-Token: $KEY_WRONG" -H 'Content-Type: application/json' -d '{}' \
		"http://127.0.0.1:$PORT/process.Process/List")
	assert_eq 401 "$code" "Process/List with a wrong access token"
	code=$(curl -s -o envd.out -w '%{http_code}' -X POST -H "E2b-Sandbox-Id: $id" \
		-H "X-Access-Token: $KEY_B" -H 'Content-Type: application/json' -d '{}' \
		"http://127.0.0.1:$PORT/process.Process/List")
	assert_eq 404 "$code" "Process/List of another tenant's sandbox"
	# positive control: tenant a's own token lists it
	code=$(curl -s -o envd.out -w '%{http_code}' -X POST -H "E2b-Sandbox-Id: $id" \
		-H "X-Access-Token: $KEY_A" -H 'Content-Type: application/json' -d '{}' \
		"http://127.0.0.1:$PORT/process.Process/List")
	assert_eq 200 "$code" "Process/List with the right token (control)"
	# the wrong key left tenant a's sandbox alone, and started none
	assert_eq 200 "$(v1 -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/v1/sandboxes/$id")" \
		"tenant a's sandbox is still there"
	assert_eq 1 "$(v1 "http://127.0.0.1:$PORT/v1/sandboxes" | python3 -c \
		'import json,sys; print(len(json.load(sys.stdin)["sandboxes"]))')" "one sandbox in all"
	code=$(curl -s -o /dev/null -w '%{http_code}' -X DELETE -H "X-API-KEY: $KEY_A" \
		"http://127.0.0.1:$PORT/sandboxes/$id")
	assert_eq 204 "$code" "kill with the right key"
}

t_without_e2b() {
	command -v curl >/dev/null || skip "curl not installed"
	start_serve
	trap stop_serve EXIT
	local code
	code=$(curl -s -o out -w '%{http_code}' -X POST -H "X-API-KEY: $KEY_A" \
		-H 'Content-Type: application/json' -d '{}' "http://127.0.0.1:$PORT/v2/sandboxes")
	assert_eq 404 "$code" "POST /v2/sandboxes without --e2b"
	code=$(curl -s -o out -w '%{http_code}' -X POST -H "E2b-Sandbox-Id: x" \
		-H 'Content-Type: application/json' -d '{}' "http://127.0.0.1:$PORT/process.Process/List")
	assert_eq 404 "$code" "the envd paths without --e2b"
}

run_test "the E2B SDK: create, streamed and background commands, files, kill; gone after" t_sdk_scenario
run_test "a wrong key is refused; another tenant's sandbox is not found (control: the owner)" t_wrong_key_and_tenants
run_test "without --e2b, no E2B path answers" t_without_e2b
t_done
