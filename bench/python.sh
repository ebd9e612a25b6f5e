#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# A compute-heavy Python job (about a second: a prime sieve, a dict workload
# and sha256 over generated data) in moat versus bare, interleaved, root and
# unprivileged. Issue 9 target: <= 1.05x bare.
set -euo pipefail
# shellcheck source=bench/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
bench_setup

JOB='
import hashlib
n = 6000000
sieve = bytearray([1]) * (n + 1)
sieve[0:2] = b"\0\0"
for i in range(2, int(n ** 0.5) + 1):
    if sieve[i]:
        sieve[i * i :: i] = bytes(len(range(i * i, n + 1, i)))
d = {}
for i in range(1000000):
    d[str(i)] = i * i
h = hashlib.sha256()
for i in range(20000):
    h.update(str(d[str(i)]).encode() * 8)
assert sum(sieve) == 412849
print(h.hexdigest())
'

if [ ! -x /usr/bin/python3 ]; then
	bench_note python "python3 missing: not installed"
	exit 0
fi
runs=$(bench_runs 16)
for BENCH_USER in $(bench_users); do
	bench_case "python bare" env -i PATH=/usr/bin:/bin LANG=C.UTF-8 /usr/bin/python3 -c "$JOB"
	bench_case "python moat" "$MOAT" run --quiet -- /usr/bin/python3 -c "$JOB"
	bench_run python "$runs" 120
	bench_ratio python "Python job moat / bare" "python moat" "python bare" "<=" 1.05
	echo
done
