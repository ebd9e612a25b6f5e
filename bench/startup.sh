#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Start-up of `/bin/true`: moat (default policy, every layer) vs bubblewrap set
# up for the same isolation vs bare, plus moat's variants (all limits, --net
# allow, --no-record-exec), all interleaved in one run, as root and as an
# unprivileged user. Targets: issue 2 (moat <= 1.0x bwrap), issue 4 (limits
# <= 1.15x none), issue 5 (--net allow <= 2x --net none).
set -euo pipefail
# shellcheck source=bench/lib.sh
source "$(dirname "$0")/lib.sh"
bench_setup

# bubblewrap with the isolation moat gives by default: user, pid, ipc, uts,
# net (and cgroup) namespaces, read-only system directories, private /tmp,
# fresh /proc and /dev, uid 1000, killed with its parent. It does less than
# moat (no seccomp, no Landlock, no generated /etc, no exec recording).
BWRAP=(bwrap --unshare-user --unshare-pid --unshare-ipc --unshare-uts --unshare-net
	--unshare-cgroup-try --uid 1000 --gid 1000 --hostname moat
	--ro-bind /usr /usr --symlink usr/bin /bin --symlink usr/lib /lib
	--symlink usr/lib64 /lib64 --symlink usr/sbin /sbin
	--ro-bind-try /etc/ld.so.cache /etc/ld.so.cache
	--tmpfs /tmp --proc /proc --dev /dev --die-with-parent --new-session --clearenv)
LIMITS=(--cpus 1 --memory 512M --pids 256 --timeout 1m --disk 256M)

runs=$(bench_runs 60)
for BENCH_USER in $(bench_users); do
	bench_case bare /bin/true
	bench_case moat "$MOAT" run -- /bin/true
	if command -v bwrap >/dev/null; then
		bench_case bwrap "${BWRAP[@]}" /bin/true
	else
		bench_note startup "bwrap missing: bubblewrap is not installed"
	fi
	bench_case moat-limits "$MOAT" run "${LIMITS[@]}" -- /bin/true
	bench_case moat-net-allow "$MOAT" run --net allow -- /bin/true
	bench_case moat-no-record-exec "$MOAT" run --no-record-exec -- /bin/true
	bench_run startup "$runs" 60
	bench_ratio startup "start-up moat / bwrap" moat bwrap "<=" 1.0
	bench_ratio startup "start-up all limits / none" moat-limits moat "<=" 1.15
	bench_ratio startup "start-up --net allow / --net none" moat-net-allow moat "<=" 2.0
	bench_ratio startup "start-up recording / --no-record-exec" moat moat-no-record-exec info -
	echo
done
