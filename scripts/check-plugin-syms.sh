#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Every symbol a network plugin leaves undefined must be exported by the moat
# executable (-rdynamic: moat's own moat_* functions) or by a library the
# plugin itself links: otherwise dlopen fails at run time only.
#   scripts/check-plugin-syms.sh MOAT PLUGIN...
set -euo pipefail
exe=$1
shift
rc=0
for so in "$@"; do
	have=$(
		nm -D --defined-only "$exe" | awk '{print $3}'
		ldd "$so" | awk '$2 == "=>" && $3 ~ /^\// {print $3}' | while read -r lib; do
			nm -D --defined-only "$lib" | awk '{print $3}'
		done
	)
	have=$(sed 's/@.*//' <<<"$have" | sort -u)
	while read -r sym; do
		if ! grep -qxF "$sym" <<<"$have"; then
			echo "$so needs $sym, which neither $exe nor the plugin's libraries export" >&2
			rc=1
		fi
	done < <(nm -D --undefined-only "$so" | awk '$1 == "U" {print $2}' | sed 's/@.*//' | sort -u)
done
exit $rc
