#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# A later run never follows what an earlier sandbox planted (issue 13, item 4).
# A first `moat run --workspace WS:rw` replaces paths in the workspace with
# symlinks; a second run given such a path for any option refuses (exit 125,
# naming the link) and the link's target is neither read, written nor mounted.
# Run as root and as an unprivileged user by tests/run-all.sh.
# shellcheck source=tests/lib/tap.sh
. "$(dirname "$0")/../lib/tap.sh"

mrun() { "$MOAT" run --quiet "$@"; }

# A directory outside the workspace the sandbox cannot see, with a marker.
SECRET="$T_OUT/secret"
mkdir -p "$SECRET/inner" "$SECRET/etc"
echo "SECRET-MARKER-$$" >"$SECRET/marker"
echo "SECRET-MARKER-$$" >"$SECRET/inner/marker"
echo "ID=secret-$$" >"$SECRET/etc/os-release"
chmod -R a+rX "$SECRET"
snapshot() { (cd "$SECRET" && find . -printf '%p %y %s %T@\n' | sort && cat marker); }
SNAP0=$(snapshot)

# The positive control never runs as host root: as root it runs inside a
# throw-away user + mount namespace, otherwise as the unprivileged caller.
ctl() {
	if is_root; then
		unshare -Urm -- "$@"
	else
		"$@"
	fi
}

# plant WS SCRIPT: the first run, whose sandbox writes into WS.
plant() {
	# the planting run is the attacker's: the workspace holds a hard link to
	# a file outside on purpose (for the --log refusal), hence --allow-hardlinks
	mrun --allow-hardlinks --workspace "$1:rw" -- /bin/sh -c "$2"
}

# refused WANT_LINK RUN-ARGS...: `moat run RUN-ARGS` exits 125 and names the link.
refused() {
	local link=$1 rc=0 err
	shift
	err=$(timeout 60 "$MOAT" run --quiet "$@" 2>&1 </dev/null) || rc=$?
	assert_eq 125 "$rc" "exit of: moat run $* ($err)"
	assert_contains "$err" "$link is a symlink"
	assert_not_contains "$err" "SECRET-MARKER"
}

untouched() {
	assert_eq "$SNAP0" "$(snapshot)" "the secret directory after the runs"
}

WS="$T_OUT/ws"
mkdir -p "$WS/real"
echo "REAL-$$" >"$WS/real/marker"
plant "$WS" "
	ln -s '$SECRET' dlink
	ln -s ../secret rel
	ln -s '$SECRET/marker' flink
	ln -s '$T_OUT/nowhere/deeper' dangling
	mkdir -p logs && ln -s '$SECRET' logs/x
	mkfifo fifo
	mkdir status.json.d
"

t_control_plant_reaches_secret() {
	# what a plain program (not moat) meets at the planted paths
	assert_eq "SECRET-MARKER-$$" "$(ctl cat "$WS/dlink/marker")" "control: directory link"
	assert_eq "SECRET-MARKER-$$" "$(ctl cat "$WS/flink")" "control: file link"
	assert_eq "SECRET-MARKER-$$" "$(ctl cat "$WS/rel/marker")" "control: relative link"
	assert_eq "SECRET-MARKER-$$" "$(ctl cat "$WS/dlink/inner/marker")" "control: link mid-path"
	[ -L "$WS/dangling" ] && [ ! -e "$WS/dangling" ] || fail "control: the dangling link"
	[ -p "$WS/fifo" ] || fail "control: the fifo"
}

t_workspace_links() {
	refused "$WS/dlink" --workspace "$WS/dlink" -- /bin/cat marker
	refused "$WS/rel" --workspace "$WS/rel" -- /bin/cat marker
	refused "$WS/dlink" --workspace "$WS/dlink/inner:rw" -- /bin/cat marker
	refused "$WS/dlink" --workspace "$WS/dlink:overlay" -- /bin/cat marker
	refused "$WS/dangling" --workspace "$WS/dangling" -- /bin/true
	refused "$WS/flink" --workspace "$WS/flink" -- /bin/true
	untouched
	# control: the real directory next to them works, and so does the
	# resolved path the error suggests
	assert_eq "REAL-$$" "$(mrun --workspace "$WS/real" -- /bin/cat marker)"
	local err
	err=$(mrun --workspace "$WS/dlink" -- /bin/true 2>&1) || true
	assert_contains "$err" "pass the resolved path instead: $SECRET"
	assert_eq "SECRET-MARKER-$$" "$(mrun --workspace "$SECRET" -- /bin/cat marker)"
}

t_bind_sources() {
	refused "$WS/dlink" --ro "$WS/dlink:/opt/x" -- /bin/cat /opt/x/marker
	refused "$WS/dlink" --rw "$WS/dlink:/opt/x" -- /bin/sh -c 'echo w > /opt/x/new'
	refused "$WS/dlink" --ro "$WS/dlink/inner:/opt/x" -- /bin/cat /opt/x/marker
	refused "$WS/flink" --ro "$WS/flink:/opt/x" -- /bin/cat /opt/x
	refused "$WS/dlink" --input "$WS/dlink" -- /bin/cat /data/marker
	refused "$WS/dangling" --ro "$WS/dangling:/opt/x" -- /bin/true
	# the workspace given too: sources beneath it are no different
	refused "$WS/dlink" --workspace "$WS" --ro "$WS/dlink:/opt/x" -- /bin/true
	untouched
	# control: real sources bind
	assert_eq "REAL-$$" "$(mrun --ro "$WS/real:/opt/x" -- /bin/cat /opt/x/marker)"
	assert_eq "REAL-$$" "$(mrun --input "$WS/real" -- /bin/cat /data/marker)"
}

t_output() {
	refused "$WS/dlink" --output "$WS/dlink/out" -- /bin/sh -c 'echo o > /output/f'
	refused "$WS/dlink" --output "$WS/dlink" --output-overwrite -- /bin/sh -c 'echo o > /output/f'
	refused "$WS/dangling" --output "$WS/dangling" -- /bin/sh -c 'echo o > /output/f'
	[ ! -e "$T_OUT/nowhere" ] || fail "--output created the dangling link's target"
	untouched
	# control
	mrun --output "$WS/real/out" -- /bin/sh -c 'echo o > /output/f'
	assert_eq o "$(cat "$WS/real/out/f")"
}

t_log_and_status() {
	refused "$WS/logs/x" --log "$WS/logs/x/log.jsonl" -- /bin/true
	refused "$WS/flink" --log "$WS/flink" -- /bin/true
	refused "$WS/dangling" --log "$WS/dangling" -- /bin/true
	refused "$WS/dangling" --log "$WS/dangling/x.jsonl" -- /bin/true
	refused "$WS/flink" --json-status "$WS/flink" -- /bin/true
	refused "$WS/dlink" --json-status "$WS/dlink/s.json" -- /bin/true
	[ ! -e "$T_OUT/nowhere" ] || fail "--log created the dangling link's target"
	untouched
	# a fifo, a directory or a file with a second name is never written
	local rc=0 err
	err=$(timeout 30 "$MOAT" run --quiet --log "$WS/fifo" -- /bin/true 2>&1) || rc=$?
	assert_eq 125 "$rc" "--log at a fifo ($err)"
	rc=0
	err=$(timeout 30 "$MOAT" run --quiet --json-status "$WS/status.json.d" -- /bin/true 2>&1) || rc=$?
	assert_eq 125 "$rc" "--json-status at a directory ($err)"
	cp "$SECRET/marker" "$T_OUT/own-file"
	ln "$T_OUT/own-file" "$WS/hardlink"
	rc=0
	err=$("$MOAT" run --quiet --log "$WS/hardlink" -- /bin/true 2>&1) || rc=$?
	assert_eq 125 "$rc" "--log at a file with two links ($err)"
	assert_contains "$err" "more than one hard link"
	assert_eq "SECRET-MARKER-$$" "$(cat "$T_OUT/own-file")"
	# `moat log` and --policy read no planted link either
	rc=0
	err=$("$MOAT" log "$WS/flink" 2>&1) || rc=$?
	[ "$rc" -ne 0 ] || fail "moat log read through a planted link"
	assert_not_contains "$err" "SECRET-MARKER"
	rc=0
	err=$(mrun --policy "$WS/flink" -- /bin/true 2>&1) || rc=$?
	[ "$rc" -ne 0 ] || fail "--policy read through a planted link"
	assert_contains "$err" "symlink"
	# a secret's from_file is read by moat on the host: never through a link
	printf '{"version":1,"secrets":[{"name":"T","from_file":"%s","hosts":["a.test"]}]}' \
		"$WS/flink" >"$T_OUT/secret-policy.json"
	rc=0
	err=$(mrun --policy "$T_OUT/secret-policy.json" -- /bin/true 2>&1) || rc=$?
	assert_eq 125 "$rc" "a secret from a planted link ($err)"
	assert_contains "$err" "symlink"
	printf '{"version":1,"secrets":[{"name":"T","from_file":"%s","hosts":["a.test"]}]}' \
		"$SECRET/marker" >"$T_OUT/secret-policy.json"
	mrun --policy "$T_OUT/secret-policy.json" -- /bin/true
	# control: real paths are written
	mrun --log "$WS/real/log.jsonl" --json-status "$WS/real/s.json" -- /bin/true
	grep -q '"type":"exit"' "$WS/real/log.jsonl" || fail "control: the log"
	grep -q '"reason":"exited"' "$WS/real/s.json" || fail "control: the status"
}

t_rootfs() {
	[ -x /bin/busybox ] || fail "busybox-static is required (scripts/deps.sh installs it)"
	local r="$WS/rootfs" a out
	mkdir -p "$r/usr/bin" "$r/etc"
	ln -s usr/bin "$r/bin"
	cp /bin/busybox "$r/usr/bin/busybox"
	for a in sh cat; do ln -s busybox "$r/usr/bin/$a"; done
	echo "ID=rootfs-$$" >"$r/etc/os-release"
	# control: the tree works as a rootfs (its /bin is a symlink: mirrored)
	out=$(mrun --rootfs "$r" -- /bin/cat /etc/os-release)
	assert_eq "ID=rootfs-$$" "$out"
	# a sandbox replaces the tree's etc with a link to the secret
	plant "$WS" "mv rootfs/etc rootfs/etc.real && ln -s '$SECRET/etc' rootfs/etc"
	assert_eq "ID=secret-$$" "$(ctl cat "$r/etc/os-release")" "control: the planted etc"
	local rc=0 err
	err=$(mrun --rootfs "$r" -- /bin/cat /etc/os-release 2>&1) || rc=$?
	assert_eq 125 "$rc" "--rootfs whose etc is a planted link ($err)"
	assert_contains "$err" "/etc"
	assert_not_contains "$err" "secret-$$"
	# and the rootfs itself, or a directory on the way to it, as a link
	plant "$WS" "rm rootfs/etc && mv rootfs/etc.real rootfs/etc && ln -s '$SECRET' rootlink"
	refused "$WS/rootlink" --rootfs "$WS/rootlink" -- /bin/true
	# a link at the top of the tree is recreated inside the sandbox (as
	# /bin -> usr/bin is), never followed on the host: the secret stays out
	plant "$WS" "ln -s '$SECRET' rootfs/opt"
	assert_eq "SECRET-MARKER-$$" "$(ctl cat "$r/opt/marker")" "control: the planted opt"
	out=$(mrun --rootfs "$r" -- /bin/sh -c "cat /opt/marker; cat '$SECRET/marker'" 2>&1) || true
	assert_not_contains "$out" "SECRET-MARKER"
	untouched
}

t_system_links_trusted() {
	# Root's own symlinks directly in / (merged /usr: /bin -> usr/bin) are
	# followed; the rule is not "no symlink at all".
	[ -L /bin ] && [ "$(stat -c %u /bin)" = 0 ] || skip "/bin is not a root-owned symlink here"
	local out
	out=$(mrun --input /bin -- /bin/sh -c '[ -x /data/sh ] && echo OK')
	assert_eq OK "$out"
	out=$(mrun --ro /bin/busybox:/opt/busybox -- /opt/busybox echo OK)
	assert_eq OK "$out"
}

t_files_for_the_invoking_user() {
	# --log, --json-status and --output are created as the invoking user
	# (as root under sudo: SUDO_UID) and refused where that user could not
	# write; the kernel checks it for an unprivileged caller.
	local who uid gid rc err
	if is_root; then
		id moat-test >/dev/null 2>&1 || fail "the moat-test user is required (tests/run-all.sh creates it)"
		uid=$(id -u moat-test)
		gid=$(id -g moat-test)
		who=(env SUDO_UID="$uid" SUDO_GID="$gid")
	else
		uid=$(id -u)
		gid=$(id -g)
		who=(env)
	fi
	local mine="$T_OUT/mine" closed="$T_OUT/closed"
	mkdir -p "$mine" "$closed"
	is_root && chown "$uid:$gid" "$mine"
	chmod 0500 "$closed"
	"${who[@]}" "$MOAT" run --quiet --log "$mine/logs/a.jsonl" --json-status "$mine/s.json" \
		--output "$mine/out" -- /bin/sh -c 'echo o > /output/f'
	local f
	for f in "$mine/logs" "$mine/logs/a.jsonl" "$mine/s.json" "$mine/out" "$mine/out/f"; do
		assert_eq "$uid" "$(stat -c %u "$f")" "owner of $f"
	done
	for f in "$closed/log.jsonl" "$closed/sub/log.jsonl"; do
		rc=0
		err=$("${who[@]}" "$MOAT" run --quiet --log "$f" -- /bin/true 2>&1) || rc=$?
		assert_eq 125 "$rc" "--log $f in a directory the user may not write ($err)"
		[ ! -e "$f" ] || fail "$f was created"
	done
	rc=0
	err=$("${who[@]}" "$MOAT" run --quiet --json-status "$closed/s.json" -- /bin/true 2>&1) || rc=$?
	assert_eq 125 "$rc" "--json-status in a directory the user may not write ($err)"
	rc=0
	err=$("${who[@]}" "$MOAT" run --quiet --output "$closed/out" -- /bin/true 2>&1) || rc=$?
	assert_eq 125 "$rc" "--output in a directory the user may not write ($err)"
	[ ! -e "$closed/s.json" ] && [ ! -e "$closed/out" ] || fail "created in the closed directory"
	# control: as root itself (no sudo), root may write there
	if is_root; then
		"$MOAT" run --quiet --log "$closed/log.jsonl" -- /bin/true
		assert_eq 0 "$(stat -c %u "$closed/log.jsonl")"
	fi
}

t_apply_through_planted_workspace() {
	# `moat apply` later writes held-back changes into the workspace the
	# manifest names: a sandbox that replaced it with a link meanwhile must
	# not redirect those writes.
	local top="$T_OUT/apply" id
	mkdir -p "$top/ws"
	mrun --workspace "$top/ws:overlay" --apply never --json-status "$top/s.json" -- \
		/bin/sh -c 'echo held > held.txt'
	id=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["run"])' "$top/s.json")
	[ ! -e "$top/ws/held.txt" ] || fail "applied under --apply never"
	plant "$top" "mv ws ws.real && ln -s '$SECRET' ws"
	assert_eq "SECRET-MARKER-$$" "$(ctl cat "$top/ws/marker")" "control: the planted workspace"
	local rc=0 err
	err=$("$MOAT" apply "$id" 2>&1) || rc=$?
	[ "$rc" -ne 0 ] || fail "moat apply wrote through a planted link"
	assert_contains "$err" "symlink"
	[ ! -e "$SECRET/held.txt" ] || fail "moat apply wrote into the link's target"
	untouched
	# control: with the real directory back, the change applies
	rm "$top/ws" && mv "$top/ws.real" "$top/ws"
	"$MOAT" apply "$id" >/dev/null
	assert_eq held "$(cat "$top/ws/held.txt")"
}

# The race: one sandbox swaps a real directory and a symlink to the secret
# (renameat2 RENAME_EXCHANGE) in a loop while moat is started again and again
# on the path. The secret must never be the workspace.
RACER='
import ctypes, os, sys, time
libc = ctypes.CDLL(None, use_errno=True)
ws = sys.argv[1]
a, b = (ws + "/sub").encode(), (ws + "/swap").encode()
end = time.time() + float(sys.argv[2])
n = 0
while time.time() < end and not os.path.exists(ws + "/stop"):
    if libc.renameat2(-100, a, -100, b, 2) != 0:
        sys.exit("renameat2: " + os.strerror(ctypes.get_errno()))
    n += 1
print(n)
'

t_rename_exchange_race() {
	local rws="$T_OUT/race"
	mkdir -p "$rws/sub"
	echo "REAL-$$" >"$rws/sub/marker"
	ln -s "$SECRET" "$rws/swap"
	# positive control: the swap does expose the secret to a plain program
	/usr/bin/python3 -c "$RACER" "$rws" 5 >"$T_OUT/ctl-racer" 2>&1 &
	local pid=$! hits=0
	for _ in $(seq 1 400); do
		if ctl cat "$rws/sub/marker" 2>/dev/null | grep -q SECRET-MARKER; then
			hits=$((hits + 1))
		fi
		[ $hits -gt 0 ] && break
	done
	touch "$rws/stop"
	wait "$pid" || fail "control racer: $(cat "$T_OUT/ctl-racer")"
	rm -f "$rws/stop"
	[ $hits -gt 0 ] || fail "control: the exchange never exposed the secret to a plain program"
	# the same race with the swapper inside a sandbox, moat started meanwhile
	[ -d "$rws/sub" ] && [ ! -L "$rws/sub" ] || {
		mv "$rws/sub" "$rws/tmp" && mv "$rws/swap" "$rws/sub" && mv "$rws/tmp" "$rws/swap"
	}
	mrun --workspace "$rws:rw" -- /usr/bin/python3 -c "$RACER" "$rws" 60 >"$T_OUT/racer" 2>&1 &
	pid=$!
	local ok=0 refusedn=0 secret=0 out rc
	for _ in $(seq 1 40); do
		rc=0
		out=$(mrun --workspace "$rws/sub" -- /bin/cat marker 2>&1) || rc=$?
		case "$out" in
		*SECRET-MARKER*) secret=$((secret + 1)) ;;
		*"REAL-$$"*) ok=$((ok + 1)) ;;
		*) [ "$rc" -eq 125 ] && refusedn=$((refusedn + 1)) ;;
		esac
	done
	touch "$rws/stop"
	wait "$pid" || fail "racer in the sandbox: $(cat "$T_OUT/racer")"
	echo "# race: $ok real, $refusedn refused, $secret secret, swaps: $(cat "$T_OUT/racer")" >&2
	assert_eq 0 "$secret" "runs that mounted the secret directory"
	[ $((ok + refusedn)) -eq 40 ] || fail "unexpected outcomes: $ok real, $refusedn refused"
	untouched
}

# moat's own state (run records, logs, manifests) written by a sandbox whose
# rw workspace holds it: a planted live record names a "temporary directory"
# outside the workspace, and the next `moat gc` removed it. The run that could
# plant is refused; the control plants the same record by hand.
t_state_dir_not_writable() {
	local home="$T_OUT/home" victim="$T_OUT/victim/moat-keep" id=deadbeef rc=0 err
	mkdir -p "$home/.local/state/moat/live" "$victim"
	echo keep >"$victim/file"
	local rec="{\"id\":\"$id\",\"pid\":1,\"start_us\":0,\"cgroups\":[],\"tmpdirs\":[\"$victim\"]}"
	local plant_rec="mkdir -p .local/state/moat/live/$id && echo '$rec' >.local/state/moat/live/$id/run.json"
	for ws in "$home" "$home/.local" "$home/.local/state/moat/live"; do
		rc=0
		err=$(env HOME="$home" XDG_STATE_HOME= timeout 60 "$MOAT" run --quiet \
			--workspace "$ws:rw" -- /bin/sh -c "cd '$home' 2>/dev/null; $plant_rec" \
			2>&1 </dev/null) || rc=$?
		if is_root; then
			# root's state is in /var/lib/moat and /run/moat: not in $home
			assert_eq 0 "$rc" "root: --workspace $ws:rw ($err)"
		else
			assert_eq 125 "$rc" "--workspace $ws:rw ($err)"
			assert_contains "$err" "moat's state directory"
		fi
		rc=0
		err=$(env HOME="$home" XDG_STATE_HOME= timeout 60 "$MOAT" run --quiet \
			--workspace "$T_OUT/ws:overlay" --apply never --rw "$ws" -- /bin/true \
			2>&1 </dev/null) || rc=$?
		is_root || assert_eq 125 "$rc" "--rw $ws ($err)"
	done
	rm -rf "$home/.local/state/moat/live/$id"
	# a file: refused inside the state directory, fine elsewhere
	echo f >"$home/.local/state/moat/live/afile"
	echo f >"$T_OUT/plainfile"
	rc=0
	err=$(env HOME="$home" XDG_STATE_HOME= timeout 60 "$MOAT" run --quiet \
		--rw "$home/.local/state/moat/live/afile" -- /bin/true 2>&1 </dev/null) || rc=$?
	is_root || assert_eq 125 "$rc" "--rw of a file in the state directory ($err)"
	rc=0
	err=$(env HOME="$home" XDG_STATE_HOME= timeout 60 "$MOAT" run --quiet \
		--rw "$T_OUT/plainfile" -- /bin/true 2>&1 </dev/null) || rc=$?
	assert_eq 0 "$rc" "--rw of a file elsewhere ($err)"
	rm -f "$home/.local/state/moat/live/afile"
	env HOME="$home" XDG_STATE_HOME= "$MOAT" gc >/dev/null 2>&1 || true
	assert_eq keep "$(cat "$victim/file")" "the victim after moat gc"
	# the same state under / is refused as root too
	if is_root; then
		rc=0
		err=$(timeout 60 "$MOAT" run --quiet --workspace /var/lib:rw -- /bin/true \
			2>&1 </dev/null) || rc=$?
		assert_eq 125 "$rc" "root: --workspace /var/lib:rw ($err)"
		assert_contains "$err" "moat's state directory"
	fi
	# control: the record, planted by hand, does direct gc (unprivileged only)
	if ! is_root; then
		mkdir -p "$home/.local/state/moat/live/$id"
		echo "$rec" >"$home/.local/state/moat/live/$id/run.json"
		env HOME="$home" XDG_STATE_HOME= "$MOAT" gc >/dev/null 2>&1 || true
		[ ! -e "$victim" ] || fail "control: the planted record did not direct moat gc"
	fi
}

run_test "control: a plain program follows the planted links to the secret" t_control_plant_reaches_secret
run_test "--workspace through a planted link is refused" t_workspace_links
run_test "--ro, --rw, --input through a planted link are refused" t_bind_sources
run_test "--output through a planted link is refused" t_output
run_test "--log, --json-status, --policy, moat log: no planted link, fifo, dir or hard link" t_log_and_status
run_test "files moat writes are the invoking user's, never where that user cannot write" t_files_for_the_invoking_user
run_test "moat apply never writes through a planted workspace link" t_apply_through_planted_workspace
run_test "--rootfs: no planted link to or inside the tree" t_rootfs
run_test "root's symlinks in / are still followed" t_system_links_trusted
run_test "rename-exchange race: the secret is never the workspace" t_rename_exchange_race
run_test "moat's state is never writable in the sandbox (gc, apply)" t_state_dir_not_writable
t_done
