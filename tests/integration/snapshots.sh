#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Snapshots of sessions (issue 15, "Snapshots"): moat snapshot / restore /
# reset bring the sandbox's files (workspace changes, /tmp, home) back
# exactly; a sandbox process cannot alter a snapshot; names and limits;
# refused while processes run unless --force (which kills them); the review
# at rm after a restore is as strict as ever. Run as root and as the
# unprivileged user.
# shellcheck source=tests/lib/tap.sh
. "$(dirname "$0")/../lib/tap.sh"

export XDG_RUNTIME_DIR="$T_OUT/xdg"
mkdir -m 0700 "$XDG_RUNTIME_DIR"

cleanup_sessions() {
	local s
	[ -f "$T_OUT/created" ] || return 0
	while read -r s; do "$MOAT" rm --force --quiet "$s" >/dev/null 2>&1 || true; done <"$T_OUT/created"
	rm -f "$T_OUT/created"
}
create() {
	local id
	id=$(timeout 30 "$MOAT" create "$@") || fail "moat create $* failed"
	echo "$id" >>"$T_OUT/created"
	echo "$id"
}
ex() { timeout 30 "$MOAT" exec "$@"; }
snap() { timeout 30 "$MOAT" snapshot "$@"; }

# Everything the sandbox's files are, as its own process sees them: names,
# types, modes, symlink targets, file contents and times, in the workspace
# (the working directory), /tmp and home.
state() {
	# shellcheck disable=SC2016
	ex "$1" -- sh -c 'for d in "$PWD" /tmp "$HOME"; do (
		echo "== $d"; cd "$d" || exit 1
		find . -mindepth 1 -printf "%p %y %m %l\n" | sort
		find . -mindepth 1 ! -type d -printf "%p %T@\n" | sort
		find . -type f -exec sha256sum {} + | sort ); done'
}

# A workspace with a bit of everything.
make_ws() {
	local ws=$1
	mkdir -p "$ws/dir/sub" "$ws/gone" "$ws/empty"
	echo one >"$ws/file"
	printf '#!/bin/sh\necho run\n' >"$ws/script"
	chmod 0755 "$ws/script"
	echo secret >"$ws/private"
	chmod 0600 "$ws/private"
	echo deep >"$ws/dir/sub/deep"
	echo in-gone >"$ws/gone/f"
	ln -s file "$ws/link"
	ln -s /nonexistent "$ws/dangling"
	touch -d '2020-01-02 03:04:05' "$ws/file" "$ws/dir/sub/deep"
}

# Changes of every kind, in the workspace, /tmp and home.
change_all() {
	# shellcheck disable=SC2016
	ex "$1" -- sh -c '
		echo two >file; chmod 0700 script; rm private; rm -r gone
		echo new >new; mkdir -p newdir/x; echo n >newdir/x/f
		rm link; ln -s script link; rmdir empty; echo now-a-file >empty
		rm dir/sub/deep; mkdir dir/sub/deep; touch dangling 2>/dev/null || true
		echo t >/tmp/t; mkdir /tmp/td; ln -s /tmp/t /tmp/tl; chmod 0700 /tmp
		echo h >"$HOME/.h"; mkdir "$HOME/hd"'
}

t_reset_exact() {
	trap cleanup_sessions EXIT
	local id ws="$T_OUT/ws" before after
	make_ws "$ws"
	id=$(create --workspace "$ws")
	before=$(state "$id")
	change_all "$id"
	after=$(state "$id")
	[ "$before" != "$after" ] || fail "control: the changes show in the listing"
	assert_contains "$after" "./newdir/x/f" "control: a new file is listed"
	timeout 30 "$MOAT" reset "$id" 2>err || fail "reset: $(cat err)"
	assert_eq "$before" "$(state "$id")" "after reset: the files as at the start"
	assert_eq "one" "$(cat "$ws/file")" "the host's workspace untouched"
	# reset twice, and reset of an unchanged sandbox: nothing to do
	timeout 30 "$MOAT" reset "$id" || fail "second reset"
	assert_eq "$before" "$(state "$id")" "a second reset"
	assert_eq "run" "$(ex "$id" -- ./script)" "the restored script runs"
}

t_restore_named() {
	trap cleanup_sessions EXIT
	local id ws="$T_OUT/ws" s0 s1 s2
	make_ws "$ws"
	id=$(create --workspace "$ws")
	s0=$(state "$id")
	change_all "$id"
	assert_eq "first" "$(snap "$id" first)" "snapshot prints the name"
	s1=$(state "$id")
	# shellcheck disable=SC2016
	ex "$id" -- sh -c 'echo three >file; rm -r newdir; echo later >later; rm /tmp/t; echo h2 >"$HOME/.h"
		mkdir -p dir/more; echo m >dir/more/m; chmod 0644 script'
	local auto
	auto=$(snap "$id")
	assert_eq "snap-1" "$auto" "an unnamed snapshot gets a name"
	s2=$(state "$id")
	ex "$id" -- sh -c 'rm -rf ./* /tmp/* 2>/dev/null; echo chaos >file' || true
	timeout 30 "$MOAT" restore "$id" first 2>err || fail "restore: $(cat err)"
	assert_eq "$s1" "$(state "$id")" "restore first: as at the first snapshot"
	timeout 30 "$MOAT" restore "$id" snap-1 || fail "restore snap-1"
	assert_eq "$s2" "$(state "$id")" "restore snap-1: as at the second"
	timeout 30 "$MOAT" restore "$id" first || fail "restore first again"
	assert_eq "$s1" "$(state "$id")" "and back to the first"
	timeout 30 "$MOAT" reset "$id" || fail "reset"
	assert_eq "$s0" "$(state "$id")" "reset after snapshots: the start"
	local list
	list=$(snap --list --json "$id")
	assert_eq "first snap-1" "$(printf '%s' "$list" | jq -r '[.[].name] | join(" ")')" "listed, oldest first"
	assert_eq "false" "$(printf '%s' "$list" | jq -r '[.[].current] | any')" "none current after reset"
	snap --delete "$id" first || fail "delete"
	assert_eq "snap-1" "$(snap --list --json "$id" | jq -r '[.[].name] | join(" ")')" "deleted"
	local rc=0
	timeout 30 "$MOAT" restore "$id" first 2>err || rc=$?
	assert_eq 1 "$rc" "restore of a deleted snapshot"
	assert_contains "$(cat err)" "no snapshot named first"
}

# The store is outside the sandbox's view, and a snapshot keeps what it had
# whatever the sandbox writes later (also to files a restore brought back:
# no data is shared between a snapshot and the live files).
t_tamper() {
	trap cleanup_sessions EXIT
	local id ws="$T_OUT/ws" mark="moat-snap-mark-$$-$RANDOM"
	mkdir -p "$ws"
	echo base >"$ws/f"
	id=$(create --workspace "$ws")
	ex "$id" -- sh -c "echo $mark >f; echo $mark >/tmp/m; echo $mark >\"\$HOME/m\""
	local mounts found
	mounts=$(ex "$id" -- sh -c "awk '{print \$5, \$9}' /proc/self/mountinfo | sort")
	assert_contains "$mounts" "/tmp tmpfs" "control: the listing shows the tmpfs mounts"
	snap "$id" s >/dev/null || fail "snapshot"
	assert_eq "$mounts" "$(ex "$id" -- sh -c "awk '{print \$5, \$9}' /proc/self/mountinfo | sort")" \
		"no mount appeared in the sandbox (the store is mounted nowhere)"
	# every place a process of the sandbox can write or that changes at run
	# time: the mark is only where the sandbox put it
	found=$(ex "$id" -- sh -c "grep -rlsF -D skip -e $mark /tmp \"\$HOME\" \"\$PWD\" /dev/shm /var /run /etc /output 2>/dev/null | sort -u" || true)
	# positive control: the search finds the live copies of the mark
	assert_contains "$found" "/tmp/m" "control: the search finds the mark in /tmp"
	assert_contains "$found" "$ws/f" "control: the search finds the mark in the workspace"
	assert_eq 3 "$(printf '%s\n' "$found" | grep -c .)" "only the three live copies are visible: $found"
	# the same size, the same mtime, new bytes in place: still brought back
	# (nothing but the contents says a file is unchanged: a write through a
	# shared mapping of a tmpfs file changes neither its mtime nor its ctime)
	ex "$id" -- sh -c 'cp -p f /tmp/ref; printf X | dd of=f bs=1 seek=3 conv=notrunc 2>/dev/null; touch -r /tmp/ref f; rm /tmp/ref'
	[ "$(ex "$id" -- cat f)" != "$mark" ] || fail "control: the file changed"
	timeout 30 "$MOAT" restore "$id" s || fail "restore"
	assert_eq "$mark" "$(ex "$id" -- cat f)" "an in-place change with the size and mtime kept is undone"
	if ex "$id" -- python3 -c 'pass' 2>/dev/null; then
		ex "$id" -- python3 -c 'import mmap; f = open("f", "r+b"); m = mmap.mmap(f.fileno(), 0); m[0:1] = b"Z"; m.flush()'
		[ "$(ex "$id" -- cat f)" != "$mark" ] || fail "control: the mapping changed the file"
		timeout 30 "$MOAT" restore "$id" s || fail "restore"
		assert_eq "$mark" "$(ex "$id" -- cat f)" "a write through a shared mapping is undone"
	fi
	# overwrite in place (same inode), truncate, remove: the snapshot keeps its data
	ex "$id" -- sh -c 'printf tampered >f; : >/tmp/m; rm "$HOME/m"; dd if=/dev/zero of=f bs=1 count=3 seek=0 conv=notrunc 2>/dev/null'
	timeout 30 "$MOAT" restore "$id" s || fail "restore"
	assert_eq "$mark" "$(ex "$id" -- cat f)" "workspace file as snapshotted"
	assert_eq "$mark" "$(ex "$id" -- cat /tmp/m)" "/tmp file as snapshotted"
	assert_eq "$mark" "$(ex "$id" -- sh -c 'cat "$HOME/m"')" "home file as snapshotted"
	# write in place into the restored files, then restore again
	ex "$id" -- sh -c 'dd if=/dev/zero of=f bs=1 count=4 conv=notrunc 2>/dev/null; dd if=/dev/zero of=/tmp/m bs=1 count=4 conv=notrunc 2>/dev/null'
	timeout 30 "$MOAT" restore "$id" s || fail "restore again"
	assert_eq "$mark" "$(ex "$id" -- cat f)" "the snapshot is unchanged by writes to the restored file"
	assert_eq "$mark" "$(ex "$id" -- cat /tmp/m)" "the same for /tmp"
}

t_names_limits() {
	trap cleanup_sessions EXIT
	local id rc n
	id=$(create)
	for n in "" "-x" ".hidden" "../up" "a/b" "with space" "$(printf 'x%.0s' $(seq 65))" "é"; do
		rc=0
		snap "$id" "$n" 2>err || rc=$?
		assert_eq 2 "$rc" "snapshot name '$n' refused"
		assert_contains "$(cat err)" "snapshot name" "says why for '$n'"
	done
	snap "$id" "ok.name_1-x" >/dev/null || fail "a valid name"
	snap "$id" "$(printf 'y%.0s' $(seq 64))" >/dev/null || fail "a 64-byte name"
	rc=0
	snap "$id" "ok.name_1-x" 2>err || rc=$?
	assert_eq 1 "$rc" "a duplicate name"
	assert_contains "$(cat err)" "exists"
	rc=0
	timeout 10 "$MOAT" restore "$id" "../x" 2>err || rc=$?
	assert_eq 2 "$rc" "restore: a bad name is a usage error"
	rc=0
	snap nosuch-sandbox 2>err || rc=$?
	assert_eq 2 "$rc" "an unknown sandbox"
	# at most 32 snapshots
	for n in $(seq 3 32); do snap "$id" "n$n" >/dev/null || fail "snapshot $n"; done
	rc=0
	snap "$id" one-too-many 2>err || rc=$?
	assert_eq 1 "$rc" "the 33rd snapshot"
	assert_contains "$(cat err)" "at most 32"
	snap --delete "$id" n3 || fail "delete"
	snap "$id" now-fits >/dev/null || fail "after a delete there is room"
	# the store counts against the disk limit (--disk: 2M here)
	local small
	small=$(create --disk 2M)
	ex "$small" -- dd if=/dev/urandom of=/tmp/big bs=1k count=1200 2>/dev/null || fail "write 1.2M"
	snap "$small" first >/dev/null || fail "the first 1.2M snapshot fits"
	rc=0
	snap "$small" second 2>err || rc=$?
	assert_eq 1 "$rc" "a second copy exceeds the disk limit"
	assert_contains "$(cat err)" "disk limit"
	assert_eq "first" "$(snap --list --json "$small" | jq -r '[.[].name] | join(" ")')" "the failed snapshot is not kept"
	snap --delete "$small" first || fail "delete"
	snap "$small" second >/dev/null || fail "space is freed by a delete"
}

t_running() {
	trap cleanup_sessions EXIT
	local id rc pid
	id=$(create)
	ex "$id" -- sh -c 'echo keep >/tmp/f'
	snap "$id" s >/dev/null || fail "snapshot"
	ex "$id" -- sleep 60 &
	pid=$!
	for _ in $(seq 50); do ex "$id" -- true 2>/dev/null && [ "$(timeout 10 "$MOAT" ls --json | jq -r --arg id "$id" '.[] | select(.id == $id) | .running')" = 1 ] && break; sleep 0.1; done
	for c in "snapshot $id t" "restore $id s" "reset $id"; do
		rc=0
		# shellcheck disable=SC2086
		timeout 30 "$MOAT" $c 2>err || rc=$?
		assert_eq 1 "$rc" "moat $c while a process runs"
		assert_contains "$(cat err)" "processes run" "moat $c: says why"
	done
	kill -0 "$pid" 2>/dev/null || fail "the process still runs after the refusals"
	timeout 30 "$MOAT" reset --force "$id" 2>err || fail "reset --force: $(cat err)"
	# each request is in the sandbox's audit stream, refused or done
	timeout 10 "$MOAT" logs --json "$id" >log
	assert_contains "$(grep '"type":"snapshot"' log | grep '"op":"restore"')" '"error":"processes run' "the refused restore is recorded"
	assert_contains "$(grep '"type":"snapshot"' log | grep '"op":"reset"' | tail -1)" '"killed":true' "the forced reset is recorded"
	assert_contains "$(grep '"type":"snapshot"' log | grep '"op":"snapshot"' | head -1)" '"name":"s"' "the snapshot is recorded"
	rc=0
	wait "$pid" || rc=$?
	assert_eq 137 "$rc" "--force killed the running process"
	[ "$(ex "$id" -- ls -A /tmp)" = "" ] || fail "reset --force reset /tmp"
	# a process that left its exec (a daemon) counts too
	ex "$id" -- sh -c 'setsid sleep 60 </dev/null >/dev/null 2>&1 &'
	rc=0
	snap "$id" t 2>err || rc=$?
	assert_eq 1 "$rc" "a daemonized process blocks a snapshot"
	snap --force "$id" t >/dev/null || fail "snapshot --force"
	[ "$(ex "$id" -- sh -c 'ps -e -o comm= 2>/dev/null | grep -c sleep' || true)" = 0 ] || fail "the daemon was killed"
}

# The review at rm sees the restored files as any other change: applied or
# held back by the same rules.
t_review_after_restore() {
	trap cleanup_sessions EXIT
	local id ws="$T_OUT/ws"
	mkdir -p "$ws/keep"
	echo before >"$ws/f"
	echo k >"$ws/keep/k"
	id=$(create --workspace "$ws")
	ex "$id" -- sh -c 'echo after >f; echo new >g; rm -r keep; mkdir -p .github/workflows; echo "on: push" >.github/workflows/ci.yml'
	snap "$id" s >/dev/null || fail "snapshot"
	timeout 30 "$MOAT" reset "$id" || fail "reset"
	ex "$id" -- sh -c 'echo other >h'
	timeout 30 "$MOAT" restore "$id" s || fail "restore"
	timeout 30 "$MOAT" rm "$id" 2>err || fail "rm: $(cat err)"
	assert_contains "$(cat err)" "held back" "rm reports held-back changes"
	assert_eq "after" "$(cat "$ws/f")" "the modified file applied"
	assert_eq "new" "$(cat "$ws/g")" "the new file applied"
	[ ! -e "$ws/h" ] || fail "a file the restore removed reached the host"
	[ ! -e "$ws/keep" ] || fail "the removed directory is removed on the host"
	[ ! -e "$ws/.github/workflows/ci.yml" ] || fail "the CI workflow was applied: the held-back rule did not hold"
	# reset only: nothing changed, nothing to review
	rm -rf "$ws"
	mkdir -p "$ws/d"
	echo x >"$ws/d/x"
	id=$(create --workspace "$ws")
	ex "$id" -- sh -c 'echo y >d/x; rm -r d; echo z >z'
	timeout 30 "$MOAT" reset "$id" || fail "reset"
	timeout 30 "$MOAT" rm "$id" 2>err || fail "rm: $(cat err)"
	assert_not_contains "$(cat err)" "change(s)" "after a reset the review finds no change"
	assert_eq "x" "$(cat "$ws/d/x")" "the host's files as before"
	[ ! -e "$ws/z" ] || fail "a file removed by the reset reached the host"
}

run_test "reset restores files exactly (content, modes, times, deletions, new files, symlinks, dirs)" t_reset_exact
run_test "restore to a named snapshot after later changes; list, delete" t_restore_named
run_test "a sandbox process can neither see nor alter a snapshot" t_tamper
run_test "snapshot names and limits (count, disk)" t_names_limits
run_test "refused while processes run; --force kills them" t_running
run_test "the review at rm after a restore (held-back rules hold)" t_review_after_restore
t_done
