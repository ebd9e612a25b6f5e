#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The shipped moat reads only the environment variables listed here: the
# user's own environment (where its state goes, the terminal, who called
# sudo), never a switch that changes what moat enforces (issue 13, item 8).
# Test switches live in the test build only (-DMOAT_TESTING). Every source is
# preprocessed as the shipped build compiles it and each getenv() is checked:
# a literal name must be in ALLOWED, a computed one (a variable the user named
# with --env or --secret) must be in ALLOWED_COMPUTED (file: expression).
# Control: preprocessed as the test build, the same scan must find the test
# switch MOAT_TEST_LAYERS, or the scan itself is broken.
#   scripts/check-env.sh "CC CPPFLAGS..." SRC...
set -euo pipefail
read -r -a cc <<<"$1"
shift
ALLOWED=" HOME XDG_STATE_HOME XDG_CONFIG_HOME XDG_CACHE_HOME XDG_RUNTIME_DIR TERM LANG SUDO_UID SUDO_GID "
ALLOWED_COMPUTED=(
	"src/supervisor/spawn.c: p->env[i].name"     # --env NAME: copy the caller's NAME
	"src/proxy/secrets_source.c: def->from" # --secret NAME@HOST: the real value
)

# calls SRC [FLAGS...]: "literal NAME" / "computed EXPR" per getenv call
calls() {
	local src=$1
	shift
	"${cc[@]}" "$@" -E -P "$src" 2>/dev/null | grep -v 'extern' |
		grep -oE '\b(secure_)?getenv *\([^)]*\)' |
		sed -E 's/^(secure_)?getenv *\( *//; s/ *\)$//' |
		while read -r arg; do
			case $arg in
			\"*\") echo "literal ${arg//\"/}" ;;
			*) echo "computed $arg" ;;
			esac
		done
}

rc=0
for src in "$@"; do
	while read -r kind what; do
		case $kind in
		literal)
			[[ $ALLOWED == *" $what "* ]] && continue
			echo "$src: the shipped moat reads \$$what; only the test build may have switches" \
				"(-DMOAT_TESTING), or add the user's own variable to scripts/check-env.sh" >&2
			rc=1
			;;
		computed)
			ok=0
			for a in "${ALLOWED_COMPUTED[@]}"; do [ "$a" = "$src: $what" ] && ok=1; done
			[ $ok = 1 ] && continue
			echo "$src: getenv($what): a computed name not listed in scripts/check-env.sh" >&2
			rc=1
			;;
		esac
	done < <(calls "$src")
done

# the control: the test build's switch is visible to the same scan
ctl=0
for src in $(grep -l MOAT_TESTING "$@" || true); do
	if calls "$src" -DMOAT_TESTING | grep -qx 'literal MOAT_TEST_LAYERS'; then ctl=1; fi
done
if [ $ctl = 0 ]; then
	echo "check-env: the scan does not see MOAT_TEST_LAYERS in the test build: it is broken" >&2
	rc=1
fi
exit $rc
