#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# No call cycle among the lifecycle and the layers (issue 14): from the
# compiled objects, file A -> file B when A.o uses a symbol B.o defines; the
# graph of the files below must be acyclic (tsort finds any loop).
#   scripts/check-callgraph.sh OBJDIR   (e.g. build/pic: every NAME.o below it)
#   scripts/check-callgraph.sh --control (the check must catch a loop)
set -euo pipefail

# The lifecycle (spawn, proc, run, backend_ns), the init (sandbox*,
# init_serve, hook_*), the layers' table and modules (supervise*, layer_*)
# and what they call (restrict, observe, stdio_relay).
files=(spawn proc run backend_ns sandbox sandbox_fds init_serve hook_caps hook_net
	hook_restrict supervise supervise_limits supervise_net layer_view layer_mount
	layer_identity layer_limits layer_landlock layer_seccomp layer_network
	layer_credentials layer_workspace layer_audit restrict observe stdio_relay netns_send)

# acyclic: reads "A B" edges on stdin; prints the loop and fails if any
acyclic() {
	local out
	out=$(tsort 2>&1 >/dev/null) || true
	if [ -n "$out" ]; then
		echo "check-callgraph: call cycle:"
		sed 's/^/  /' <<<"$out"
		return 1
	fi
}

if [ "${1:-}" = --control ]; then
	if printf 'spawn proc\nproc supervise\nsupervise spawn\n' | acyclic >/dev/null; then
		echo "check-callgraph: control failed: a three-file loop was not found"
		exit 1
	fi
	printf 'spawn proc\nproc supervise\n' | acyclic
	exit 0
fi

dir=${1:?usage: check-callgraph.sh OBJDIR}
declare -A def obj
for f in "${files[@]}"; do
	o=$(find "$dir" -name "$f.o" -print -quit)
	if [ -z "$o" ]; then
		echo "check-callgraph: no $f.o below $dir (renamed? update the list)"
		exit 1
	fi
	obj[$f]=$o
	while read -r s; do def[$s]=$f; done < <(nm --defined-only -g "$o" | awk '{print $3}')
done
for f in "${files[@]}"; do
	while read -r s; do
		t=${def[$s]:-}
		if [ -n "$t" ] && [ "$t" != "$f" ]; then echo "$f $t"; fi
	done < <(nm -u "${obj[$f]}" | awk '{print $2}')
done | sort -u | acyclic
