#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Start-up of the vm isolation level (issue 17), split in three parts:
#   host   moat's set-up, QEMU's start, the firmware and the kernel's load
#          (wall time before the guest's clock starts), and the teardown;
#   kernel the guest kernel's boot up to its PID 1 (PID 1's start time);
#   init   moat's guest init up to the command (modules, 9p, mounts).
# Guest clocks are read by the command itself: /proc/uptime, and field 22 of
# /proc/1/stat (PID 1's start in clock ticks). Run as the invoking user;
# vm_accel any (TCG where KVM cannot run a guest). Not in bench/run-all.sh:
# under TCG one run takes 15-60 s.
#   bench/vm.sh [RUNS]   (default 3)
set -euo pipefail
MOAT=${MOAT:-$(dirname "$0")/../build/moat}
runs=${1:-3}
hz=$(getconf CLK_TCK)
printf '%-4s %9s %9s %9s %9s\n' run total_s host_s kernel_s init_s
for i in $(seq "$runs"); do
	t0=$(date +%s.%N)
	out=$("$MOAT" run --quiet --isolation vm --vm-accel any -- \
		/bin/sh -c 'cut -d" " -f1 /proc/uptime; cut -d" " -f22 /proc/1/stat')
	t1=$(date +%s.%N)
	up=$(echo "$out" | sed -n 1p)
	start=$(echo "$out" | sed -n 2p)
	awk -v i="$i" -v t0="$t0" -v t1="$t1" -v up="$up" -v st="$start" -v hz="$hz" 'BEGIN {
		total = t1 - t0; kernel = st / hz; init = up - kernel
		printf "%-4s %9.2f %9.2f %9.2f %9.2f\n", i, total, total - up, kernel, init }'
done
