#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Builds every fuzz target with libFuzzer (clang) and fuzzes each for
# FUZZ_SECONDS, starting from its committed corpus. New crashes are left as
# crash-* files: fix them and commit them into fuzz/corpus/<target>/.
set -euo pipefail
cd "$(dirname "$0")/.."
O=${O:-build-fuzz}
secs=${FUZZ_SECONDS:-30}
mkdir -p "$O"
libsrc=$(ls src/shared/*.c src/lib/*.c src/proxy/*.c 2>/dev/null)
# shellcheck disable=SC2054
flags=(-g -O1 -fsanitize=fuzzer,address,undefined -D_GNU_SOURCE -Iinclude -Isrc -std=gnu17)
# shellcheck disable=SC2086
libs=$(pkg-config --libs jansson libseccomp libnftables openssl)
rc=0
for f in fuzz/fuzz_*.c; do
	t=$(basename "$f" .c)
	echo "== $t (${secs}s)"
	# shellcheck disable=SC2086
	clang "${flags[@]}" -o "$O/$t" "$f" $libsrc $libs
	mkdir -p "$O/corpus-$t"
	if ! "$O/$t" -max_total_time="$secs" -artifact_prefix="$O/$t-" "$O/corpus-$t" "fuzz/corpus/${t#fuzz_}"; then
		echo "FAIL: $t found a crash (see $O/$t-crash-*)"
		rc=1
	fi
done
exit $rc
