#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# `moat mcp` (issue 15): the MCP server over stdio.
#  - raw JSON-RPC lines (mcp_raw.py protocol): initialize and version
#    negotiation, ping, tools/list, every tool, the output cap, a denied
#    destination with its narrow rule, several sandboxes, reset; malformed
#    input (not JSON, batches, wrong types, unknown methods, fields and
#    tools, policy fields, a timeout beyond the operator's, oversized
#    content and lines) answered with JSON-RPC errors while the server goes on;
#    with --net allow, a proxy denial reported with its rule (mcp_raw.py netallow).
#  - the official MCP TypeScript SDK client (@modelcontextprotocol/sdk from
#    the npm registry, installed into a cache outside the repository) calls
#    every tool (mcp_client.mjs); the sandbox's audit stream is checked after.
#  - the front's isolation, from /proc while it serves: exactly fds 0, 1, 2
#    and its socket; as root not uid 0 and no capabilities; no_new_privs and
#    a seccomp filter; the supervisor's stdin/stdout are /dev/null and the
#    sandbox's streams are not the MCP channel. The same checks against the
#    supervisor process report differences (positive controls).
# shellcheck source=tests/lib/tap.sh
. "$(dirname "$0")/../lib/tap.sh"

HERE=$(cd "$(dirname "$0")" && pwd)

need_python() { command -v python3 >/dev/null || skip "python3 not installed"; }

t_raw_protocol() {
	need_python
	python3 "$HERE/mcp_raw.py" protocol "$MOAT" --timeout 10s >out 2>err ||
		fail "$(grep -m1 FAIL out || tail -5 out) $(tail -5 err)"
	assert_contains "$(tail -1 out)" "all ok" "the raw protocol checks"
	# the audit stream of the default sandbox has the runs of the calls
	local id
	id=$(awk '/^log /{print $2}' out)
	[ -n "$id" ] || fail "no run id in the output"
	"$MOAT" log --json "$id" >log.jsonl || fail "moat log $id"
	assert_contains "$(grep '"type":"process"' log.jsonl)" '"argv":["sh","-c","echo out; echo err >&2; exit 3"]' \
		"the run's process in the audit stream"
	assert_contains "$(grep '"type":"net"' log.jsonl)" "denied.example" "the denied destination in the audit stream"
}

t_net_allow_denial() {
	need_python
	command -v curl >/dev/null || skip "curl not installed"
	python3 "$HERE/mcp_raw.py" netallow "$MOAT" --net allow --allow-host allowed.test >out 2>err ||
		fail "$(grep -m1 FAIL out || tail -5 out) $(tail -5 err)"
	assert_contains "$(tail -1 out)" "all ok" "the --net allow checks"
}

# The SDK's cache: root installs into a world-readable directory the
# unprivileged run reuses; a user alone installs into its own cache.
SHARED_CACHE=/var/cache/moat-test/npm
sdk_present() { [ -r "$1/node_modules/@modelcontextprotocol/sdk/package.json" ]; }

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
				--loglevel=error @modelcontextprotocol/sdk >"$dir/install.log" 2>&1
		) || return 1
		if is_root; then chmod -R a+rX "$dir"; fi
	fi
	echo "$dir"
}

t_sdk_client() {
	command -v node >/dev/null || skip "node not installed (scripts/deps.sh installs nodejs)"
	local dir
	dir=$(sdk_dir) || skip "cannot install @modelcontextprotocol/sdk from the npm registry"
	timeout 120 node "$HERE/mcp_client.mjs" "$dir" "$MOAT" --timeout 10s >out 2>err ||
		fail "$(grep -m1 FAIL out || tail -5 out) $(tail -5 err)"
	assert_contains "$(tail -1 out)" "all ok" "the SDK client's checks"
	local id log
	id=$(awk '/^run_id /{print $2}' out)
	log=$(awk '/^log /{print $2}' out)
	[ -n "$id" ] && [ -n "$log" ] || fail "no run id or log in the output: $(cat out)"
	assert_contains "$log" "$id" "the log path names the run"
	"$MOAT" log --json "$id" >log.jsonl || fail "moat log $id"
	local starts
	starts=$(grep '"type":"process"' log.jsonl)
	assert_contains "$starts" '"argv":["sh","-c","echo sdk-out; echo sdk-err >&2; exit 4"]' "run in the audit stream"
	assert_contains "$starts" '"exit_code":4' "its exit in the audit stream"
	assert_contains "$starts" '/tmp/sdk.txt' "write_file/read_file as processes of the sandbox"
	assert_contains "$(tail -1 log.jsonl)" '"type":"exit"' "the stream ends with the sandbox's exit record"
}

# fdset PID: "FD=WHAT ..." (readlink of /proc/PID/fd/*; socket inodes dropped)
fdset() {
	local f t out=""
	for f in $(find "/proc/$1/fd" -mindepth 1 -maxdepth 1 -printf '%f\n' | sort -n); do
		t=$(readlink "/proc/$1/fd/$f") || continue
		case $t in socket:\[*) t=socket ;; esac
		out="${out:+$out }$f=$t"
	done
	printf '%s\n' "$out"
}

status_field() { awk -v k="$2:" '$1 == k { $1 = ""; sub(/^ /, ""); print; exit }' "/proc/$1/status"; }

# isolated PID WANT_FDS GOT_FDS: empty if the process is isolated as the
# front must be, else what differs
isolated() {
	local pid=$1 want=$2 got=$3 why=""
	[ "$got" = "$want" ] || why="$why fds '$got';"
	[ "$(status_field "$pid" Seccomp)" = 2 ] || why="$why Seccomp $(status_field "$pid" Seccomp);"
	[ "$(status_field "$pid" NoNewPrivs)" = 1 ] || why="$why NoNewPrivs $(status_field "$pid" NoNewPrivs);"
	[ "$(status_field "$pid" CapEff)" = 0000000000000000 ] || why="$why CapEff $(status_field "$pid" CapEff);"
	[ "$(status_field "$pid" CapPrm)" = 0000000000000000 ] || why="$why CapPrm;"
	if is_root; then
		case " $(status_field "$pid" Uid) " in *" 0 "*) why="$why uid 0;" ;; esac
		[ "$(status_field "$pid" CapBnd)" = 0000000000000000 ] || why="$why CapBnd;"
	fi
	printf '%s' "$why"
}

t_front_isolation() {
	need_python
	local d=$PWD server front="" i
	# shellcheck disable=SC2064 # $d now: the holder ends whatever happens
	trap "touch '$d/release'" EXIT
	python3 "$HERE/mcp_raw.py" hold "$MOAT" "$d" --timeout 10s >hold.out 2>&1 &
	local holder=$!
	for i in $(seq 1 300); do
		[ -s "$d/info" ] && break
		sleep 0.1
	done
	[ -s "$d/info" ] || {
		kill "$holder" 2>/dev/null
		fail "the server did not answer: $(cat hold.out "$d/server.err" 2>/dev/null)"
	}
	server=$(awk '/^server /{print $2}' "$d/info")
	local to_server from_server
	to_server=$(awk '/^to_server /{print $2}' "$d/info")
	from_server=$(awk '/^from_server /{print $2}' "$d/info")
	for i in /proc/[0-9]*; do
		[ "$(awk '{print $4}' "$i/stat" 2>/dev/null | head -1)" = "$server" ] || continue
		case "$(tr '\0' ' ' <"$i/cmdline" 2>/dev/null)" in
		"moat __mcp-front "*) front=${i#/proc/} ;;
		esac
	done
	local why_front why_super super_fds front_fds="" want
	want="0=$to_server 1=$from_server 2=$d/server.err 3=socket"
	if [ -n "$front" ]; then
		super_fds=$(fdset "$server")
		if is_root; then
			front_fds=$(fdset "$front")
		else
			# non-dumpable: its table is closed to the user; what it
			# reported of itself (its stderr line) is the view left
			front_fds=$(fdset "$front" 2>/dev/null) || true
			[ -z "$front_fds" ] || fail "the user can read the front's descriptor table"
		fi
		why_super=$(isolated "$server" "$want" "$super_fds")
	fi
	local report
	report=$(grep -m1 "^moat mcp: front $front " "$d/server.err" || true)
	[ -n "$report" ] || fail "no report of the front $front: $(cat "$d/server.err")"
	# "0=pipe 1=pipe ...": the report drops the inodes
	assert_contains "$report" "fds 0=pipe 1=pipe 2=$d/server.err 3=socket, seccomp on" "the front's own report"
	if is_root; then assert_not_contains "$report" "(uid 0)" "the front's uid"; fi
	# (as the user, the report above is the fd check: exactly these four)
	if ! is_root; then front_fds=$want; fi
	[ -z "$front" ] || why_front=$(isolated "$front" "$want" "$front_fds")
	touch "$d/release"
	wait "$holder" || fail "holder: $(cat hold.out)"
	[ -n "$front" ] || fail "no moat __mcp-front child of $server"
	assert_eq "" "$why_front" "the front holds exactly 0-2 and its socket, no privilege, seccomp on"
	# positive control: the same check reports the supervisor (which holds
	# the sandbox's descriptors, no filter of its own, as root uid 0)
	[ -n "$why_super" ] || fail "the isolation check does not tell the supervisor from the front"
	assert_contains "$why_super" "fds" "control: the supervisor's descriptors differ"
	assert_contains "$why_super" "Seccomp" "control: the supervisor has no filter of its own"
	if is_root; then assert_contains "$why_super" "uid 0" "control: the supervisor is root"; fi
	# the MCP channel is the front's alone
	assert_contains "$super_fds" "0=/dev/null 1=/dev/null 2=$d/server.err" "the supervisor's stdin/stdout are /dev/null"
	assert_not_contains "$super_fds" "$to_server" "the supervisor does not hold the client's pipe"
	local sfds
	sfds=$(tr '\n' ' ' <"$d/sandbox.fds")
	assert_not_contains "$sfds" "$to_server" "the sandbox's stdin is not the MCP channel"
	assert_not_contains "$sfds" "$from_server" "the sandbox's stdout is not the MCP channel"
	assert_contains "$sfds" "pipe:" "the sandbox's streams are pipes of their own"
	assert_contains "$(cat hold.out)" "rc 0" "the server ends when the client closes stdin"
}

t_usage() {
	local rc=0
	"$MOAT" mcp -- sh >out 2>err </dev/null || rc=$?
	assert_eq 2 "$rc" "a command after moat mcp is a usage error"
	rc=0
	"$MOAT" mcp --no-such-option </dev/null >out 2>err || rc=$?
	assert_eq 2 "$rc" "a bad option"
	rc=0
	"$MOAT" __mcp-front </dev/null >out 2>err || rc=$?
	assert_eq 125 "$rc" "the front without its socket refuses to start"
	assert_contains "$(cat err)" "descriptors" "and says why"
	rc=0
	"$MOAT" mcp </dev/null >out 2>err || rc=$?
	assert_eq 0 "$rc" "an empty session ends cleanly"
	assert_eq "" "$(cat out)" "nothing on stdout"
}

run_test "raw JSON-RPC: every tool, malformed input, limits" t_raw_protocol
run_test "--net allow: a proxy denial with its narrow rule" t_net_allow_denial
run_test "the MCP TypeScript SDK client calls every tool; audit stream" t_sdk_client
run_test "the front: exactly its descriptors, unprivileged, seccomp (control: supervisor)" t_front_isolation
run_test "moat mcp usage and the front alone" t_usage
t_done
