#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Every moat_* symbol a network plugin leaves undefined must be exported by
# the moat executable (-rdynamic): otherwise dlopen fails at run time only.
#   scripts/check-plugin-syms.sh MOAT PLUGIN...
set -euo pipefail
exe=$1
shift
defined=$(nm -D --defined-only "$exe" | awk '{print $3}' | sort -u)
rc=0
for so in "$@"; do
	while read -r sym; do
		if ! grep -qxF "$sym" <<<"$defined"; then
			echo "$so needs $sym, which $exe does not export" >&2
			rc=1
		fi
	done < <(nm -D --undefined-only "$so" | awk '{print $2}' | grep '^moat_' || true)
done
exit $rc
