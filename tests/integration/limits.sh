#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Resource limits and teardown of `moat run` (issue 4). Run as root (cgroups)
# and as an unprivileged user by tests/run-all.sh. On this kind of machine the
# unprivileged user cannot create cgroups: explicit limits must fail closed
# (125) without --allow-degraded cgroup and fall back to rlimits with it.
# shellcheck source=tests/lib/tap.sh
. "$(dirname "$0")/../lib/tap.sh"

# Unprivileged runs with explicit limits need the degraded mode here.
DEG=()
is_root || DEG=(--allow-degraded cgroup)
MARK=$((900000 + $$ % 90000)) # a unique `sleep` argument to find our processes

mrun() { "$MOAT" run --quiet "$@"; }
status_field() { jq -r ".$2" "$1"; }
survivors() { pgrep -f "sleep $MARK" || true; }

# Where run groups live on this machine (v1 hierarchies, the v2 mount, and
# below our own memory cgroup).
cgroup_dirs() {
	local d
	for d in /sys/fs/cgroup/*/moat /sys/fs/cgroup/memory/*/*/moat /sys/fs/cgroup/moat; do
		[ -d "$d" ] && find "$d" -mindepth 1 -maxdepth 1 -type d
	done 2>/dev/null | sort
}

state_dir() {
	if is_root; then
		echo /run/moat/live
	elif [ -n "${XDG_STATE_HOME:-}" ]; then
		echo "$XDG_STATE_HOME/moat/live"
	else
		echo "$HOME/.local/state/moat/live"
	fi
}

t_fail_closed_or_enforced() {
	local rc=0 err
	if is_root; then
		# Root: the limits are real cgroups; a sandbox process is in them.
		"$MOAT" run --quiet --memory 64M --pids 32 --cpus 0.5 -- sleep 3 &
		local pid=$! id="" i
		for i in $(seq 100); do
			id=$("$MOAT" ps | awk -v p="$pid" '$2 == p { print $1 }')
			[ -n "$id" ] && break
			sleep 0.05
		done
		[ -n "$id" ] || fail "moat ps does not list the run"
		local procs=""
		for i in $(seq 100); do
			procs=$(cat /sys/fs/cgroup/pids/moat/"$id"/cgroup.procs 2>/dev/null ||
				cat /sys/fs/cgroup/moat/"$id"/cgroup.procs)
			[ -n "$procs" ] && break
			sleep 0.05
		done
		[ -n "$procs" ] || fail "no process in the run's pids cgroup"
		assert_eq 32 "$(cat /sys/fs/cgroup/pids/moat/"$id"/pids.max 2>/dev/null ||
			cat /sys/fs/cgroup/moat/"$id"/pids.max)" "pids.max"
		if [ -d /sys/fs/cgroup/cpu/moat/"$id" ]; then
			assert_eq 50000 "$(cat /sys/fs/cgroup/cpu/moat/"$id"/cpu.cfs_quota_us)" "cfs quota"
			assert_eq 100000 "$(cat /sys/fs/cgroup/cpu/moat/"$id"/cpu.cfs_period_us)" "cfs period"
		else
			assert_eq "50000 100000" "$(cat /sys/fs/cgroup/moat/"$id"/cpu.max)" "cpu.max"
		fi
		local mem
		mem=$(cat /sys/fs/cgroup/memory/*/*/moat/"$id"/memory.limit_in_bytes 2>/dev/null ||
			cat /sys/fs/cgroup/memory/moat/"$id"/memory.limit_in_bytes 2>/dev/null ||
			cat /sys/fs/cgroup/moat/"$id"/memory.max)
		assert_eq $((64 << 20)) "$mem" "memory limit"
		wait "$pid"
		[ ! -e /sys/fs/cgroup/pids/moat/"$id" ] || fail "the run's cgroup outlived it"
		return 0
	fi
	err=$("$MOAT" run --memory 64M -- true 2>&1) || rc=$?
	assert_eq 125 "$rc" "explicit --memory without cgroups"
	assert_contains "$err" "--allow-degraded cgroup"
	rc=0
	"$MOAT" run --json-status st.json --allow-degraded cgroup --memory 64M --pids 32 -- \
		sh -c 'ulimit -v' >out 2>err || rc=$?
	assert_eq 0 "$rc"
	assert_eq 65536 "$(cat out)" "RLIMIT_AS in KiB"
	assert_eq cgroup "$(status_field st.json degraded)"
	assert_contains "$(cat err)" "DEGRADED: cgroup"
}

t_fork_bomb_contained() {
	local rc=0 t0 t1
	t0=$(date +%s%N)
	mrun --json-status st.json "${DEG[@]}" --pids 64 --timeout 20s -- \
		sh -c "i=0; while [ \$i -lt 300 ]; do sleep $MARK & i=\$((i+1)); done; wait" \
		>/dev/null 2>&1 || rc=$?
	t1=$(date +%s%N)
	# The host stayed responsive: a host `true` takes well under a second.
	local h0 h1
	h0=$(date +%s%N)
	/bin/true
	h1=$(date +%s%N)
	[ $(((h1 - h0) / 1000000)) -lt 1000 ] || fail "host sluggish"
	[ "$rc" -ne 0 ] && [ "$rc" -ne 125 ] && [ "$rc" -ne 124 ] ||
		fail "fork bomb: exit $rc (want the command's own failure)"
	[ $(((t1 - t0) / 1000000)) -lt 15000 ] || fail "the bomb was not stopped by the limit"
	assert_eq "" "$(survivors)" "processes left after the run"
	if is_root; then
		assert_eq pids "$(status_field st.json reason)"
		local peak
		peak=$(status_field st.json pids_peak)
		[ "$peak" -le 64 ] && [ "$peak" -ge 60 ] || fail "pids_peak $peak, limit 64"
	fi
}

t_cpu_quota() {
	if ! is_root; then
		# No cgroup: --cpus cannot be enforced by rlimits and fails closed.
		local rc=0
		"$MOAT" run --quiet --cpus 0.5 -- true 2>err || rc=$?
		assert_eq 125 "$rc"
		assert_contains "$(cat err)" "cgroup"
		return 0
	fi
	mrun --json-status st.json --cpus 0.5 --timeout 2s --kill-grace 100ms -- \
		sh -c 'while :; do :; done' || true
	local cpu wall
	cpu=$(jq '.cpu_user_s + .cpu_sys_s' st.json)
	wall=$(jq '.wall_s' st.json)
	# Half a CPU: at most 1 s of CPU in 2 s (an idle machine gives a busy loop 2 s).
	python3 -c "import sys; c, w = float(sys.argv[1]), float(sys.argv[2]); sys.exit(0 if c <= 0.5 * w + 0.2 else 1)" \
		"$cpu" "$wall" || fail "cpu ${cpu}s in ${wall}s with --cpus 0.5"
}

t_memory_balloon_anon() {
	local rc=0
	mrun --json-status st.json "${DEG[@]}" --memory 64M -- \
		python3 -c 'b = bytearray(256 << 20); print("survived")' >out 2>/dev/null || rc=$?
	assert_eq "" "$(cat out)" "the balloon survived"
	if is_root; then
		assert_eq 137 "$rc"
		assert_eq memory "$(status_field st.json reason)"
		local peak
		peak=$(status_field st.json mem_peak)
		[ "$peak" -le $((64 << 20)) ] || fail "mem_peak $peak above the limit"
	else
		# RLIMIT_AS: the allocation fails (MemoryError), nothing is killed.
		assert_eq 1 "$rc"
	fi
}

t_memory_balloon_tmpfs_memfd() {
	is_root || {
		# Degraded mode cannot bound tmpfs/memfd with RLIMIT_AS (documented):
		# there the tmpfs size (--disk) is the bound.
		local out
		out=$(mrun "${DEG[@]}" --memory 64M --disk 32M -- \
			sh -c 'dd if=/dev/zero of=/dev/shm/f bs=1M count=100 2>&1; echo end')
		assert_contains "$out" "No space left on device"
		return 0
	}
	local rc=0
	# The balloon is the command itself (a shell around it would go on after
	# the OOM kill of its child and exit 0: then the command's result stands).
	mrun --json-status st.json --memory 64M --disk 1G -- \
		dd if=/dev/zero of=/dev/shm/f bs=1M count=256 >out 2>/dev/null || rc=$?
	assert_eq memory "$(status_field st.json reason)" "tmpfs balloon"
	assert_eq 137 "$rc"
	rc=0
	mrun --json-status st.json --memory 64M -- python3 -c '
import os
fd = os.memfd_create("b")
os.ftruncate(fd, 256 << 20)
chunk = b"x" * (1 << 20)
for i in range(256):
    os.write(fd, chunk)
print("survived")' >out 2>/dev/null || rc=$?
	assert_eq "" "$(cat out)" "memfd balloon"
	assert_eq memory "$(status_field st.json reason)" "memfd balloon"
}

t_memory_30g_request() {
	local rc=0 t0
	t0=$(date +%s)
	mrun --json-status st.json "${DEG[@]}" --memory 4G -- \
		python3 -c 'b = bytearray(30 << 30); print("survived")' >out 2>err || rc=$?
	assert_eq "" "$(cat out)"
	[ "$rc" -ne 0 ] && [ "$rc" -ne 125 ] || fail "exit $rc"
	[ $(($(date +%s) - t0)) -lt 30 ] || fail "took too long"
	grep -q MemoryError err || [ "$rc" -eq 137 ] || fail "neither MemoryError nor a memory kill: $(cat err)"
}

t_disk_fill_enospc() {
	local out before after
	before=$(df -k --output=avail / | tail -1)
	out=$(mrun "${DEG[@]}" --disk 16M -- sh -c \
		'dd if=/dev/zero of=/tmp/f bs=1M count=64 2>&1; stat -c %s /tmp/f')
	after=$(df -k --output=avail / | tail -1)
	assert_contains "$out" "No space left on device"
	local size
	size=$(echo "$out" | tail -1)
	[ "$size" -le $((16 << 20)) ] || fail "/tmp grew to $size bytes, --disk 16M"
	# The host disk did not take the 64 MiB.
	[ $((before - after)) -lt 32768 ] || fail "host disk lost $((before - after)) KiB"
}

# A --disk area that filled is said (limits/disk_watch.h: the supervisor
# fstatfs()es every writable tmpfs): the summary line, the status record, a
# `limit` event and an alert, and the start event says the level records it.
t_disk_full_said() {
	local out n
	# shellcheck disable=SC2016 # expanded inside
	out=$("$MOAT" run --disk 8M --log "$T_OUT/d.jsonl" --json-status "$T_OUT/d.json" -- \
		sh -c 'head -c 16M /dev/zero >/tmp/f 2>/dev/null; echo "size $(stat -c %s /tmp/f)"' 2>&1)
	assert_contains "$out" "size 8388608" "the write was cut at --disk"
	assert_contains "$out" \
		"moat: limits: disk limit 8 MiB reached on /tmp (full: a write there fails with ENOSPC; --disk)"
	assert_eq 1 "$(grep -c '^moat: limits:' <<<"$out")" "only /tmp filled"
	assert_eq '[{"path":"/tmp","limit":8388608,"inodes":false,"tmpfs_size":false}]' \
		"$(jq -c .disk_full "$T_OUT/d.json")" "status disk_full"
	n=$(grep -c '"type":"limit","what":"disk","path":"/tmp","limit":8388608,"reason":"blocks"' \
		"$T_OUT/d.jsonl" || true)
	assert_eq 1 "$n" "one limit event"
	n=$(grep -c '"type":"alert","cause":"limit","what":"disk","path":"/tmp"' "$T_OUT/d.jsonl" || true)
	assert_eq 1 "$n" "one alert"
	assert_contains "$(grep '"type":"start"' "$T_OUT/d.jsonl")" '"disk":"recorded"'
	# moat log shows it
	assert_contains "$("$MOAT" log "$T_OUT/d.jsonl" 2>&1)" "limit what=disk path=/tmp limit=8388608"
}

# The workspace overlay's upper layer, /output and a --tmpfs with its own
# size are named each; /tmp, untouched, is not.
t_disk_full_workspace() {
	local ws od out
	ws=$(mktemp -d "$T_OUT/ws.XXXXXX")
	od=$(mktemp -d "$T_OUT/out.XXXXXX")
	out=$("$MOAT" run --disk 8M --workspace "$ws" --output "$od" --tmpfs /scratch:2M \
		--log "$T_OUT/w.jsonl" -- sh -c "cd '$ws' && head -c 16M /dev/zero >big 2>/dev/null;
			head -c 16M /dev/zero >/output/o 2>/dev/null;
			head -c 4M /dev/zero >/scratch/s 2>/dev/null; true" 2>&1)
	assert_contains "$out" "moat: limits: disk limit 8 MiB reached on $ws (full: "
	assert_contains "$out" "moat: limits: disk limit 8 MiB reached on /output (full: "
	assert_contains "$out" \
		"moat: limits: disk limit 2 MiB reached on /scratch (full: a write there fails with ENOSPC; --tmpfs)"
	assert_not_contains "$out" "reached on /tmp "
	assert_contains "$(cat "$T_OUT/w.jsonl")" "\"type\":\"limit\",\"what\":\"disk\",\"path\":\"$ws\""
}

# A fill that is deleted again (a tool cleaning up after ENOSPC) is still
# said: it lasted longer than the sampling interval (200 ms). The control, a
# run that writes less than --disk, says no disk limit.
t_disk_full_deleted_and_control() {
	local out
	out=$("$MOAT" run --disk 8M --log "$T_OUT/x.jsonl" -- sh -c \
		'head -c 16M /dev/zero >/dev/shm/f 2>/dev/null; sleep 1; rm /dev/shm/f; ls /dev/shm' 2>&1)
	assert_contains "$out" "moat: limits: disk limit 8 MiB reached on /dev/shm (full: "
	assert_contains "$(cat "$T_OUT/x.jsonl")" '"type":"limit","what":"disk","path":"/dev/shm"'
	# control: 4 MiB of 8 in every area, kept and deleted
	# shellcheck disable=SC2016 # expanded inside
	out=$("$MOAT" run --disk 8M --log "$T_OUT/c.jsonl" --json-status "$T_OUT/c.json" -- sh -c \
		'head -c 4M /dev/zero >/tmp/f; head -c 4M /dev/zero >"$HOME/f";
		 head -c 4M /dev/zero >/dev/shm/f; sleep 0.5; rm /dev/shm/f' 2>&1)
	assert_not_contains "$out" "moat: limits:"
	assert_not_contains "$(cat "$T_OUT/c.jsonl")" '"what":"disk"'
	assert_eq '[]' "$(jq -c .disk_full "$T_OUT/c.json")" "status disk_full"
}

# A session: the event and the alert are written while it runs, `moat rm`
# says it.
t_disk_full_session() {
	local id out
	id=$(timeout 30 "$MOAT" create --disk 8M) || fail "moat create"
	timeout 30 "$MOAT" exec "$id" -- sh -c \
		'head -c 16M /dev/zero >/tmp/f 2>/dev/null; sleep 1; rm /tmp/f' || {
		timeout 30 "$MOAT" rm --force "$id" >/dev/null 2>&1
		fail "moat exec"
	}
	out=$(timeout 30 "$MOAT" log "$id" 2>&1)
	assert_contains "$out" "limit what=disk path=/tmp limit=8388608 reason=blocks"
	assert_contains "$out" "alert cause=limit what=disk path=/tmp"
	out=$(timeout 30 "$MOAT" rm "$id" 2>&1) || fail "moat rm: $out"
	assert_contains "$out" "moat: limits: disk limit 8 MiB reached on /tmp (full: "
}

t_timeout_ignoring_sigterm() {
	local rc=0 t0 t1
	t0=$(date +%s%N)
	mrun --json-status st.json --timeout 1s --kill-grace 500ms -- sh -c \
		"trap '' TERM; setsid sh -c \"trap '' TERM HUP; sleep $MARK\" & sleep $MARK & while :; do :; done" \
		>/dev/null 2>&1 || rc=$?
	t1=$(date +%s%N)
	assert_eq 124 "$rc"
	assert_eq timeout "$(status_field st.json reason)"
	local ms=$(((t1 - t0) / 1000000))
	[ "$ms" -ge 1000 ] && [ "$ms" -lt 6000 ] || fail "ended after $ms ms (limit 1 s + 0.5 s grace)"
	assert_eq "" "$(survivors)" "daemons outlived the timeout"
}

t_double_forked_daemon_gone() {
	local out
	out=$(mrun -- sh -c "setsid sh -c 'trap \"\" HUP TERM; (sleep $MARK &) ; sleep $MARK' >/dev/null 2>&1 & sleep 0.2; echo started")
	assert_eq started "$out"
	assert_eq "" "$(survivors)" "a double-forked setsid daemon outlived the run"
}

t_sigkill_moat_leaves_nothing() {
	local before
	before=$(cgroup_dirs)
	# As root, with limits, so that the run has cgroups to leave behind.
	local lim=()
	is_root && lim=(--pids 64 --memory 256M)
	"$MOAT" run --quiet "${lim[@]}" -- sh -c "setsid sh -c 'sleep $MARK' & sleep $MARK" &
	local pid=$! i
	# Whatever happens below, nothing of this test may stay.
	KILL_ON_EXIT=$pid
	trap 'kill -KILL "$KILL_ON_EXIT" 2>/dev/null || true' EXIT
	for i in $(seq 100); do
		[ -n "$(survivors)" ] && break
		sleep 0.05
	done
	[ -n "$(survivors)" ] || fail "the sandbox did not start"
	local id
	id=$("$MOAT" ps | awk -v p="$pid" '$2 == p { print $1 }')
	[ -n "$id" ] || fail "moat ps does not list the run"
	# The control: as root the run has groups, so their removal below shows.
	if is_root; then
		grep -q "/$id\$" <<<"$(cgroup_dirs)" || fail "the run has no cgroup to leave behind"
	fi
	kill -KILL "$pid"
	wait "$pid" 2>/dev/null || true
	for i in $(seq 40); do
		[ -z "$(survivors)" ] && break
		sleep 0.05
	done
	assert_eq "" "$(survivors)" "sandbox processes after moat was SIGKILLed"
	"$MOAT" gc --quiet
	# Exact for this run: its own groups are gone. Any other group that
	# appeared meanwhile must belong to a run that is still live (another
	# suite's or engineer's run on a shared machine), never a dead one.
	local d
	while read -r d; do
		[ -n "$d" ] || continue
		[ "${d##*/}" != "$id" ] || fail "the crashed run's cgroup $d is still there"
		[ -e "$(state_dir)/${d##*/}" ] || fail "cgroup $d of no live run after moat gc"
	done < <(comm -13 <(printf '%s\n' "$before") <(cgroup_dirs))
	[ ! -e "$(state_dir)/$id" ] || fail "the crashed run's state entry is still there"
}

t_gc_simulated_crash() {
	local sd="$T_OUT/state" id="crashed$$" tmp
	tmp=$(mktemp -d /tmp/moat-gctest.XXXXXX)
	mkdir -p "$tmp/a/b" "$sd/$id" "$sd/alive"
	echo data >"$tmp/a/b/f"
	local cg="" cgjson="" sleeper=""
	if is_root; then
		# A real group with a process in it, as a crashed run leaves it.
		cg=/sys/fs/cgroup/pids/moat/$id
		mkdir -p "$cg"
		sleep "$MARK" &
		sleeper=$!
		echo "$sleeper" >"$cg/cgroup.procs"
		cgjson="\"$cg\""
	fi
	printf '{"id":"%s","pid":1,"start_us":0,"cgroups":[%s],"tmpdirs":["%s"]}' \
		"$id" "$cgjson" "$tmp" >"$sd/$id/run.json"
	: >"$sd/$id/lock" # nobody holds it: the supervisor is gone
	# A live run: its lock is held (flock would not do: gc uses OFD locks).
	printf '{"id":"alive","pid":1,"start_us":0,"cgroups":[],"tmpdirs":[]}' >"$sd/alive/run.json"
	: >"$sd/alive/lock"
	python3 -c '
import fcntl, os, struct, sys, time
fd = os.open(sys.argv[1], os.O_RDWR)
fcntl.fcntl(fd, 37, struct.pack("hhqqi", fcntl.F_WRLCK, 0, 0, 0, 0))  # F_OFD_SETLK
print("locked", flush=True)
time.sleep(30)' "$sd/alive/lock" >lockout &
	local locker=$!
	for _ in $(seq 100); do
		[ -s lockout ] && break
		sleep 0.05
	done
	local out
	out=$("$MOAT" gc --state-dir "$sd" 2>&1)
	kill "$locker"
	assert_contains "$out" "1 dead run(s) cleaned"
	assert_contains "$out" "1 live"
	[ ! -e "$tmp" ] || fail "the temporary directory is still there"
	[ ! -e "$sd/$id" ] || fail "the state entry is still there"
	[ -e "$sd/alive/run.json" ] || fail "gc removed a live run"
	if is_root; then
		[ ! -e "$cg" ] || fail "the cgroup is still there"
		wait "$sleeper" 2>/dev/null || true
		! kill -0 "$sleeper" 2>/dev/null || fail "the crashed run's process survived gc"
	fi
}

t_200_runs_back_to_baseline() {
	local mnt0 i
	# mount points (field 5) before; other work on the machine may mount too,
	# so what counts is a new mount point that is moat's or this test's
	mnt0=$(awk '{print $5}' /proc/self/mountinfo | sort)
	# Temporary directories: moat's TMPDIR is ours, and nothing in /tmp may be
	# named after one of the runs. Cgroups and state entries are judged by the
	# runs' own ids: other tests (or other users) may run at the same time.
	mkdir -p tmp
	for i in $(seq 200); do
		TMPDIR=$PWD/tmp mrun --json-status st.json "${DEG[@]}" --memory 64M --pids 32 -- true ||
			fail "run $i failed"
		status_field st.json run >>ids
	done
	assert_eq 200 "$(sort -u ids | wc -l)" "distinct run ids"
	assert_eq "" "$(cgroup_dirs | grep -F -f ids || true)" "cgroups named after a run"
	assert_eq "" "$(find "$(state_dir)" -mindepth 1 -maxdepth 1 2>/dev/null | grep -F -f ids || true)" "state entries of the runs"
	assert_eq "" "$(comm -13 <(echo "$mnt0") <(awk '{print $5}' /proc/self/mountinfo | sort) | grep -e /run/moat -e /var/lib/moat -e /state/moat -e "$PWD" || true)" "new mounts of moat"
	assert_eq "" "$(ls -A tmp)" "moat's TMPDIR"
	local left
	left=$(find /tmp /run -maxdepth 2 2>/dev/null | grep -F -f ids || true)
	assert_eq "" "$left" "files named after a run"
	# moat's own fds: a run sees the same fds inside as the first one did.
	local a b
	a=$(mrun -- sh -c 'ls /proc/self/fd | wc -l')
	b=$(mrun -- sh -c 'ls /proc/self/fd | wc -l')
	assert_eq "$a" "$b" "fds inside"
}

t_stdout_flood_constant_memory() {
	# 2 GiB through moat; its peak RSS must stay small.
	/usr/bin/time -f '%M' -o rss "$MOAT" run --quiet --tty -- head -c 2G /dev/zero |
		wc -c >count
	assert_eq 2147483648 "$(cat count)" "bytes relayed"
	local kib
	kib=$(tail -1 rss)
	[ "$kib" -lt 65536 ] || fail "moat's peak RSS $kib KiB while relaying 2 GiB"
}

run_test "explicit limits: enforced by cgroups (root) / fail closed or degraded (user)" t_fail_closed_or_enforced
run_test "fork bomb contained at --pids" t_fork_bomb_contained
run_test "--cpus: CFS quota (root) / fails closed (user)" t_cpu_quota
run_test "anonymous memory balloon killed at --memory" t_memory_balloon_anon
run_test "tmpfs and memfd balloons bounded" t_memory_balloon_tmpfs_memfd
run_test "30 GiB request against a 4 GiB limit fails cleanly" t_memory_30g_request
run_test "disk fill of /tmp: ENOSPC at --disk" t_disk_fill_enospc
run_test "a full --disk /tmp: summary, status, limit event, alert" t_disk_full_said
run_test "a full workspace overlay, /output, --tmpfs: each named" t_disk_full_workspace
run_test "a full /dev/shm emptied again is said; the control says nothing" t_disk_full_deleted_and_control
run_test "a full /tmp in a session: event while it runs, moat rm says it" t_disk_full_session
run_test "timeout 124 with SIGTERM ignored and daemons" t_timeout_ignoring_sigterm
run_test "double-forked setsid daemon gone after the run" t_double_forked_daemon_gone
run_test "SIGKILL of moat leaves no process; gc leaves no cgroup" t_sigkill_moat_leaves_nothing
run_test "moat gc cleans a simulated crashed run, spares a live one" t_gc_simulated_crash
run_test "200 sequential runs: cgroups, mounts, tmp dirs back to baseline" t_200_runs_back_to_baseline
run_test "stdout flood does not grow moat's memory" t_stdout_flood_constant_memory
t_done
