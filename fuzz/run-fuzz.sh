#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Runs every fuzz target for FUZZ_SECONDS (libFuzzer, ASan + UBSan), starting
# from its committed corpus fuzz/corpus/<name>/. The targets are built by
# `make fuzz` (BUILD=fuzz: one instrumented library, each target linked
# against it) into $O/fuzz/. Every fuzz/fuzz_*.c is a target: one that was not
# built fails. New inputs found go to $O/corpus/<name>/ (not the repository);
# a crash, leak, timeout or out-of-memory fails with the path of the input
# that caused it: fix the bug and commit the input into fuzz/corpus/<name>/.
# FUZZ_TARGETS="name ..." limits the run to those targets (development).
set -euo pipefail
cd "$(dirname "$0")/.."
O=${O:-build-fuzz}
secs=${FUZZ_SECONDS:-30}
mkdir -p "$O/artifacts"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:symbolize=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
rc=0
n=0
failed=()
start=$(date +%s)
for src in fuzz/fuzz_*.c; do
	t=$(basename "$src" .c)
	name=${t#fuzz_}
	# FUZZ_TARGETS="http1 dns": only these (for development; CI runs all)
	if [ -n "${FUZZ_TARGETS:-}" ] && [[ " $FUZZ_TARGETS " != *" $name "* ]]; then
		continue
	fi
	bin="$O/fuzz/$t"
	n=$((n + 1))
	if [ ! -x "$bin" ]; then
		echo "FAIL: $t was not built ($bin; make fuzz builds every fuzz/fuzz_*.c)"
		failed+=("$t (not built)")
		rc=1
		continue
	fi
	corpus=()
	[ -d "fuzz/corpus/$name" ] && corpus=("fuzz/corpus/$name")
	mkdir -p "$O/corpus/$name"
	rm -f "$O/artifacts/$t-"*
	echo "== $t (${secs}s)"
	log="$O/artifacts/$t.log"
	if "$bin" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
		-artifact_prefix="$O/artifacts/$t-" "$O/corpus/$name" "${corpus[@]}" >"$log" 2>&1; then
		grep -E '^stat::number_of_executed_units|^#[0-9]+.*DONE' "$log" | tail -2 || true
	else
		tail -60 "$log"
		art=""
		for a in "$O/artifacts/$t-"*; do [ -e "$a" ] && art="$art${art:+ }$a"; done
		echo "FAIL: $t found a crash; the input: ${art:-(none written, see $log)}"
		[ -n "$art" ] && echo "      reproduce: $bin $art"
		failed+=("$t")
		rc=1
	fi
done
echo "fuzz: $n target(s), ${secs}s each, $(($(date +%s) - start))s in all; failed: ${failed[*]:-none}"
exit $rc
