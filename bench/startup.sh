#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Start-up of `/bin/true`: moat (default policy, every layer) vs bubblewrap set
# up for the same isolation vs bare, plus moat's variants (all limits, --net
# allow, --no-record-exec), all interleaved in one run, as root and as an
# unprivileged user. Targets: issue 2 (moat <= 1.0x bwrap), issue 4 (limits
# <= 1.15x none), issue 5 (--net allow <= 2x --net none), issue 14 (with a
# workspace: rw <= 1.0x bwrap binding it; the overlay reported beside it),
# issue 17 (--isolation gvisor beside `runsc do` with the same options, info).
set -euo pipefail
# shellcheck source=bench/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
bench_setup

LIMITS=(--cpus 1 --memory 512M --pids 256 --timeout 1m --disk 256M)

runs=$(bench_runs 60)
for BENCH_USER in $(bench_users); do
	bench_case bare /bin/true
	bench_case moat "$MOAT" run -- /bin/true
	if command -v bwrap >/dev/null; then
		bench_case bwrap "${BENCH_BWRAP[@]}" /bin/true
	else
		bench_note startup "bwrap missing: bubblewrap is not installed"
	fi
	bench_case moat-limits "$MOAT" run "${LIMITS[@]}" -- /bin/true
	bench_case moat-net-allow "$MOAT" run --net allow -- /bin/true
	bench_case moat-no-record-exec "$MOAT" run --no-record-exec -- /bin/true
	# issue 14: with a workspace, bound directly and as the default overlay
	# (its changes thrown away), against bubblewrap binding the same directory
	ws=$(bench_workdir "startup-ws-$BENCH_USER")
	bench_case moat-ws-rw "$MOAT" run --workspace "$ws:rw" -- /bin/true
	bench_case moat-ws-overlay "$MOAT" run --workspace "$ws" --apply never -- /bin/true
	if command -v bwrap >/dev/null; then
		bench_case bwrap-ws "${BENCH_BWRAP[@]}" --bind "$ws" "$ws" --chdir "$ws" /bin/true
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
	bench_ratio startup "start-up moat / bwrap" moat bwrap "<=" 1.0
	bench_ratio startup "start-up all limits / none" moat-limits moat "<=" 1.15
	bench_ratio startup "start-up --net allow / --net none" moat-net-allow moat "<=" 2.0
	bench_ratio startup "start-up recording / --no-record-exec" moat moat-no-record-exec info -
	bench_ratio startup "start-up workspace rw: moat / bwrap" moat-ws-rw bwrap-ws "<=" 1.0
	bench_ratio startup "start-up workspace overlay: moat / bwrap (rw bind)" moat-ws-overlay bwrap-ws info -
	bench_ratio startup "start-up --isolation gvisor / runsc do" moat-gvisor runsc-do info -
	bench_ratio startup "start-up --isolation gvisor / process" moat-gvisor moat info -
	echo
done
