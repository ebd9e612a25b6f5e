#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Start-up of the gvisor level, two builds side by side (issue 17): BEFORE
# and AFTER (two moat executables) and `runsc do /bin/true` with the options
# moat uses, N rounds interleaved (one of each in turn), medians and p90 of
# the wall time, and the median CPU time (user + system of the command and
# every process it waited for, GNU time's rusage: on a shared machine the
# steadier ratio).
#   bench/gvisor_ab.sh BEFORE AFTER [N]   (as root and as the unprivileged user)
# Not a timed test; not in make check.
set -euo pipefail
before=$(realpath "${1:?usage: gvisor_ab.sh BEFORE AFTER [N]}")
after=$(realpath "${2:?usage: gvisor_ab.sh BEFORE AFTER [N]}")
n=${3:-20}
rl=()
[ "$(id -u)" = 0 ] || rl=(--rootless)
st=$(mktemp -d "${TMPDIR:-/tmp}/gvisor-ab.XXXXXX")
out="$st/times"
trap 'rm -rf "$st"' EXIT
cd /tmp
for _ in $(seq "$n"); do
	for c in before after runsc; do
		s=$(date +%s%N)
		case $c in
		before) cmd=("$before" run --quiet --isolation gvisor -- /bin/true) ;;
		after) cmd=("$after" run --quiet --isolation gvisor -- /bin/true) ;;
		runsc) cmd=(runsc --root "$st" --platform ptrace --network none --ignore-cgroups
			"${rl[@]}" "do" /bin/true) ;;
		esac
		/usr/bin/time -o "$st/cpu" -f "%U %S" "${cmd[@]}" >/dev/null 2>&1 ||
			echo "warning: $c failed" >&2
		e=$(date +%s%N)
		echo "$c $(((e - s) / 100000)) $(awk '{printf "%d", ($1 + $2) * 1000}' "$st/cpu")" >>"$out"
	done
done
for c in before after runsc; do
	cpu=$(grep "^$c " "$out" | awk '{print $3}' | sort -n | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}')
	grep "^$c " "$out" | awk '{print $2 / 10}' | sort -n |
		awk -v c="$c" -v cpu="$cpu" '{a[NR] = $1} END {printf "%s median %.1f ms p90 %.1f ms, CPU median %d ms (n=%d)\n", c, a[int((NR + 1) / 2)], a[int(NR * 0.9 + 0.5)], cpu, NR}'
done
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
