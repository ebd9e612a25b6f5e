#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Start-up of `/bin/true`: moat (default policy, every layer) vs bubblewrap
# set up for the same isolation (bench_bwrap_same in lib.sh, checked once per
# user with bench/isocheck before timing) and the minimal bubblewrap (info)
# vs bare, plus moat's variants (all limits, --net allow, --no-record-exec),
# all interleaved in one run, as root and as an unprivileged user. Targets:
# issues 2 and 14 (moat <= 1.0x the bubblewrap of the same isolation), issue 4
# (limits <= 1.15x none), issue 5 (--net allow <= 2x --net none), issue 14
# (with a workspace: rw <= 1.0x the same bubblewrap binding it; the overlay
# and the minimal bubblewrap reported beside it), issue 17 (--isolation
# gvisor beside `runsc do` with the same options, info).
set -euo pipefail
# shellcheck source=bench/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
bench_setup

LIMITS=(--cpus 1 --memory 512M --pids 256 --timeout 1m --disk 256M)

# isocheck_compare WS: runs bench/isocheck in moat (--workspace WS:rw), in the
# bubblewrap command of the same isolation and in the minimal one, and prints
# whether moat and the matched command agree (lines starting with "info"
# are not compared; "dev core l" is bubblewrap's --dev's own symlink to
# /proc/kcore, absent here, and cannot be left out). The minimal bubblewrap
# is the positive control: the comparison must see it differ.
SAME_ALLOWED='^dev core l$'
isocheck_compare() {
	local ws=$1 d=$BENCH_STAGE/isocheck-$BENCH_USER n_same n_min
	mkdir -p "$d"
	cp "$ISOCHECK" "$ws/isocheck"
	chown "$BENCH_USER:" "$ws/isocheck" 2>/dev/null || true
	bench_as_user "$MOAT" run --workspace "$ws:rw" -- "$ws/isocheck" >"$d/moat" 2>/dev/null ||
		echo "  self-check: moat's isocheck failed" >&2
	bench_as_user "$TIMER" -x "${BENCH_BWRAP_SAME[@]}" --bind "$ws" "$ws" \
		"${BENCH_BWRAP_SAME_END[@]}" --chdir "$ws" "$ws/isocheck" >"$d/same" 2>/dev/null ||
		echo "  self-check: the matched bubblewrap's isocheck failed" >&2
	bench_as_user "${BENCH_BWRAP[@]}" --bind "$ws" "$ws" --chdir "$ws" "$ws/isocheck" \
		>"$d/min" 2>/dev/null || echo "  self-check: the minimal bubblewrap's isocheck failed" >&2
	rm -f "$ws/isocheck"
	for f in moat same min; do grep -v '^info ' "$d/$f" | grep -Ev "$SAME_ALLOWED" >"$d/$f.cmp" || true; done
	n_same=$(diff "$d/moat.cmp" "$d/same.cmp" | grep -c '^[<>]' || true)
	n_min=$(diff "$d/moat.cmp" "$d/min.cmp" | grep -c '^[<>]' || true)
	local facts seccomp_denied
	facts=$(wc -l <"$d/moat.cmp")
	seccomp_denied=$(grep -c '^syscall .* E' "$d/moat.cmp" || true)
	if [ -s "$d/moat.cmp" ] && [ "$n_same" -eq 0 ]; then
		bench_note startup "self-check: moat and bwrap (same isolation) agree on all $facts facts ($seccomp_denied syscalls refused alike, /proc masks, /etc and /dev names; $(grep '^proc kcore' "$d/moat.cmp"), $(grep -h '^info mounts' "$d/moat" "$d/same" | awk '{ printf "%s%s", s, $3; s = "/" }') mounts)"
	else
		bench_note startup "self-check: MISMATCH: moat and bwrap (same isolation) differ in $n_same lines ($d)"
		diff "$d/moat.cmp" "$d/same.cmp" | head -20 | sed 's/^/    /' || true
	fi
	if [ "$n_min" -gt 0 ]; then
		bench_note startup "self-check positive control: the minimal bwrap differs from moat in $n_min lines"
	else
		bench_note startup "self-check positive control FAILED: the minimal bwrap looks like moat"
	fi
}

runs=$(bench_runs 60)
have_same=0
if command -v bwrap >/dev/null && bench_bwrap_same; then
	have_same=1
fi
for BENCH_USER in $(bench_users); do
	echo "startup as $BENCH_USER: load $(uptime | sed 's/.*load average: //')"
	ws=$(bench_workdir "startup-ws-$BENCH_USER")
	[ "$have_same" = 1 ] && isocheck_compare "$ws"
	bench_case bare /bin/true
	bench_case moat "$MOAT" run -- /bin/true
	if command -v bwrap >/dev/null; then
		bench_case bwrap "${BENCH_BWRAP[@]}" /bin/true
	else
		bench_note startup "bwrap missing: bubblewrap is not installed"
	fi
	if [ "$have_same" = 1 ]; then
		bench_case bwrap-same "${BENCH_BWRAP_SAME[@]}" "${BENCH_BWRAP_SAME_END[@]}" \
			--chdir /home/agent /bin/true
	fi
	bench_case moat-limits "$MOAT" run "${LIMITS[@]}" -- /bin/true
	bench_case moat-net-allow "$MOAT" run --net allow -- /bin/true
	bench_case moat-no-record-exec "$MOAT" run --no-record-exec -- /bin/true
	# issue 14: with a workspace, bound directly and as the default overlay
	# (its changes thrown away), against bubblewrap binding the same directory
	bench_case moat-ws-rw "$MOAT" run --workspace "$ws:rw" -- /bin/true
	bench_case moat-ws-overlay "$MOAT" run --workspace "$ws" --apply never -- /bin/true
	if command -v bwrap >/dev/null; then
		bench_case bwrap-ws "${BENCH_BWRAP[@]}" --bind "$ws" "$ws" --chdir "$ws" /bin/true
	fi
	if [ "$have_same" = 1 ]; then
		bench_case bwrap-same-ws "${BENCH_BWRAP_SAME[@]}" --bind "$ws" "$ws" \
			"${BENCH_BWRAP_SAME_END[@]}" --chdir "$ws" /bin/true
	fi
	# issue 17: the gvisor level, and runsc's own `do` with moat's options
	if command -v runsc >/dev/null; then
		gvst=$(bench_workdir "startup-runsc-$BENCH_USER")
		rl=()
		[ "$BENCH_USER" = root ] || rl=(--rootless)
		bench_case moat-gvisor "$MOAT" run --isolation gvisor -- /bin/true
		bench_case runsc-do runsc --root "$gvst" --platform ptrace --network none \
			--ignore-cgroups "${rl[@]}" "do" /bin/true
	else
		bench_note startup "gvisor missing: runsc is not installed"
	fi
	bench_run startup "$runs" 90
	bench_ratio startup "start-up moat / bwrap (same isolation)" moat bwrap-same "<=" 1.0
	bench_ratio startup "start-up moat / bwrap (minimal)" moat bwrap info -
	bench_ratio startup "start-up bwrap same isolation / minimal" bwrap-same bwrap info -
	bench_ratio startup "start-up all limits / none" moat-limits moat "<=" 1.15
	bench_ratio startup "start-up --net allow / --net none" moat-net-allow moat "<=" 2.0
	bench_ratio startup "start-up recording / --no-record-exec" moat moat-no-record-exec info -
	bench_ratio startup "start-up workspace rw: moat / bwrap (same isolation)" moat-ws-rw bwrap-same-ws "<=" 1.0
	bench_ratio startup "start-up workspace rw: moat / bwrap (minimal)" moat-ws-rw bwrap-ws info -
	bench_ratio startup "start-up workspace overlay: moat / bwrap (same, rw bind)" moat-ws-overlay bwrap-same-ws info -
	bench_ratio startup "start-up workspace overlay: moat / bwrap (minimal, rw bind)" moat-ws-overlay bwrap-ws info -
	bench_ratio startup "start-up --isolation gvisor / runsc do" moat-gvisor runsc-do info -
	bench_ratio startup "start-up --isolation gvisor / process" moat-gvisor moat info -
	echo
done
