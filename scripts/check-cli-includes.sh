#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The CLI is thin: a file in src/cli includes only the public header
# moat/moat.h, the CLI's own headers (cli/NAME.h of a file in src/cli) and
# system headers; never a library-internal one (lib/, proxy/, shared/,
# compat/, by any spelling: "lib/x.h", <shared/x.h>, "../lib/x.h", "x.h"
# found next to it), nor a computed #include. Issue 14.
#   scripts/check-cli-includes.sh [FILE...]   (default: src/cli/*.[ch])
#   scripts/check-cli-includes.sh --control    (the rule must catch each bad
#                                               spelling and pass a good file)
set -euo pipefail
cd "$(dirname "$0")/.."

# check FILE CLI_DIR: one line per offending include, exit 1 if any
check() {
	local f=$1 dir=$2 bad=0 line inc
	while IFS= read -r line; do
		# "#  include" and "# include" are includes too
		inc=$(sed -E 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*//' <<<"$line")
		case $inc in
		'"moat/moat.h"'* | '<moat/moat.h>'*) continue ;;
		'"cli/'*)
			inc=${inc#\"cli/}
			inc=${inc%%\"*}
			if [[ $inc != */* && $inc == *.h && -f $dir/$inc ]]; then
				continue
			fi
			;;
		'<'*)
			inc=${inc#<}
			inc=${inc%%>*}
			# a system header, unless it names one of moat's own trees
			if [[ ! $inc =~ ^(\.\./)*(lib|proxy|shared|compat|cli|moat|src|policy|supervisor|sandbox|kernel|limits|network|workspace|audit|mcp|doctor|api|oci)/ ]]; then
				continue
			fi
			;;
		esac
		echo "$f: $line: src/cli includes only moat/moat.h and its own cli/*.h" >&2
		bad=1
	done < <(grep -E '^[[:space:]]*#[[:space:]]*include' "$f" || true)
	return $bad
}

if [ "${1:-}" = --control ]; then
	t=$(mktemp -d)
	trap 'rm -rf "$t"' EXIT
	printf '#include "cli/cli.h"\n' >"$t/cli.h"
	printf '#include <stdio.h>\n#include "moat/moat.h"\n#include "cli/cli.h"\n' >"$t/good.c"
	check "$t/good.c" "$t" 2>/dev/null || {
		echo "check-cli-includes: control: a good file is refused" >&2
		exit 1
	}
	for spelling in '"supervisor/run.h"' '<shared/macro.h>' '"../lib/run.h"' '"proxy/tls.h"' \
		'"compat/landlock.h"' '"run.h"' '"cli/../lib/run.h"' '"cli/none.h"' ' "supervisor/run.h"' \
		'INTERNAL_HEADER' '<../shared/macro.h>' '<src/supervisor/run.h>' '<policy/policy.h>'; do
		printf '#include <stdio.h>\n#  include %s\n' "$spelling" >"$t/bad.c"
		if check "$t/bad.c" "$t" 2>/dev/null; then
			echo "check-cli-includes: control: #include $spelling is not caught" >&2
			exit 1
		fi
	done
	exit 0
fi

[ $# -gt 0 ] || set -- src/cli/*.c src/cli/*.h
rc=0
for f in "$@"; do
	check "$f" "$(dirname "$f")" || rc=1
done
exit $rc
